package membership

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/internal/store"
)

// fakeStore is one pool's rows in memory, under the rules of the SQL
// statements the protocol uses: a row is live while held and unexpired,
// an acknowledgement is written only under the term that holds the row,
// and a publish is a compare-and-set on the generation.
type fakeStore struct {
	mu   sync.Mutex
	now  time.Time
	rows map[string]*store.Row
}

func newFakeStore() *fakeStore {
	return &fakeStore{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), rows: make(map[string]*store.Row)}
}

func (s *fakeStore) EnsureRows(_ context.Context, names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if s.rows[n] == nil {
			s.rows[n] = &store.Row{Name: n}
		}
	}
	return nil
}

func (s *fakeStore) List(_ context.Context, prefix string) ([]store.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Row
	for n, r := range s.rows {
		if strings.HasPrefix(n, prefix) {
			c := *r
			c.Now = s.now
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *fakeStore) SetData(_ context.Context, session string, t store.Term, data, _ string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[t.Name]
	if r == nil || r.Session != session || r.Epoch != t.Epoch || r.Holder == "" {
		return false, nil
	}
	r.Data = data
	return true, nil
}

func (s *fakeStore) Publish(_ context.Context, name string, from int64, data string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[name]
	if r == nil || r.Epoch != from {
		return false, nil
	}
	r.Epoch, r.Data = from+1, data
	return true, nil
}

func (s *fakeStore) PruneDead(_ context.Context, prefix string, _ time.Duration) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for name, r := range s.rows {
		if strings.HasPrefix(name, prefix) && r.Holder == "" {
			delete(s.rows, name)
			n++
		}
	}
	return n, nil
}

// take gives the row to holder under session, with the next epoch.
func (s *fakeStore) take(name, holder, session string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[name]
	if r == nil {
		r = &store.Row{Name: name}
		s.rows[name] = r
	}
	r.Holder, r.Session, r.Epoch, r.ExpiresAt = holder, session, r.Epoch+1, s.now.Add(time.Hour)
	return r.Epoch
}

// release frees the row if the term still holds it.
func (s *fakeStore) release(name, session string, epoch int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[name]; r != nil && r.Session == session && r.Epoch == epoch {
		r.Holder, r.Session = "", ""
	}
}

// data returns the data of the named row.
func (s *fakeStore) data(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[name]; r != nil {
		return r.Data
	}
	return ""
}

type fakeLease struct {
	s       *fakeStore
	key     string
	session string
	epoch   int64
	ctx     context.Context
	cancel  context.CancelFunc
}

func (l *fakeLease) Key() string              { return l.key }
func (l *fakeLease) Epoch() int64             { return l.epoch }
func (l *fakeLease) Session() string          { return l.session }
func (l *fakeLease) Valid() bool              { return l.ctx.Err() == nil }
func (l *fakeLease) Context() context.Context { return l.ctx }
func (l *fakeLease) Release(context.Context) error {
	l.cancel()
	l.s.release(l.key, l.session, l.epoch)
	return nil
}

// host is one process in the test: it joins, works and reports, and
// records the assignments it worked on and how each ended.
type host struct {
	t    *testing.T
	s    *fakeStore
	rows Rows
	name string

	mu       sync.Mutex
	joins    int
	notified []string // the names of the wake-ups sent, in order
	started  []Assignment
	ended    []error // context.Cause of each work, in the order they returned
	stopped  int
	running  bool
}

func (h *host) MayJoin() bool { return true }

func (h *host) NewID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.joins++
	if h.joins > 1 {
		return h.name + "." + strconv.Itoa(h.joins)
	}
	return h.name
}

func (h *host) Join(_ context.Context, row string) (Lease, error) {
	session := h.name + "-session"
	epoch := h.s.take(row, h.name, session)
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeLease{s: h.s, key: row, session: session, epoch: epoch, ctx: ctx, cancel: cancel}, nil
}

func (h *host) Notify(_ context.Context, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notified = append(h.notified, name)
}

// takeNotified returns the names of the wake-ups h sent since the last
// call.
func (h *host) takeNotified() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.notified
	h.notified = nil
	return n
}

func (h *host) Start(a Assignment) func(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running {
		h.t.Errorf("%s: generation %d started while older work runs", h.name, a.Generation)
	}
	h.started = append(h.started, a)
	h.running = true
	return func(ctx context.Context) {
		<-ctx.Done()
		h.mu.Lock()
		defer h.mu.Unlock()
		// The work returns before the member acknowledges a newer
		// generation: its row still acknowledges this one.
		if got := h.s.data(a.Lease.Key()); got != "" && got != strconv.FormatInt(a.Generation, 10) {
			h.t.Errorf("%s: work of generation %d returned after the row acknowledged %s", h.name, a.Generation, got)
		}
		h.ended = append(h.ended, context.Cause(ctx))
		h.running = false
	}
}

func (h *host) Stopped() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped++
}

func (h *host) Read(int64, int)                 {}
func (h *host) Failed(err error)                { h.t.Errorf("%s: %v", h.name, err) }
func (h *host) Rebalanced(time.Duration, int64) {}

func (h *host) member() *Member {
	return New(Config{
		Pool: "global/p", Rows: h.rows, Holder: h.name, Poll: time.Second,
		StepTimeout: time.Minute, ShutdownTimeout: time.Minute, PruneAfter: time.Minute,
		Store: hostStore{h.s, h}, Joiner: h, Notifier: h, Worker: h, Reporter: h,
		Log: zaptest.NewLogger(h.t),
	})
}

// hostStore is the store as one host's member sees it: a wake-up that
// rides on a write is recorded as h's, with those of its Notifier.
type hostStore struct {
	*fakeStore
	h *host
}

func (s hostStore) SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error) {
	ok, err := s.fakeStore.SetData(ctx, session, t, data, wake)
	if ok && wake != "" {
		s.h.Notify(ctx, wake)
	}
	return ok, err
}

// last returns the assignment h started last.
func (h *host) last() Assignment {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.started) == 0 {
		return Assignment{}
	}
	return h.started[len(h.started)-1]
}

// TestRevokeThenAssign steps two members through a join and a leave: a
// generation's work starts only once every live member acknowledged it,
// a member's older work has returned before it acknowledges, and a
// leaving member publishes the generation without itself.
func TestRevokeThenAssign(t *testing.T) {
	ctx := context.Background()
	s := newFakeStore()
	rows := Rows{Prefix: "pool|global/p|", Generation: "pool|global/p|generation", Members: "pool|global/p|member|"}
	ha := &host{t: t, s: s, rows: rows, name: "a"}
	hb := &host{t: t, s: s, rows: rows, name: "b"}
	a, b := ha.member(), hb.member()
	errClosed := errors.New("closed")

	step := func(m *Member, want bool) {
		t.Helper()
		if got := m.Step(ctx); got != want {
			t.Fatalf("step settled = %v, want %v", got, want)
		}
	}
	wantAssigned := func(h *host, gen int64, index, count int) {
		t.Helper()
		got := h.last()
		if got.Generation != gen || got.Index != index || got.Count != count || len(got.Members) != count {
			t.Fatalf("%s works on %+v, want generation %d, index %d of %d", h.name, got, gen, index, count)
		}
	}

	step(a, false) // joins and publishes generation 1: [a]
	step(a, true)  // every live member acknowledged 1: a works on index 0 of 1
	wantAssigned(ha, 1, 0, 1)

	step(b, false) // joins and publishes generation 2: [a b]
	step(b, false) // a has not acknowledged 2: b waits at the barrier
	if len(hb.started) != 0 {
		t.Fatalf("b started %+v before a acknowledged", hb.started)
	}
	step(a, true) // a stops its work of 1, acknowledges 2 and works on index 0 of 2
	wantAssigned(ha, 2, 0, 2)
	if len(ha.ended) != 1 || !errors.Is(ha.ended[0], errSuperseded) || ha.stopped != 1 {
		t.Fatalf("a's work of generation 1 ended with %v (stopped %d), want once with errSuperseded", ha.ended, ha.stopped)
	}
	step(b, true)
	wantAssigned(hb, 2, 1, 2)
	if got := hb.last().Members; !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("members of generation 2 = %q, want [a b]", got)
	}

	b.Leave(ctx, errClosed) // publishes generation 3: [a]
	if len(hb.ended) != 1 || !errors.Is(hb.ended[0], errClosed) {
		t.Fatalf("b's work ended with %v, want the cause given to Leave", hb.ended)
	}
	if hb.stopped != 0 {
		t.Errorf("Leave reported its work stopped %d times; Stopped is not called on Leave", hb.stopped)
	}
	step(a, true) // a stops its work of 2, acknowledges 3 and works on index 0 of 1
	wantAssigned(ha, 3, 0, 1)
	a.Leave(ctx, errClosed)
	if len(ha.ended) != 3 || !errors.Is(ha.ended[1], errSuperseded) || !errors.Is(ha.ended[2], errClosed) || ha.stopped != 2 {
		t.Errorf("a's works ended with %v (stopped %d), want superseded twice, then closed (stopped 2)", ha.ended, ha.stopped)
	}
	if st, _ := Read(ctx, s, "global/p", rows); st.Generation != 4 || len(st.List) != 0 {
		t.Errorf("after both left: generation %d, list %q; want 4, []", st.Generation, st.List)
	}
}

// TestRejoinAfterLoss checks that a member whose membership ended stops
// its work before anything else, and joins again under a new member id,
// which the next generation lists in place of the old one.
func TestRejoinAfterLoss(t *testing.T) {
	ctx := context.Background()
	s := newFakeStore()
	rows := Rows{Prefix: "pool|global/p|", Generation: "pool|global/p|generation", Members: "pool|global/p|member|"}
	h := &host{t: t, s: s, rows: rows, name: "a"}
	m := h.member()
	defer m.Leave(ctx, errors.New("closed"))
	m.Step(ctx)
	if !m.Step(ctx) || h.last().Generation != 1 {
		t.Fatalf("not working in generation 1: %+v", h.last())
	}
	lost := m.Lost()
	h.last().Lease.(*fakeLease).cancel() // the term ends: trust passed
	select {
	case <-lost:
	default:
		t.Fatal("Lost is not closed when the membership's term ends")
	}
	for range 3 {
		m.Step(ctx)
	}
	if h.stopped != 1 || len(h.ended) != 1 {
		t.Fatalf("work stopped %d times, ended %v; want once", h.stopped, h.ended)
	}
	got := h.last()
	if got.Generation != 2 || !slices.Equal(got.Members, []string{"a.2"}) {
		t.Fatalf("after the rejoin: %+v, want generation 2 of [a.2]", got)
	}
}

// TestAcknowledgementWakesTheCollector pins who each step of a rebalance
// wakes in a pool of index and count: a joiner wakes nobody until it
// publishes, a publisher wakes every member (a wake-up named after a row
// of the pool), an acknowledgement wakes only the collector, the first
// member of the list (Rows.Wake), the collector's own acknowledgement
// wakes nobody, and the collector wakes every member once it sees every
// acknowledgement, as it starts its work.
func TestAcknowledgementWakesTheCollector(t *testing.T) {
	ctx := context.Background()
	s := newFakeStore()
	rows := Rows{Prefix: "pool|global/p|", Generation: "pool|global/p|generation", Members: "pool|global/p|member|",
		Wakes: "pool|global/p|wake|"}
	ha := &host{t: t, s: s, rows: rows, name: "a"}
	hb := &host{t: t, s: s, rows: rows, name: "b"}
	hc := &host{t: t, s: s, rows: rows, name: "c"}
	a, b, c := ha.member(), hb.member(), hc.member()
	woke := func(h *host, what string, want ...string) {
		t.Helper()
		if got := h.takeNotified(); !slices.Equal(got, want) {
			t.Fatalf("%s: %s woke %q, want %q", what, h.name, got, want)
		}
	}

	a.Step(ctx) // joins and publishes generation 1: [a]
	woke(ha, "joining and publishing generation 1", rows.Member("a"))
	if !a.Step(ctx) {
		t.Fatal("a is not settled in generation 1")
	}
	woke(ha, "starting alone in generation 1") // nobody else waits

	b.Step(ctx) // joins and publishes generation 2: [a b]
	woke(hb, "joining and publishing generation 2", rows.Member("b"))
	c.Step(ctx) // joins and publishes generation 3: [a b c]
	woke(hc, "joining and publishing generation 3", rows.Member("c"))

	if b.Step(ctx) {
		t.Fatal("b settled in generation 3 before a acknowledged it")
	}
	woke(hb, "acknowledging generation 3", rows.Wake("a"))
	if !a.Step(ctx) {
		t.Fatal("a, the last to acknowledge generation 3, did not start in it")
	}
	woke(ha, "acknowledging generation 3 last and starting in it", rows.Member("a"))
	if !b.Step(ctx) || !c.Step(ctx) {
		t.Fatal("b and c did not start in generation 3 once every acknowledgement was in")
	}
	woke(hb, "starting in generation 3")
	woke(hc, "starting in generation 3")
	for _, h := range []*host{ha, hb, hc} {
		if got := h.last().Generation; got != 3 {
			t.Fatalf("%s works in generation %d, want 3", h.name, got)
		}
	}

	// The collector acknowledging first wakes nobody; the last
	// acknowledgement of another member wakes the collector, which then
	// wakes everyone.
	c.Leave(ctx, errors.New("closed")) // publishes generation 4: [a b]
	hc.takeNotified()
	if a.Step(ctx) {
		t.Fatal("a settled in generation 4 before b acknowledged it")
	}
	woke(ha, "acknowledging generation 4 first")
	if !b.Step(ctx) {
		t.Fatal("b, the last to acknowledge generation 4, did not start in it")
	}
	woke(hb, "acknowledging generation 4 last", rows.Wake("a"))
	if !a.Step(ctx) {
		t.Fatal("a did not start in generation 4 once every acknowledgement was in")
	}
	woke(ha, "seeing every acknowledgement of generation 4", rows.Member("a"))
	a.Leave(ctx, errors.New("closed"))
	b.Leave(ctx, errors.New("closed"))
}
