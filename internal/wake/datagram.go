package wake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// A peer wake-up is one UDP datagram:
//
//	"LHW1"   4 bytes
//	kind     1 byte: kindWake or kindHello
//	sent     8 bytes: the sender's clock, Unix nanoseconds, big-endian
//	nonce    8 random bytes
//	channel  1 byte of length, then the tables' channel
//	payload  the names (Payload), up to the end less the MAC
//	MAC      32 bytes: HMAC-SHA256 of everything before, under the
//	         receiver's key
//
// A receiver drops, silently, a datagram that is malformed, whose MAC is
// not its key's, that names another channel, that was sent more than
// MaxAge before or after its own clock says, or whose nonce it has seen
// within MaxAge (one datagram goes to each address a peer advertises).
// Only a process that read the receiver's key from its session row can
// send one it accepts; a replay is only accepted within MaxAge, to the
// same receiver, and only moves one of its reads, as any wake-up does.

// Datagram kinds.
const (
	kindWake  byte = 1 // the payload names the leases concerned
	kindHello byte = 2 // the sender started listening: read the peers again
)

const (
	magic = "LHW1"
	// keyLen is the length of a key.
	keyLen = 32
	// macLen is the length of the MAC.
	macLen = sha256.Size
	// headerLen is the length of the fixed part before the channel.
	headerLen = len(magic) + 1 + 8 + 8 + 1
	// maxDatagram bounds a datagram, so that it fits in one packet on
	// Ethernet (1500 bytes less the IPv6 and UDP headers) and is never
	// fragmented. Names that do not fit are sent as "any".
	maxDatagram = 1400
	// MaxAge is the most a datagram's sending time may differ from the
	// receiver's clock: the clocks of the hosts must agree this well.
	MaxAge = 30 * time.Second
)

// datagram is one peer wake-up.
type datagram struct {
	kind    byte
	sent    time.Time
	nonce   [8]byte
	channel string
	payload string
}

// seal encodes d and appends its MAC under key. A payload that would make
// it longer than maxDatagram is left out: "any".
func (d datagram) seal(key []byte) []byte {
	payload := d.payload
	if headerLen+len(d.channel)+len(payload)+macLen > maxDatagram {
		payload = ""
	}
	b := make([]byte, 0, headerLen+len(d.channel)+len(payload)+macLen)
	b = append(b, magic...)
	b = append(b, d.kind)
	b = binary.BigEndian.AppendUint64(b, uint64(d.sent.UnixNano()))
	b = append(b, d.nonce[:]...)
	b = append(b, byte(len(d.channel)))
	b = append(b, d.channel...)
	b = append(b, payload...)
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return m.Sum(b)
}

// open checks b, received at now, against key and channel, and decodes
// it; ok is false when it is to be dropped.
func open(b, key []byte, channel string, now time.Time) (d datagram, ok bool) {
	if len(b) < headerLen+macLen || len(b) > maxDatagram || string(b[:len(magic)]) != magic {
		return d, false
	}
	body, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), sum) {
		return d, false
	}
	d.kind = body[len(magic)]
	d.sent = time.Unix(0, int64(binary.BigEndian.Uint64(body[len(magic)+1:])))
	copy(d.nonce[:], body[len(magic)+9:])
	n := int(body[headerLen-1])
	if len(body) < headerLen+n {
		return d, false
	}
	d.channel = string(body[headerLen : headerLen+n])
	d.payload = string(body[headerLen+n:])
	if d.channel != channel || d.sent.Before(now.Add(-MaxAge)) || d.sent.After(now.Add(MaxAge)) {
		return d, false
	}
	return d, d.kind == kindWake || d.kind == kindHello
}

// maxNonces bounds the nonces remembered: past it, the ones older than
// MaxAge are forgotten, and all of them if that is not enough (a replay
// then costs one read more).
const maxNonces = 4096

// nonces remembers the nonces of the datagrams accepted within MaxAge.
// Only the receiving goroutine uses it.
type nonces map[[8]byte]time.Time

func newNonces() nonces { return make(nonces) }

// first records nonce, of a datagram sent at sent, and reports whether it
// is new.
func (n nonces) first(nonce [8]byte, sent time.Time) bool {
	if _, ok := n[nonce]; ok {
		return false
	}
	if len(n) >= maxNonces {
		cutoff := time.Now().Add(-MaxAge)
		for k, t := range n {
			if t.Before(cutoff) {
				delete(n, k)
			}
		}
		if len(n) >= maxNonces {
			clear(n)
		}
	}
	n[nonce] = sent
	return true
}
