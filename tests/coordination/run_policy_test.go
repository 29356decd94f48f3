package coordination_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// TestRunPolicy checks the one policy Election.Run and Pool.Run share with
// the workers package: a panic or an error while the term is valid is
// reported and the work is called again under the same term; a nil return
// ends the term's work, and the lease is released.
func TestRunPolicy(t *testing.T) {
	runCases(t, []conformanceCase{
		{"ElectionRunRestartsUnderTheSameTerm", caseElectionRunPolicy},
		{"PoolRunRestartsUnderTheSameAssignment", casePoolRunPolicy},
	})
}

// policyConfig renews often but trusts long, so no term ends by itself
// while the case runs, however busy the machine.
func policyConfig() coordination.Config {
	cfg := steady(fastConfig())
	return cfg
}

func recvEpoch(t *testing.T, ch <-chan int64) int64 {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(wait):
		t.Fatalf("work was not called within %v", wait)
	}
	return 0
}

func caseElectionRunPolicy(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", policyConfig())
	events := r.Subscribe(t.Context(), 64)
	e := election(t, r.Coordinator, coordination.ClusterScope, "policy")
	errBoom := errors.New("boom")
	calls := make(chan int64, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	n := 0
	go func() {
		done <- e.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
			n++
			calls <- l.Epoch()
			switch n {
			case 1:
				panic("kaboom")
			case 2:
				return errBoom
			case 3:
				return nil // the work of this term is done
			}
			<-ctx.Done()
			return nil
		}, nil)
	}()
	first := recvEpoch(t, calls)
	ev := recvEvent(t, events, kindIs(coordination.EventError, e.Key()))
	var pe *coordination.PanicError
	if !errors.As(ev.Err, &pe) || pe.Value != "kaboom" || !errors.Is(ev.Err, coordination.ErrPanicked) || ev.Epoch != first {
		t.Fatalf("first error event = %+v, want a *PanicError of \"kaboom\" at epoch %d", ev, first)
	}
	if got := recvEpoch(t, calls); got != first {
		t.Fatalf("called again at epoch %d after a panic, want the same term %d", got, first)
	}
	if ev := recvEvent(t, events, kindIs(coordination.EventError, e.Key())); !errors.Is(ev.Err, errBoom) {
		t.Fatalf("second error event = %+v, want %v", ev, errBoom)
	}
	if got := recvEpoch(t, calls); got != first {
		t.Fatalf("called again at epoch %d after an error, want the same term %d", got, first)
	}
	// The nil return releases the term; the next call is a new term.
	if ev := recvEvent(t, events, kindIs(coordination.EventReleased, e.Key())); ev.Epoch != first {
		t.Fatalf("released epoch %d, want %d", ev.Epoch, first)
	}
	if got := recvEpoch(t, calls); got <= first {
		t.Fatalf("called at epoch %d after finishing epoch %d, want a new term", got, first)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Election.Run = %v, want nil", err)
		}
	case <-time.After(wait):
		t.Fatal("Election.Run did not return")
	}
}

func casePoolRunPolicy(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", policyConfig())
	events := r.Subscribe(t.Context(), 64)
	p, err := r.Pool(coordination.GlobalScope, "policy", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan int64, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	n := 0
	go func() {
		done <- p.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
			n++
			calls <- a.Generation
			if n == 1 {
				panic("kaboom")
			}
			<-ctx.Done()
			return nil
		}, nil)
	}()
	gen := recvEpoch(t, calls)
	ev := recvEvent(t, events, func(ev coordination.Event) bool {
		return ev.Kind == coordination.EventError && errors.Is(ev.Err, coordination.ErrPanicked)
	})
	var pe *coordination.PanicError
	if !errors.As(ev.Err, &pe) || pe.Value != "kaboom" {
		t.Fatalf("error event = %+v, want a *PanicError of \"kaboom\"", ev)
	}
	if got := recvEpoch(t, calls); got != gen {
		t.Fatalf("called again in generation %d after a panic, want the same generation %d", got, gen)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Pool.Run = %v, want nil", err)
		}
	case <-time.After(wait):
		t.Fatal("Pool.Run did not return")
	}
}
