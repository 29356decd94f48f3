package coordination

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
)

// TestUnhealthyNeverAcquires: a process whose checks fail, panic or
// overrun HealthInterval never takes a lease, and TryAcquire says why.
//
// It runs on real time, with short intervals: "never" holds whatever the
// scheduler does. (On fake time, go1.26.8's race detector was seen to
// crash the test binary with a SIGSEGV inside the runtime, about once in
// two hundred runs of this test, in the bubble's goroutine bookkeeping.)
func TestUnhealthyNeverAcquires(t *testing.T) {
	t.Parallel() // see runCasesOn
	for name, check := range map[string]func(context.Context) error{
		"error":   func(context.Context) error { return errSick },
		"panic":   func(context.Context) error { panic("boom") },
		"overrun": func(ctx context.Context) error { <-ctx.Done(); return nil },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ms := memstore.New()
			cfg := fastConfig()
			cfg.HealthCheck, cfg.HealthInterval = check, 20*time.Millisecond
			c, stop := bubbleCoordinator(t, ms, cfg)
			defer stop()
			e, err := c.Election(ClusterScope, "never")
			if err != nil {
				t.Fatal(err)
			}
			ns, err := c.Locks(ClusterScope, "never")
			if err != nil {
				t.Fatal(err)
			}
			// Many campaign rounds (RetryInterval is 100ms) and health checks.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			locked := make(chan error, 1)
			go func() {
				l, err := ns.Lock(ctx, "k") // its first attempt is the caller's own
				if l != nil {
					err = fmt.Errorf("a lease of epoch %d", l.Epoch())
				}
				locked <- err
			}()
			if l, err := e.Campaign(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Campaign = %v, %v; want no lease within 2s", l, err)
			}
			if err := <-locked; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock = %v; want no lease within 2s", err)
			}
			if r, ok := ms.Row(lockRow(ns.Key(), "k")); ok && r.Holder != "" {
				t.Fatalf("lock row held by %q", r.Holder)
			}
			if _, err := e.TryAcquire(context.Background()); !errors.Is(err, ErrUnhealthy) {
				t.Fatalf("TryAcquire = %v, want ErrUnhealthy", err)
			}
			if r, ok := ms.Row(e.Key()); ok && r.Holder != "" {
				t.Fatalf("row held by %q", r.Holder)
			}
		})
	}
}

// TestStepDownAfterFailures: a leader keeps its term through
// HealthFailures-1 failed checks, steps down at the next, campaigns no
// more while the checks fail, and takes the lease again once one passes.
func TestStepDownAfterFailures(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		h := &health{}
		h.healthy.Store(true)
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{HealthCheck: h.check, HealthInterval: 10 * time.Second, HealthFailures: 3})
		defer stop()
		e, err := c.Election(ClusterScope, "stepdown")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		leases := make(chan *Lease, 4)
		causes := make(chan error, 4)
		runDone := make(chan struct{})
		go func() {
			defer close(runDone)
			_ = e.Run(ctx, func(ctx context.Context, l *Lease) error {
				leases <- l
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			}, nil)
		}()
		l := <-leases

		h.healthy.Store(false)
		for h.failed.Load() < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		if !l.Valid() {
			t.Fatalf("the term ended after 2 failed checks, want it kept until 3")
		}
		for h.failed.Load() < 3 {
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		select {
		case cause := <-causes:
			if !errors.Is(cause, ErrUnhealthy) {
				t.Fatalf("cause = %v, want ErrUnhealthy", cause)
			}
		default:
			t.Fatalf("the term did not end after 3 failed checks")
		}
		if r, _ := ms.Row(e.Key()); r.Holder != "" {
			t.Fatalf("row held by %q after the step-down, want it released", r.Holder)
		}

		time.Sleep(time.Minute)
		select {
		case l2 := <-leases:
			t.Fatalf("took the lease at epoch %d while unhealthy", l2.Epoch())
		default:
		}

		h.healthy.Store(true)
		if l2 := <-leases; l2.Epoch() != l.Epoch()+1 {
			t.Fatalf("new term at epoch %d, want %d", l2.Epoch(), l.Epoch()+1)
		}
		cancel()
		<-runDone
	})
}

// TestStepDownLeavesPools: a pool member that steps down leaves the pool,
// whose work moves to the healthy member, and joins again once a check
// passes.
func TestStepDownLeavesPools(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		h := &health{}
		h.healthy.Store(true)
		type assignment struct {
			node  int
			count int
		}
		got := make(chan assignment, 64)
		var stops []func()
		defer func() {
			for _, stop := range stops {
				stop()
			}
		}()
		for i, check := range []func(context.Context) error{h.check, nil} {
			cfg := Config{Logger: zaptest.NewLogger(t), HealthCheck: check, HealthInterval: 10 * time.Second, HealthFailures: 2}.withDefaults()
			c := newCoordinator(ms, testIdentity(t, fmt.Sprintf("node-%d", i)), cfg)
			ctx, cancel := context.WithCancel(context.Background())
			go func() { _ = c.Run(ctx) }()
			<-c.Ready()
			p, err := c.Pool(GlobalScope, "orders", PoolConfig{})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = p.Run(ctx, func(ctx context.Context, a Assignment) error {
					got <- assignment{node: i, count: a.Count}
					<-ctx.Done()
					return nil
				}, nil)
			}()
			stops = append(stops, func() { cancel(); <-done; <-c.Done() })
		}
		// latest is the member count of each node's latest assignment, as
		// read from got; the members start in either order.
		latest := map[int]int{}
		// await waits until node's latest assignment is among count
		// members.
		await := func(node, count int) {
			t.Helper()
			deadline := time.After(10 * time.Minute)
			for latest[node] != count {
				select {
				case a := <-got:
					latest[a.node] = a.count
				case <-deadline:
					t.Fatalf("node-%d got no assignment among %d members (latest assignments: %v)", node, count, latest)
				}
			}
		}
		await(0, 2)
		await(1, 2)

		h.healthy.Store(false)
		await(1, 1) // node-0 left: node-1 works alone
		time.Sleep(time.Minute)
		synctest.Wait()
		for len(got) > 0 {
			if a := <-got; a.node == 0 {
				t.Fatalf("node-0 was assigned work while unhealthy: %+v", a)
			}
		}

		h.healthy.Store(true)
		delete(latest, 0) // its assignment among 2 ended when it left
		await(0, 2)
	})
}
