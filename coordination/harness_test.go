package coordination

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/identity"
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

var errInjected = errors.New("injected fault")

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

// heldTokens returns the tokens of the leases c holds and trusts now.
func heldTokens(c *Coordinator) []Token {
	var out []Token
	c.terms.query(func(st *termState) { out = st.tokens() })
	return out
}
