package coordination

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// leader runs Election.Run for one election of a coordinator and reports
// each term it starts and how its work ended.
type runner struct {
	terms chan int64 // the epoch of each term whose work started
	ended chan error // the cause of each term's work context
	stop  context.CancelFunc
	done  chan struct{}
}

// runLeader runs e.Run until the test ends.
func runLeader(t testing.TB, e *Election) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ld := &runner{terms: make(chan int64, 16), ended: make(chan error, 16), stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(ld.done)
		_ = e.Run(ctx, func(ctx context.Context, l *Lease) error {
			ld.terms <- l.Epoch()
			<-ctx.Done()
			ld.ended <- context.Cause(ctx)
			return ctx.Err()
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ld.done:
		case <-time.After(wait):
			t.Errorf("Election.Run of %s did not return within %v", e.Name(), wait)
		}
	})
	return ld
}

func recvTerm(t testing.TB, ch <-chan int64, who string) int64 {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(wait):
		t.Fatalf("%s started no term within %v", who, wait)
	}
	return 0
}

// noTerm fails the test when ch delivers a term within d.
func noTerm(t testing.TB, ch <-chan int64, who string, d time.Duration) {
	t.Helper()
	select {
	case e := <-ch:
		t.Fatalf("%s started a term at epoch %d, want none", who, e)
	case <-time.After(d):
	}
}

// operator returns a coordinator that is never run, as a command-line
// tool's would be.
func operator(t testing.TB, b *bundle) *Coordinator {
	t.Helper()
	cfg := fastConfig()
	cfg.Logger = zaptest.NewLogger(t)
	c, err := New(b.db, testIdentity(t, "operator"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// caseResignHandsOver: a resign request ends the holder's term with
// ErrResigned; its work returns, the lease is released, and the follower
// takes it at the next epoch while the old holder holds off.
func caseResignHandsOver(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", fastConfig())
	bb := start(t, b.db, "node-b", fastConfig())
	ea := election(t, a.Coordinator, ClusterScope, "reports")
	la := runLeader(t, ea)
	epoch := recvTerm(t, la.terms, "A")
	lb := runLeader(t, election(t, bb.Coordinator, ClusterScope, "reports"))
	events, unsubscribe := a.Subscribe(64)
	defer unsubscribe()

	info, err := operator(t, b).Resign(context.Background(), ea.Name(), ResignOptions{})
	if err != nil {
		t.Fatalf("Resign: %v", err)
	}
	if info.Holder != a.Holder() || info.Epoch != epoch || !info.Live || info.Name != ea.Name() {
		t.Fatalf("Resign returned %+v, want %s live at epoch %d", info, a.Holder(), epoch)
	}
	select {
	case cause := <-la.ended:
		if !errors.Is(cause, ErrResigned) || !EndOfTerm(cause) {
			t.Fatalf("A's work ended with %v, want ErrResigned", cause)
		}
	case <-time.After(wait):
		t.Fatalf("A's work was not cancelled within %v", wait)
	}
	ev := recvEvent(t, events, kindIs(EventLost, ea.Name()))
	if !errors.Is(ev.Err, ErrResigned) || ev.Epoch != epoch {
		t.Fatalf("EventLost = %+v, want ErrResigned at epoch %d", ev, epoch)
	}
	if got := recvTerm(t, lb.terms, "B"); got != epoch+1 {
		t.Fatalf("B took the lease at epoch %d, want %d", got, epoch+1)
	}
	if r := row(t, b.db, ea.Name()); r.Holder != bb.Holder() || r.Epoch != epoch+1 || r.ResignEpoch != 0 {
		t.Fatalf("row = %+v, want B at epoch %d with no request left", r, epoch+1)
	}
	noTerm(t, la.terms, "A", 3*fastConfig().RetryInterval)
}
