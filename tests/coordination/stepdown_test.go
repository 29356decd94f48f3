package coordination_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

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

// caseStepDownHandsOver: a leader whose health checks fail steps down
// after HealthFailures of them, a healthy follower takes over, and the old
// leader campaigns again once a check passes.
func caseStepDownHandsOver(t *testing.T, b *bundle) {
	h := &health{}
	h.healthy.Store(true)
	cfg := resignConfig()
	cfg.HealthCheck, cfg.HealthInterval, cfg.HealthFailures = h.check, 100*time.Millisecond, 2
	// A's TryAcquire at the end is one round, bounded by three renew
	// intervals: 2 s each, so that a statement queued behind a busy core
	// (Galera's commits wait for the other nodes) fits it.
	cfg.RenewInterval = 2 * time.Second
	a := start(t, b.db, "node-a", cfg)
	ea := election(t, a.Coordinator, coordination.ClusterScope, "stepdown")
	la := runLeader(t, ea)
	epoch := recvTerm(t, la.terms, "A")
	bb := start(t, b.db, "node-b", resignConfig())
	lb := runLeader(t, election(t, bb.Coordinator, coordination.ClusterScope, "stepdown"))
	events := a.Subscribe(t.Context(), 64)

	h.healthy.Store(false)
	select {
	case cause := <-la.ended:
		if !errors.Is(cause, coordination.ErrUnhealthy) || !errors.Is(cause, errSick) || !endOfTerm(cause) {
			t.Fatalf("A's work ended with %v, want ErrUnhealthy wrapping the check's error", cause)
		}
	case <-time.After(wait):
		t.Fatalf("A did not step down within %v", wait)
	}
	if n := h.failed.Load(); n < 2 {
		t.Fatalf("A stepped down after %d failed checks, want at least 2", n)
	}
	ev := recvEvent(t, events, func(ev coordination.Event) bool {
		return ev.Kind == coordination.EventError && errors.Is(ev.Err, coordination.ErrUnhealthy)
	})
	if ev.Key != "" {
		t.Fatalf("step-down event = %+v, want one not tied to a lease", ev)
	}
	if got := recvTerm(t, lb.terms, "B"); got != epoch+1 {
		t.Fatalf("B took the lease at epoch %d, want %d", got, epoch+1)
	}
	other := election(t, a.Coordinator, coordination.ClusterScope, "other")
	if _, err := other.TryAcquire(context.Background()); !errors.Is(err, coordination.ErrUnhealthy) {
		t.Fatalf("TryAcquire while unhealthy = %v, want ErrUnhealthy", err)
	}

	h.healthy.Store(true)
	deadline := time.Now().Add(wait)
	for {
		l, err := other.TryAcquire(context.Background())
		if err == nil {
			release(t, l)
			break
		}
		if !errors.Is(err, coordination.ErrUnhealthy) || time.Now().After(deadline) {
			t.Fatalf("TryAcquire after the checks pass again = %v, want a lease within %v", err, wait)
		}
		time.Sleep(b.fastConfig().RetryInterval)
	}
}
