package wake

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Peer wakes the processes on one set of tables over UDP, whatever the
// database: each process binds a UDP socket and, while it listens, keeps
// a row in the session table that advertises where it listens and a
// random key (Directory): a follower that only reads holds no session of
// its own. A release, and a pool change, is sent as one datagram to every
// process whose row is live, or expired less than PeerConfig.Grace ago,
// this one included, as PostgreSQL's notifications are. Each datagram is
// authenticated with HMAC-SHA256 under the receiver's key (datagram.go),
// so only a process that can read the session table can wake another.
//
// The peers are read from the session table at most every
// PeerConfig.Refresh, or sooner once a process that starts listening has
// said so (a hello): a process that started since the last read is woken
// at its own poll at worst. A hello whose own read of the peers failed is
// sent again until one has read them, and so is a wake-up whose read
// failed, to every peer (lateWakes). A Peer whose Listen is never called
// only sends, and does not send late wake-ups again.
type Peer struct {
	db  Database
	dir Directory
	cfg PeerConfig
	key []byte // this process's key, 32 random bytes
	hex string // key in hex, as its row carries it

	peers peerCache
	late  lateWakes
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
	// Holder is the holder string the advertising row carries.
	Holder string
	// TTL is how long the advertising row lives after each write; it is
	// written again every three quarters of it.
	TTL time.Duration
	// Grace is how long after its expiry a row is still sent to.
	Grace time.Duration
	// Refresh is the longest the peers read from the session table are
	// used before they are read again.
	Refresh time.Duration
}

// Advert is what a row of the session table carries of how to wake its
// process.
type Advert struct {
	// Addrs is where its process listens (encodeAddrs); "" for nowhere.
	Addrs string
	// Key is the key its datagrams are authenticated with, in hex.
	Key string
}

// Directory is the store's side of the peer wake-ups: rows of the session
// table that advertise the processes listening. Such a row holds no
// lease.
type Directory interface {
	// Advertise creates row id of holder with a, live for ttl by the
	// database clock.
	Advertise(ctx context.Context, id, holder string, a Advert, ttl time.Duration) error
	// Readvertise extends row id to live for ttl more, and reports
	// whether it was still live to extend.
	Readvertise(ctx context.Context, id string, ttl time.Duration) (bool, error)
	// Withdraw deletes row id.
	Withdraw(ctx context.Context, id string) error
	// Peers reads the adverts of the rows of the table that are live, or
	// expired less than grace ago, by the database clock.
	Peers(ctx context.Context, grace time.Duration) ([]Advert, error)
}

// sendTimeout bounds the read of the peers and the datagrams of a
// release, which the store reports without a context (OnRelease).
const sendTimeout = time.Second

// helloRetry is the first wait before a hello that could not read the
// peers is sent again.
const helloRetry = 100 * time.Millisecond

// advertiseTimeout bounds each write of the advertising row: one that
// times out when listening starts fails Listen, which logs a warning.
const advertiseTimeout = 5 * time.Second

// NewPeer returns the peer transport of db, whose session table dir
// reads and writes. It does no I/O: Listen binds the socket and writes
// the advertising row. The releases of db are sent through it from then
// on.
func NewPeer(db Database, dir Directory, cfg PeerConfig) *Peer {
	key := make([]byte, keyLen)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	p := &Peer{db: db, dir: dir, cfg: cfg, key: key, hex: hex.EncodeToString(key)}
	p.late.poke = make(chan struct{}, 1)
	p.peers.host = hostToken()
	db.OnRelease(func(names []string) {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		_ = p.Notify(ctx, names)
	})
	return p
}

// bind binds the socket and returns it with its Advert.
func (p *Peer) bind() (*net.UDPConn, Advert, error) {
	listen := p.cfg.Listen
	if listen == "" {
		listen = ":0"
	}
	laddr, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return nil, Advert{}, fmt.Errorf("peer wake-ups: listen address %q: %w", listen, err)
	}
	conn, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, Advert{}, fmt.Errorf("peer wake-ups: bind %q: %w", listen, err)
	}
	addrs, err := advertised(p.cfg.Advertise, laddr, conn.LocalAddr().(*net.UDPAddr).Port)
	if err != nil {
		_ = conn.Close()
		return nil, Advert{}, err
	}
	return conn, Advert{Addrs: encodeAddrs(p.peers.host, addrs), Key: p.hex}, nil
}

// Listen binds this process's socket, writes the row that advertises it,
// tells the other processes to read the peers again, so that they find
// this one, and hands the wake-ups that arrive to deliver until ctx is
// done; up is called in between. The row is kept live meanwhile, and
// deleted when Listen returns. Datagrams that fail the checks of
// datagram.go are dropped silently.
func (p *Peer) Listen(ctx context.Context, deliver func(names []string), up func()) error {
	conn, adv, err := p.bind()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	id := uuid.NewString()
	actx, cancel := context.WithTimeout(ctx, advertiseTimeout)
	err = p.dir.Advertise(actx, id, p.cfg.Holder, adv, p.cfg.TTL)
	cancel()
	if err != nil {
		return fmt.Errorf("peer wake-ups: advertise: %w", err)
	}
	lctx, end := context.WithCancel(ctx)
	var presence sync.WaitGroup
	defer presence.Wait()
	defer end()
	presence.Go(func() { p.keepAdvertised(lctx, id, adv) })
	presence.Go(func() { p.resendLate(lctx) })
	// The hello is sent before up, so that its read of the peers is over
	// once listening is reported; what arrives meanwhile waits in the
	// socket's buffer. A hello whose read of the peers failed reached
	// only the peers this process knew, none at first, and the others
	// would not wake it until they read the peers again, up to Refresh
	// later: it is sent again until a read succeeds.
	if !p.hello(ctx) {
		presence.Go(func() { p.helloUntilRead(lctx) })
	}
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

// hello sends a hello to the peers, read again first, and reports
// whether they were read.
func (p *Peer) hello(ctx context.Context) bool {
	hctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	p.peers.markStale()
	read, _ := p.sendAll(hctx, kindHello, nil)
	return read == nil
}

// helloUntilRead sends the hello again, helloRetry after the last and
// doubling up to Refresh, until one has read the peers or ctx is done.
func (p *Peer) helloUntilRead(ctx context.Context) {
	for wait := helloRetry; ; wait = p.nextRetry(wait) {
		if !sleepCtx(ctx, wait) || p.hello(ctx) {
			return
		}
	}
}

// nextRetry doubles the wait before a retry, up to Refresh.
func (p *Peer) nextRetry(wait time.Duration) time.Duration {
	return min(2*wait, max(p.cfg.Refresh, helloRetry))
}

// sleepCtx waits d, and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// keepAdvertised extends the advertising row id every three quarters of
// TTL until ctx is done, writing a new one when it had expired, and then
// deletes it. A failure is tried again at the next turn: a process whose
// row lapsed is only woken at its polls meanwhile.
func (p *Peer) keepAdvertised(ctx context.Context, id string, adv Advert) {
	defer func() {
		// Short: it delays the end of Listen, and a row left behind
		// only expires after TTL.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
		defer cancel()
		_ = p.dir.Withdraw(wctx, id)
	}()
	every := max(p.cfg.TTL*3/4, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wctx, cancel := context.WithTimeout(ctx, min(every, advertiseTimeout))
		ok, err := p.dir.Readvertise(wctx, id, p.cfg.TTL)
		if err == nil && !ok {
			fresh := uuid.NewString()
			if p.dir.Advertise(wctx, fresh, p.cfg.Holder, adv, p.cfg.TTL) == nil {
				_ = p.dir.Withdraw(wctx, id)
				id = fresh
			}
		}
		cancel()
	}
}

// Notify wakes the processes on the tables for names (nil means any),
// this one included. A peer that cannot be reached is skipped; the error is the first
// failure, to be logged, after every peer was tried.
func (p *Peer) Notify(ctx context.Context, names []string) error {
	read, sent := p.sendAll(ctx, kindWake, names)
	return cmp.Or(read, sent)
}

// sendAll sends one datagram of kind to every peer. When the peers are
// stale it sends to the ones it knows first, so that a release does not
// wait for the read, then reads them again and sends to the new ones.
// read is the read's failure, sent the first datagram's.
func (p *Peer) sendAll(ctx context.Context, kind byte, names []string) (read, sent error) {
	known, fresh := p.peers.current(p.cfg.Refresh)
	var conn *net.UDPConn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	d := datagram{kind: kind, sent: time.Now(), channel: p.db.Channel(), payload: Payload(names)}
	if _, err := rand.Read(d.nonce[:]); err != nil {
		return nil, err
	}
	var err error
	sendTo := func(targets []target) {
		if len(targets) == 0 {
			return
		}
		if conn == nil {
			c, lerr := net.ListenUDP("udp", nil)
			if lerr != nil {
				err = fmt.Errorf("peer wake-ups: open a socket to send: %w", lerr)
				return
			}
			conn = c
			_ = conn.SetWriteDeadline(time.Now().Add(sendTimeout))
		}
		for _, t := range targets {
			if kind == kindHello && bytes.Equal(t.key, p.key) {
				continue // this process knows itself: no need to read the peers again
			}
			msg := d.seal(t.key)
			for _, a := range t.addrs {
				if _, werr := conn.WriteToUDP(msg, a); werr != nil && err == nil && ctx.Err() == nil {
					err = fmt.Errorf("peer wake-ups: send to %v: %w", a, werr)
				}
			}
		}
	}
	sendTo(known)
	if fresh {
		return nil, err
	}
	all, rerr := p.peers.get(ctx, p)
	sendTo(newTargets(all, known))
	if rerr != nil && kind == kindWake {
		p.late.add(names)
	}
	return rerr, err
}

// newTargets returns the targets of all whose key none of known has.
func newTargets(all, known []target) []target {
	seen := make(map[string]bool, len(known))
	for _, k := range known {
		seen[string(k.key)] = true
	}
	var out []target
	for _, t := range all {
		if !seen[string(t.key)] {
			out = append(out, t)
		}
	}
	return out
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
