package coordination

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/store"
)

// wait bounds every wait in these tests. It is generous: it only decides
// how long a broken build takes to fail, never whether a healthy one passes.
const wait = 20 * time.Second

// fastConfig is a config with short timings so tests that need a lease to
// expire by the database clock finish quickly.
func fastConfig() Config {
	return Config{
		TTL:             1200 * time.Millisecond,
		RenewInterval:   200 * time.Millisecond,
		RetryInterval:   100 * time.Millisecond,
		Margin:          300 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second,
	}
}

// steady is cfg with a trust window no busy machine exhausts: a TTL of a
// minute and a margin of 10 s, its intervals unchanged. A case that
// asserts no second holder ever appears takes it, so that a lease lapsing
// under load, after which another process takes it legitimately, cannot
// pass for a second holder; so does a case that only needs its leases to
// stay held while it looks at them.
func steady(cfg Config) Config {
	cfg.TTL, cfg.Margin = time.Minute, 10*time.Second
	return cfg
}

// testIdentity returns an identity with a readable node name.
func testIdentity(t testing.TB, node string) identity.Identity {
	t.Helper()
	id, err := identity.New(node, "test")
	if err != nil {
		t.Fatalf("identity.New(%q): %v", node, err)
	}
	return id
}

// running is a coordinator started by a test.
type running struct {
	*Coordinator
	cancel context.CancelFunc
	runErr chan error
}

// launch runs c until the test ends, without waiting for it to be ready.
func launch(t testing.TB, c *Coordinator) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Coordinator: c, cancel: cancel, runErr: make(chan error, 1)}
	go func() { r.runErr <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.Done():
		case <-time.After(wait):
			t.Errorf("coordinator %s did not stop within %v", c.Holder(), wait)
		}
	})
	return r
}

// startCoordinator runs c until the test ends and waits until it is ready.
func startCoordinator(t testing.TB, c *Coordinator) *running {
	t.Helper()
	r := launch(t, c)
	select {
	case <-c.Ready():
	case err := <-r.runErr:
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(wait):
		t.Fatalf("coordinator not ready within %v", wait)
	}
	return r
}

func election(t testing.TB, c *Coordinator, scope Scope, name string) *Election {
	t.Helper()
	e, err := c.Election(scope, name)
	if err != nil {
		t.Fatalf("Election(%v, %q): %v", scope, name, err)
	}
	return e
}

func release(t testing.TB, l *Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release(%s): %v", l.Key(), err)
	}
}

// recvEvent waits for the first event matching match.
func recvEvent(t testing.TB, ch <-chan Event, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("event channel closed while waiting")
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no matching event within %v", wait)
		}
	}
}

// faultStore wraps the real store and fails chosen operations while a
// switch is on; failAll fails every database operation, as for a process
// cut off from the database.
type faultStore struct {
	leaseStore
	failRenew   atomic.Bool
	failAcquire atomic.Bool
	failAll     atomic.Bool
	renewCalls  atomic.Int64
}

var errInjected = errors.New("injected fault")

func (f *faultStore) RenewSession(ctx context.Context, id string, ttl time.Duration) (bool, int64, error) {
	f.renewCalls.Add(1)
	if f.failRenew.Load() || f.failAll.Load() {
		return false, 0, errInjected
	}
	return f.leaseStore.RenewSession(ctx, id, ttl)
}

func (f *faultStore) CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.leaseStore.CreateSession(ctx, id, holder, ttl)
}

func (f *faultStore) ReadSession(ctx context.Context, id string) (store.Session, bool, error) {
	if f.failAll.Load() {
		return store.Session{}, false, errInjected
	}
	return f.leaseStore.ReadSession(ctx, id)
}

func (f *faultStore) EndSession(ctx context.Context, id string, pruneAfter time.Duration) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.leaseStore.EndSession(ctx, id, pruneAfter)
}

func (f *faultStore) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) ([]string, error) {
	if f.failAcquire.Load() || f.failAll.Load() {
		return names[:min(len(names), store.WriteChunk)], errInjected // the first statement fails
	}
	return f.leaseStore.AcquireEach(ctx, session, holder, names, took)
}

func (f *faultStore) Get(ctx context.Context, names []string) ([]store.Row, error) {
	if f.failAll.Load() {
		return nil, errInjected
	}
	return f.leaseStore.Get(ctx, names)
}

func (f *faultStore) Release(ctx context.Context, session string, terms []store.Term) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.leaseStore.Release(ctx, session, terms)
}

func (f *faultStore) EnsureRows(ctx context.Context, names []string) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.leaseStore.EnsureRows(ctx, names)
}

func (f *faultStore) List(ctx context.Context, prefix string) ([]store.Row, error) {
	if f.failAll.Load() {
		return nil, errInjected
	}
	return f.leaseStore.List(ctx, prefix)
}

func (f *faultStore) SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error) {
	if f.failAll.Load() {
		return false, errInjected
	}
	return f.leaseStore.SetData(ctx, session, t, data, wake)
}

func (f *faultStore) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	if f.failAll.Load() {
		return false, errInjected
	}
	return f.leaseStore.Publish(ctx, name, from, data)
}

func (f *faultStore) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.leaseStore.PruneDead(ctx, prefix, grace)
}

func (f *faultStore) EnsureFloored(ctx context.Context, rows []store.Floored) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.leaseStore.EnsureFloored(ctx, rows)
}

func (f *faultStore) ReleaseFloored(ctx context.Context, session string, terms []store.FlooredTerm) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.leaseStore.ReleaseFloored(ctx, session, terms)
}

func (f *faultStore) PruneFloored(ctx context.Context, prefix string, floor func(string) string, grace time.Duration, limit int) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.leaseStore.PruneFloored(ctx, prefix, floor, grace, limit)
}

// health is a health check a test switches between passing and failing.
type health struct {
	healthy atomic.Bool
	failed  atomic.Int64 // failed checks so far
}

var errSick = errors.New("disk full")

func (h *health) check(ctx context.Context) error {
	if h.healthy.Load() {
		return nil
	}
	h.failed.Add(1)
	return errSick
}

// tryAcquire makes one attempt, bounded by wait.
func tryAcquire(e *Election) (*Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return e.TryAcquire(ctx)
}

// resignConfig renews and retries as often as fastConfig, but trusts a
// term for 5s, so that no term ends by itself while a case runs on a busy
// machine, and a resigning holder's hold-off (one TTL) stays well within
// wait.
func resignConfig() Config {
	cfg := fastConfig()
	cfg.TTL, cfg.Margin = 6*time.Second, time.Second
	return cfg
}

func locks(t testing.TB, c *Coordinator, scope Scope, name string) *Locks {
	t.Helper()
	l, err := c.Locks(scope, name)
	if err != nil {
		t.Fatalf("Locks(%v, %q): %v", scope, name, err)
	}
	return l
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
