package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestSlotsTakeFailsOnceCtxIsDone(t *testing.T) {
	s := make(slots, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.take(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("take on a done ctx with a slot free = %v, want context.Canceled", err)
	}
	if len(s) != 0 {
		t.Fatalf("%d slots taken after a failed take, want 0", len(s))
	}
}

func TestSlotsTakeWaitsForAGive(t *testing.T) {
	s := make(slots, 1)
	if err := s.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- s.take(context.Background()) }()
	select {
	case err := <-got:
		t.Fatalf("take returned %v with no slot free", err)
	case <-time.After(50 * time.Millisecond):
	}
	s.give()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take did not return after a give")
	}
}

// A caller taking several general slots that gives up gives back those it
// had, and two such callers at once both end up with all of them in turn.
func TestTakeGeneral(t *testing.T) {
	g := &gate{general: make(slots, 3)}
	if err := g.general.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.takeGeneral(ctx, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("takeGeneral with a slot held = %v, want context.DeadlineExceeded", err)
	}
	if len(g.general) != 1 {
		t.Fatalf("%d slots taken after a failed takeGeneral, want the 1 held before", len(g.general))
	}
	g.general.give()

	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			if err := g.takeGeneral(context.Background(), 3); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
			g.general.giveN(3)
		})
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("two callers taking every slot did not both get them")
	}
	if len(g.general) != 0 {
		t.Fatalf("%d slots still taken, want 0", len(g.general))
	}
}
