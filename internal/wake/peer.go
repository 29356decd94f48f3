package wake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Peer wakes the processes on one set of tables over UDP, whatever the
// database: each process binds a UDP socket and advertises where it
// listens, and a random key, in the session rows it creates (Directory).
// A release, and a pool change, is sent as one datagram to every other
// process whose session row is live, or expired less than
// PeerConfig.Grace ago: a follower that only polls renews no session, and
// its row must still count while it campaigns. Each datagram is
// authenticated with HMAC-SHA256 under the receiver's key (datagram.go),
// so only a process that can read the session table can wake another.
//
// The peers are read from the session table at most every
// PeerConfig.Refresh, or sooner once a process that starts listening has
// said so (a hello): a process that started since the last read is woken
// at its own poll at worst. A process does not send to itself.
type Peer struct {
	db  Database
	dir Directory
	cfg PeerConfig
	key []byte // this process's key, 32 random bytes
	hex string // key in hex, as its session rows carry it

	mu   sync.Mutex
	conn *net.UDPConn // the bound socket, nil while none
	adv  Advert       // of conn
	done bool         // Listen's context ended: bind no more

	peers peerCache
}

// PeerConfig tunes a Peer.
type PeerConfig struct {
	// Listen is the UDP address to receive on, host:port. An empty host
	// binds every interface, port 0 an ephemeral port. Defaults to ":0".
	Listen string
	// Advertise lists where other processes send to reach this one: IP
	// addresses, with a port or without one (then the bound port). Nil
	// advertises the bound address when Listen names an IP, and every
	// unicast address of the host's interfaces otherwise (HostAddrs).
	Advertise []string
	// Grace is how long after its expiry a session row is still sent to.
	Grace time.Duration
	// Refresh is the longest the peers read from the session table are
	// used before they are read again.
	Refresh time.Duration
}

// Advert is what a session row carries of how to wake its process.
type Advert struct {
	// Addrs is where its process listens (encodeAddrs); "" for nowhere.
	Addrs string
	// Key is the key its datagrams are authenticated with, in hex.
	Key string
}

// Directory is the store's side of the peer wake-ups: the session rows
// carry each process's Advert.
type Directory interface {
	// OnSession sets fn to give the Advert that each session row this
	// process creates from then on carries. It is set before the first
	// session.
	OnSession(fn func() Advert)
	// Peers reads the adverts of the session rows of the tables that are
	// live, or expired less than grace ago, by the database clock.
	Peers(ctx context.Context, grace time.Duration) ([]Advert, error)
}

// sendTimeout bounds the read of the peers and the datagrams of a
// release, which the store reports without a context (OnRelease).
const sendTimeout = time.Second

// errPeerClosed is returned by bind once listening has ended for good.
var errPeerClosed = errors.New("leasehold: the peer wake-up socket is closed")

// NewPeer returns the peer transport of db, whose session rows dir
// writes and reads. It does no I/O: the socket is bound by the first
// session row created or the first Listen, whichever comes first, and
// kept until Listen's context ends. The releases of db are sent through
// it from then on.
func NewPeer(db Database, dir Directory, cfg PeerConfig) *Peer {
	key := make([]byte, keyLen)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	p := &Peer{db: db, dir: dir, cfg: cfg, key: key, hex: hex.EncodeToString(key)}
	p.peers.host = hostToken()
	db.OnRelease(func(names []string) {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		_ = p.send(ctx, kindWake, names)
	})
	dir.OnSession(p.advert)
	return p
}

// advert binds the socket if need be and returns its Advert; only the key
// when it cannot be bound, so that nothing is sent to this process.
func (p *Peer) advert() Advert {
	if _, err := p.bind(); err != nil {
		return Advert{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.adv
}

// bind returns the bound socket, binding it first if there is none.
func (p *Peer) bind() (*net.UDPConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		return p.conn, nil
	}
	if p.done {
		return nil, errPeerClosed
	}
	listen := p.cfg.Listen
	if listen == "" {
		listen = ":0"
	}
	laddr, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return nil, fmt.Errorf("peer wake-ups: listen address %q: %w", listen, err)
	}
	conn, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("peer wake-ups: bind %q: %w", listen, err)
	}
	bound := conn.LocalAddr().(*net.UDPAddr)
	addrs, err := advertised(p.cfg.Advertise, laddr, bound.Port)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	p.conn = conn
	p.adv = Advert{Addrs: encodeAddrs(p.peers.host, addrs), Key: p.hex}
	return conn, nil
}

// unbind closes conn, once its Listen has returned; for good when ctx is
// done.
func (p *Peer) unbind(ctx context.Context, conn *net.UDPConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = conn.Close()
	if p.conn == conn {
		p.conn = nil
	}
	if ctx.Err() != nil {
		p.done = true
	}
}

// Listen binds this process's socket, if the creation of a session row
// has not already, tells the other processes to read the peers again, so
// that they find this one, and hands the wake-ups that arrive to deliver
// until ctx is done; up is called in between.
// Datagrams that fail the checks of datagram.go are dropped silently.
func (p *Peer) Listen(ctx context.Context, deliver func(names []string), up func()) error {
	conn, err := p.bind()
	if err != nil {
		return err
	}
	defer p.unbind(ctx, conn)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	// The hello is sent before up, so that its read of the peers is over
	// once listening is reported; what arrives meanwhile waits in the
	// socket's buffer.
	hctx, cancel := context.WithTimeout(ctx, sendTimeout)
	p.peers.markStale()
	_ = p.send(hctx, kindHello, nil)
	cancel()
	up()
	channel := p.db.Channel()
	seen := newNonces()
	buf := make([]byte, maxDatagram+1)
	for {
		n, _, err := conn.ReadFromUDP(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		d, ok := open(buf[:n], p.key, channel, time.Now())
		if !ok || !seen.first(d.nonce, d.sent) {
			continue
		}
		switch d.kind {
		case kindWake:
			deliver(Names(d.payload))
		case kindHello:
			p.peers.markStale()
		}
	}
}

// Notify wakes the other processes on the tables for names (nil means
// any). A peer that cannot be reached is skipped; the error is the first
// failure, to be logged, after every peer was tried.
func (p *Peer) Notify(ctx context.Context, names []string) error {
	return p.send(ctx, kindWake, names)
}

// send sends one datagram of kind to every peer, the peers read again
// first when they are stale.
func (p *Peer) send(ctx context.Context, kind byte, names []string) error {
	targets, err := p.peers.get(ctx, p)
	if len(targets) == 0 {
		return err
	}
	conn, lerr := net.ListenUDP("udp", nil)
	if lerr != nil {
		return fmt.Errorf("peer wake-ups: open a socket to send: %w", lerr)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	d := datagram{kind: kind, sent: time.Now(), channel: p.db.Channel(), payload: Payload(names)}
	if _, err := rand.Read(d.nonce[:]); err != nil {
		return err
	}
	for _, t := range targets {
		msg := d.seal(t.key)
		for _, a := range t.addrs {
			if _, werr := conn.WriteToUDP(msg, a); werr != nil && err == nil && ctx.Err() == nil {
				err = fmt.Errorf("peer wake-ups: send to %v: %w", a, werr)
			}
		}
	}
	return err
}

// target is a peer to send to: its key, and where it listens.
type target struct {
	key   []byte
	addrs []*net.UDPAddr
}

// peerCache holds the peers read from the session table.
type peerCache struct {
	host string // this host's token (encodeAddrs)

	read sync.Mutex // held while the peers are read

	mu      sync.Mutex
	targets []target
	at      time.Time // when they were read; zero: never, or stale
	stale   uint64    // counts markStale
}

// markStale makes the next send read the peers again.
func (c *peerCache) markStale() {
	c.mu.Lock()
	c.at = time.Time{}
	c.stale++
	c.mu.Unlock()
}

// current returns the peers and whether they are fresh.
func (c *peerCache) current(refresh time.Duration) ([]target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.targets, !c.at.IsZero() && time.Since(c.at) < refresh
}

// get returns the peers of p, read again when they are stale. When
// reading fails it returns the ones it had, and the error.
func (c *peerCache) get(ctx context.Context, p *Peer) ([]target, error) {
	if t, fresh := c.current(p.cfg.Refresh); fresh {
		return t, nil
	}
	c.read.Lock()
	defer c.read.Unlock()
	if t, fresh := c.current(p.cfg.Refresh); fresh {
		return t, nil // read meanwhile by another send
	}
	c.mu.Lock()
	start, stale := time.Now(), c.stale
	c.mu.Unlock()
	adverts, err := p.dir.Peers(ctx, p.cfg.Grace)
	if err != nil {
		t, _ := c.current(p.cfg.Refresh)
		return t, fmt.Errorf("peer wake-ups: read the peers: %w", err)
	}
	targets := make([]target, 0, len(adverts))
	for _, a := range adverts {
		if a.Key == p.hex {
			continue // this process
		}
		key, err := hex.DecodeString(a.Key)
		if err != nil || len(key) != keyLen {
			continue
		}
		if addrs := decodeAddrs(a.Addrs, c.host); len(addrs) > 0 {
			targets = append(targets, target{key: key, addrs: addrs})
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.targets = targets
	if c.stale == stale {
		// A hello that arrived during the read leaves them stale.
		c.at = start
	}
	return targets, nil
}
