package wake

import (
	"context"
	"crypto/rand"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// sessionTable stands for the session table: the adverts of the sessions
// created, and how often they were read.
type sessionTable struct {
	mu    sync.Mutex
	rows  []Advert
	reads int
}

func (t *sessionTable) add(a Advert) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = append(t.rows, a)
}

func (t *sessionTable) readCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reads
}

// netDB is the store's side of a database without wake-ups of its own,
// with the session table tbl.
type netDB struct {
	tbl      *sessionTable
	channel  string
	released func(names []string)
	session  func() Advert
}

func (d *netDB) Means() Means                                   { return None }
func (d *netDB) Channel() string                                { return d.channel }
func (d *netDB) File(context.Context) (string, error)           { return "", nil }
func (d *netDB) Notify(context.Context, []string) error         { return nil }
func (d *netDB) Listen(context.Context, func(Conn) error) error { return ErrNoWakeups }
func (d *netDB) OnRelease(fn func(names []string))              { d.released = fn }
func (d *netDB) OnSession(fn func() Advert)                     { d.session = fn }
func (d *netDB) Peers(context.Context, time.Duration) ([]Advert, error) {
	d.tbl.mu.Lock()
	defer d.tbl.mu.Unlock()
	d.tbl.reads++
	return slices.Clone(d.tbl.rows), nil
}

// createSession writes a session row of d's process, with its advert.
func (d *netDB) createSession() { d.tbl.add(d.session()) }

// peerProc is one process's peer transport, listening on loopback.
type peerProc struct {
	db   *netDB
	p    *Peer
	got  chan []string
	stop func()
}

// newPeerProc returns a process on tbl that listens on loopback, once
// started, and has created a session row.
func newPeerProc(t *testing.T, tbl *sessionTable, channel string) *peerProc {
	t.Helper()
	db := &netDB{tbl: tbl, channel: channel}
	p := NewPeer(db, db, PeerConfig{Listen: "127.0.0.1:0", Grace: time.Minute, Refresh: time.Hour})
	if db.released == nil || db.session == nil {
		t.Fatal("NewPeer did not ask for the releases and the session rows")
	}
	db.createSession()
	return &peerProc{db: db, p: p, got: make(chan []string, 16)}
}

// startPeer returns a process of newPeerProc, listening; it stops at the
// end of the test.
func startPeer(t *testing.T, tbl *sessionTable, channel string) *peerProc {
	t.Helper()
	pp := newPeerProc(t, tbl, channel)
	pp.start(t)
	return pp
}

// start makes pp listen until the end of the test.
func (pp *peerProc) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- pp.p.Listen(ctx, func(names []string) { pp.got <- names }, func() { close(up) }) }()
	select {
	case <-up:
	case err := <-done:
		t.Fatalf("Listen: %v", err)
	case <-time.After(wait):
		t.Fatalf("not listening within %v", wait)
	}
	var once sync.Once
	pp.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Listen returned %v after its context ended, want nil", err)
				}
			case <-time.After(wait):
				t.Errorf("Listen did not return within %v of its context's end", wait)
			}
		})
	}
	t.Cleanup(pp.stop)
}

// startAll creates the session rows of n processes on tbl, and then
// makes them listen: each reads the others' rows when it starts.
func startAll(t *testing.T, tbl *sessionTable, n int) []*peerProc {
	t.Helper()
	ps := make([]*peerProc, n)
	for i := range ps {
		ps[i] = newPeerProc(t, tbl, "leasehold_leases")
	}
	for _, pp := range ps {
		pp.start(t)
	}
	return ps
}

// recv waits for the next wake-up of pp.
func (pp *peerProc) recv(t *testing.T) []string {
	t.Helper()
	select {
	case names := <-pp.got:
		return names
	case <-time.After(wait):
		t.Fatalf("no wake-up within %v", wait)
		return nil
	}
}

// noneBefore checks that the next wake-up of pp is marker, sent after
// what it must not get.
func (pp *peerProc) noneBefore(t *testing.T, marker []string) {
	t.Helper()
	if got := pp.recv(t); !slices.Equal(got, marker) {
		t.Fatalf("got wake-up %q before the marker %q", got, marker)
	}
}

func TestPeerWakesTheOthers(t *testing.T) {
	tbl := &sessionTable{}
	ps := startAll(t, tbl, 3)
	a, b, c := ps[0], ps[1], ps[2]
	if err := a.p.Notify(context.Background(), []string{"global/x", "pool|global/p|generation"}); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	for _, pp := range []*peerProc{b, c} {
		if got := pp.recv(t); !slices.Equal(got, []string{"global/x", "pool|global/p|generation"}) {
			t.Fatalf("woken for %q", got)
		}
	}
	a.db.released([]string{"global/released"}) // a release, reported by the store
	for _, pp := range []*peerProc{b, c} {
		if got := pp.recv(t); !slices.Equal(got, []string{"global/released"}) {
			t.Fatalf("woken for %q, want the release", got)
		}
	}
	// The sender is not woken by its own: b's wake-up is the first a gets.
	if err := b.p.Notify(context.Background(), nil); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	if got := a.recv(t); got != nil {
		t.Fatalf("a got %q first, want b's wake-up for any", got)
	}
	// Names that do not fit in a datagram wake for any.
	long := []string{strings.Repeat("x", maxDatagram)}
	if err := a.p.Notify(context.Background(), long); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	if got := b.recv(t); got != nil {
		t.Fatalf("a wake-up too long for a datagram delivered %d names, want any", len(got))
	}
}

func TestPeerDropsForgedStaleAndReplayedDatagrams(t *testing.T) {
	tbl := &sessionTable{}
	b := startPeer(t, tbl, "leasehold_leases")
	adv := b.p.advert()
	addrs := decodeAddrs(adv.Addrs, hostToken())
	if len(addrs) != 1 {
		t.Fatalf("b advertises %q, want one address", adv.Addrs)
	}
	conn, err := net.DialUDP("udp", nil, addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(key []byte, d datagram) {
		t.Helper()
		if _, err := conn.Write(d.seal(key)); err != nil {
			t.Fatal(err)
		}
	}
	other := make([]byte, keyLen)
	_, _ = rand.Read(other)
	d := func(names string) datagram {
		x := datagram{kind: kindWake, sent: time.Now(), channel: "leasehold_leases", payload: names}
		_, _ = rand.Read(x.nonce[:])
		return x
	}
	forged := d("forged")
	send(other, forged)
	wrongChannel := d("channel")
	wrongChannel.channel = "other_leases"
	send(b.p.key, wrongChannel)
	old := d("old")
	old.sent = time.Now().Add(-2 * MaxAge)
	send(b.p.key, old)
	future := d("future")
	future.sent = time.Now().Add(2 * MaxAge)
	send(b.p.key, future)
	unknown := d("kind")
	unknown.kind = 9
	send(b.p.key, unknown)
	truncated := d("truncated").seal(b.p.key)
	if _, err := conn.Write(truncated[:len(truncated)-1]); err != nil {
		t.Fatal(err)
	}
	good := d("good")
	send(b.p.key, good)
	if got := b.recv(t); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("first wake-up delivered %q, want the good one: a forged, stale or misdirected one got through", got)
	}
	send(b.p.key, good) // replayed
	send(b.p.key, d("marker"))
	b.noneBefore(t, []string{"marker"})
}

func TestPeerSkipsAPeerThatIsGone(t *testing.T) {
	tbl := &sessionTable{}
	gone := startPeer(t, tbl, "leasehold_leases")
	gone.stop() // its row stays, its socket is closed
	ps := startAll(t, tbl, 2)
	a, b := ps[0], ps[1]
	for i := range 3 {
		_ = a.p.Notify(context.Background(), []string{"global/x"})
		if got := b.recv(t); !slices.Equal(got, []string{"global/x"}) {
			t.Fatalf("wake-up %d: b got %q", i, got)
		}
	}
	if adv := gone.p.advert(); adv.Addrs != "" {
		t.Fatalf("a peer whose Listen ended binds again for a new session row: %q", adv.Addrs)
	}
}

func TestPeerReadsThePeersAgainWhenOneStartsListening(t *testing.T) {
	tbl := &sessionTable{}
	a := startPeer(t, tbl, "leasehold_leases")
	_ = a.p.Notify(context.Background(), nil) // reads the peers: none yet
	reads := tbl.readCount()
	_ = a.p.Notify(context.Background(), nil)
	if n := tbl.readCount(); n != reads {
		t.Fatalf("the peers were read again within Refresh (%d reads, then %d)", reads, n)
	}
	// b's session row exists before it listens; its hello makes a read
	// the peers again, though Refresh is an hour.
	b := startPeer(t, tbl, "leasehold_leases")
	deadline := time.After(wait)
	for {
		_ = a.p.Notify(context.Background(), []string{"global/late"})
		select {
		case got := <-b.got:
			if !slices.Equal(got, []string{"global/late"}) {
				t.Fatalf("b got %q", got)
			}
			return
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("a newcomer was not woken within %v", wait)
		}
	}
}

func TestPeerListenFailsOnAnAddressItCannotBind(t *testing.T) {
	db := &netDB{tbl: &sessionTable{}, channel: "leasehold_leases"}
	p := NewPeer(db, db, PeerConfig{Listen: "192.0.2.1:0", Refresh: time.Hour}) // TEST-NET-1: no interface has it
	if adv := p.advert(); adv != (Advert{}) {
		t.Fatalf("advert without a socket = %+v, want none", adv)
	}
	err := p.Listen(context.Background(), func([]string) {}, func() { t.Error("up called") })
	if err == nil || IsFinal(err) {
		t.Fatalf("Listen = %v, want an error to retry", err)
	}
}

func TestAdvertisedAddresses(t *testing.T) {
	host := hostToken()
	s := encodeAddrs(host, nil)
	if got := decodeAddrs(s, host); len(got) != 0 {
		t.Fatalf("no addresses decoded as %v", got)
	}
	lo, _ := advertised(nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, 4000)
	enc := encodeAddrs(host, lo)
	if got := decodeAddrs(enc, host); len(got) != 1 || got[0].String() != "127.0.0.1:4000" {
		t.Fatalf("same host: %q decoded as %v", enc, got)
	}
	if got := decodeAddrs(enc, "otherhost"); len(got) != 0 {
		t.Fatalf("another host would send to loopback: %q decoded as %v", enc, got)
	}
	conf, err := advertised([]string{"10.1.2.3", "[2001:db8::1]:7000", "127.0.0.1"}, nil, 4000)
	if err != nil {
		t.Fatal(err)
	}
	enc = encodeAddrs(host, conf)
	var got []string
	for _, a := range decodeAddrs(enc, "otherhost") {
		got = append(got, a.String())
	}
	if want := []string{"10.1.2.3:4000", "[2001:db8::1]:7000"}; !slices.Equal(got, want) {
		t.Fatalf("configured %q decoded on another host as %v, want %v", enc, got, want)
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = "10.0.0." + strconv.Itoa(i+1)
	}
	conf, _ = advertised(many, nil, 65535)
	if enc := encodeAddrs(host, conf); len(enc) > MaxAddrsLen || len(decodeAddrs(enc, host)) == 0 {
		t.Fatalf("%d addresses encoded in %d bytes, limit %d", len(decodeAddrs(enc, host)), len(enc), MaxAddrsLen)
	}
	if ips, err := HostAddrs(); err != nil || len(ips) == 0 {
		t.Fatalf("HostAddrs = %v, %v; want at least loopback", ips, err)
	}
}

func TestCheckAddresses(t *testing.T) {
	for _, s := range []string{":0", "0.0.0.0:7946", "[::]:0", "10.0.0.5:65535"} {
		if err := CheckListen(s); err != nil {
			t.Errorf("CheckListen(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "7946", "host.example:1", "10.0.0.5:65536", "10.0.0.5:x"} {
		if err := CheckListen(s); err == nil {
			t.Errorf("CheckListen(%q) = nil, want an error", s)
		}
	}
	for _, s := range []string{"10.0.0.5", "10.0.0.5:7946", "2001:db8::1", "[2001:db8::1]:7946"} {
		if err := CheckAdvertise(s); err != nil {
			t.Errorf("CheckAdvertise(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "host.example", "0.0.0.0", "10.0.0.5:0", "[fe80::1%eth0]:1", "224.0.0.1"} {
		if err := CheckAdvertise(s); err == nil {
			t.Errorf("CheckAdvertise(%q) = nil, want an error", s)
		}
	}
}
