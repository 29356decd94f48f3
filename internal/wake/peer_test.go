package wake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// sessionTable stands for the session table: the advertising rows, and
// how often they were read.
type sessionTable struct {
	mu    sync.Mutex
	rows  map[string]Advert
	reads int
}

func newSessionTable() *sessionTable { return &sessionTable{rows: make(map[string]Advert)} }

func (t *sessionTable) add(id string, a Advert) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows[id] = a
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
	// failPeers is how many of the next reads of the peers fail.
	failPeers atomic.Int32
}

func (d *netDB) Means() Means                                   { return None }
func (d *netDB) Channel() string                                { return d.channel }
func (d *netDB) File(context.Context) (string, error)           { return "", nil }
func (d *netDB) Notify(context.Context, []string) error         { return nil }
func (d *netDB) Listen(context.Context, func(Conn) error) error { return ErrNoWakeups }
func (d *netDB) OnRelease(fn func(names []string))              { d.released = fn }

func (d *netDB) Advertise(_ context.Context, id, _ string, a Advert, _ time.Duration) error {
	d.tbl.add(id, a)
	return nil
}

func (d *netDB) Readvertise(_ context.Context, id string, _ time.Duration) (bool, error) {
	d.tbl.mu.Lock()
	defer d.tbl.mu.Unlock()
	_, ok := d.tbl.rows[id]
	return ok, nil
}

func (d *netDB) Withdraw(_ context.Context, id string) error {
	d.tbl.mu.Lock()
	defer d.tbl.mu.Unlock()
	delete(d.tbl.rows, id)
	return nil
}

func (d *netDB) Peers(context.Context, time.Duration) ([]Advert, error) {
	if d.failPeers.Add(-1) >= 0 {
		return nil, errors.New("the database is unavailable")
	}
	d.tbl.mu.Lock()
	defer d.tbl.mu.Unlock()
	d.tbl.reads++
	out := make([]Advert, 0, len(d.tbl.rows))
	for _, a := range d.tbl.rows {
		out = append(out, a)
	}
	return out, nil
}

// peerProc is one process's peer transport, listening on loopback.
type peerProc struct {
	db   *netDB
	p    *Peer
	got  chan []string
	stop func()
}

// newPeerProc returns a process on tbl that listens on loopback once
// started.
func newPeerProc(t *testing.T, tbl *sessionTable, channel string) *peerProc {
	t.Helper()
	db := &netDB{tbl: tbl, channel: channel}
	p := NewPeer(db, db, PeerConfig{Listen: "127.0.0.1:0", TTL: time.Minute, Grace: time.Minute, Refresh: time.Hour})
	if db.released == nil {
		t.Fatal("NewPeer did not ask for the releases")
	}
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
	go func() {
		done <- pp.p.Listen(ctx, func(names []string) {
			select {
			case pp.got <- names:
			default: // a test that does not read them
			}
		}, func() { close(up) })
	}()
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

// startAll starts n processes on tbl, and waits until every one has
// read the peers after the last started: each reads them again when told
// by the hello of one that starts.
func startAll(t *testing.T, tbl *sessionTable, n int) []*peerProc {
	t.Helper()
	ps := make([]*peerProc, n)
	for i := range ps {
		ps[i] = startPeer(t, tbl, "leasehold_leases")
	}
	// Each process wakes every one: once all were woken by all, every one
	// knows every other.
	for _, from := range ps {
		deadline := time.After(wait)
		for pending := slices.Clone(ps); len(pending) > 0; {
			_ = from.p.Notify(context.Background(), []string{"sync"})
			next := pending[:0]
			for _, pp := range pending {
				select {
				case <-pp.got:
				case <-time.After(100 * time.Millisecond):
					next = append(next, pp)
				case <-deadline:
					t.Fatalf("the peers did not all reach each other within %v", wait)
				}
			}
			pending = next
		}
		for _, pp := range ps {
			drain(pp.got)
		}
	}
	return ps
}

// drain empties ch.
func drain(ch chan []string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// recv waits for the next wake-up of pp, past the "sync" wake-ups of
// startAll: one sent again to a peer whose reader was slow can arrive
// after startAll drained it.
func (pp *peerProc) recv(t *testing.T) []string {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case names := <-pp.got:
			if slices.Equal(names, []string{"sync"}) {
				continue
			}
			return names
		case <-deadline:
			t.Fatalf("no wake-up within %v", wait)
			return nil
		}
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

func TestPeerWakesTheOthersAndItself(t *testing.T) {
	tbl := newSessionTable()
	ps := startAll(t, tbl, 3)
	a, b := ps[0], ps[1]
	if err := a.p.Notify(context.Background(), []string{"global/x", "pool|global/p|generation"}); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	for _, pp := range ps {
		if got := pp.recv(t); !slices.Equal(got, []string{"global/x", "pool|global/p|generation"}) {
			t.Fatalf("woken for %q", got)
		}
	}
	a.db.released([]string{"global/released"}) // a release, reported by the store
	for _, pp := range ps {
		if got := pp.recv(t); !slices.Equal(got, []string{"global/released"}) {
			t.Fatalf("woken for %q, want the release", got)
		}
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
	tbl := newSessionTable()
	b := startPeer(t, tbl, "leasehold_leases")
	var addrs []*net.UDPAddr
	for _, a := range tbl.rows {
		addrs = decodeAddrs(a.Addrs, hostToken())
	}
	if len(addrs) != 1 {
		t.Fatalf("b advertises %v, want one address", tbl.rows)
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
	send(other, d("forged"))
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
	tbl := newSessionTable()
	// A row whose process is gone: nothing listens at its address.
	dead, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.LocalAddr().(*net.UDPAddr).AddrPort()
	_ = dead.Close()
	key := make([]byte, keyLen)
	_, _ = rand.Read(key)
	tbl.add("gone", Advert{Addrs: encodeAddrs(hostToken(), []netip.AddrPort{addr}), Key: hex.EncodeToString(key)})
	ps := startAll(t, tbl, 2)
	a, b := ps[0], ps[1]
	for i := range 3 {
		_ = a.p.Notify(context.Background(), []string{"global/x"})
		if got := b.recv(t); !slices.Equal(got, []string{"global/x"}) {
			t.Fatalf("wake-up %d: b got %q", i, got)
		}
	}
	// A process that stops listening withdraws its row.
	b.stop()
	tbl.mu.Lock()
	defer tbl.mu.Unlock()
	if len(tbl.rows) != 2 {
		t.Fatalf("%d rows after b stopped, want the dead one and a's", len(tbl.rows))
	}
}

func TestPeerReadsThePeersAgainWhenOneStartsListening(t *testing.T) {
	tbl := newSessionTable()
	a := startPeer(t, tbl, "leasehold_leases")
	_ = a.p.Notify(context.Background(), nil) // reads the peers: a only
	reads := tbl.readCount()
	_ = a.p.Notify(context.Background(), nil)
	if n := tbl.readCount(); n != reads {
		t.Fatalf("the peers were read again within Refresh (%d reads, then %d)", reads, n)
	}
	// b's hello makes a read the peers again, though Refresh is an hour.
	b := startPeer(t, tbl, "leasehold_leases")
	wakeUntilWoken(t, a, b, "a newcomer")
}

// wakeUntilWoken makes from wake to, again every 50ms, until to gets the
// wake-up, at most wait; who names to in the failure.
func wakeUntilWoken(t *testing.T, from, to *peerProc, who string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		_ = from.p.Notify(context.Background(), []string{"global/late"})
		select {
		case got := <-to.got:
			if !slices.Equal(got, []string{"global/late"}) {
				t.Fatalf("%s got %q", who, got)
			}
			return
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s was not woken within %v", who, wait)
		}
	}
}

// TestPeerSaysHelloAgainWhenItCouldNotReadThePeers: a process whose
// hello could not read the peers (the database failing as it starts
// listening) sends it again, so a process that had read the peers before
// it advertised, with a Refresh of an hour, reads them again and wakes
// it.
func TestPeerSaysHelloAgainWhenItCouldNotReadThePeers(t *testing.T) {
	tbl := newSessionTable()
	a := startPeer(t, tbl, "leasehold_leases")
	_ = a.p.Notify(context.Background(), nil) // reads the peers: a only
	b := newPeerProc(t, tbl, "leasehold_leases")
	b.db.failPeers.Store(2) // the hello's read, and its first retry's
	b.start(t)
	wakeUntilWoken(t, a, b, "a process whose hello could not read the peers")
	if n := b.db.failPeers.Load(); n >= 0 {
		t.Fatalf("b was woken with %d failing reads of the peers left: the test did not fail its hello", n+1)
	}
}

// TestPeerSendsAgainAWakeUpWhoseReadFailed: a wake-up sent when the
// peers are stale and cannot be read reaches only the peers known
// before; once a read succeeds it is sent to the others too.
func TestPeerSendsAgainAWakeUpWhoseReadFailed(t *testing.T) {
	tbl := newSessionTable()
	a := startPeer(t, tbl, "leasehold_leases")
	_ = a.p.Notify(context.Background(), nil) // reads the peers: a only
	b := startPeer(t, tbl, "leasehold_leases")
	a.p.peers.markStale() // as b's hello does, whenever it arrives
	a.db.failPeers.Store(2)
	if err := a.p.Notify(context.Background(), []string{"global/late"}); err == nil {
		t.Fatal("Notify read the peers, want the read to fail")
	}
	select {
	case got := <-b.got:
		if !slices.Equal(got, []string{"global/late"}) {
			t.Fatalf("b got %q, want the wake-up whose read failed", got)
		}
	case <-time.After(wait):
		t.Fatalf("a wake-up whose read of the peers failed did not reach a process started since within %v", wait)
	}
	if n := a.db.failPeers.Load(); n >= 0 {
		t.Fatalf("b was woken with %d failing reads of the peers left", n+1)
	}
}

func TestPeerListenFailsOnAnAddressItCannotBind(t *testing.T) {
	db := &netDB{tbl: newSessionTable(), channel: "leasehold_leases"}
	p := NewPeer(db, db, PeerConfig{Listen: "192.0.2.1:0", Refresh: time.Hour}) // TEST-NET-1: no interface has it
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
