package coordination

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/memstore"
)

// TestRunOptionsChecked: Election.Run and Pool.Run refuse bad options at
// once, naming the field and its value.
func TestRunOptionsChecked(t *testing.T) {
	c, stop := bubbleCoordinator(t, memstore.New(), fastConfig())
	defer stop()
	e, err := c.Election(ClusterScope, "opts")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Pool(GlobalScope, "opts", PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	never := func(context.Context, *Lease) error { t.Error("work called"); return nil }
	for _, tc := range []struct {
		opts RunOptions[*Lease]
		want string
	}{
		{RunOptions[*Lease]{Backoff: -time.Second}, "RunOptions.Backoff (-1s)"},
		{RunOptions[*Lease]{MaxBackoff: -time.Second}, "RunOptions.MaxBackoff (-1s)"},
		{RunOptions[*Lease]{Backoff: time.Minute, MaxBackoff: time.Second}, "MaxBackoff (1s) must be at least Backoff (1m0s)"},
	} {
		err := e.Run(context.Background(), never, &tc.opts)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Election.Run(%+v) = %v, want ErrInvalidConfig naming %q", tc.opts, err, tc.want)
		}
	}
	err = p.Run(context.Background(), func(context.Context, Assignment) error { return nil }, &RunOptions[Assignment]{Backoff: -1})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "RunOptions.Backoff") {
		t.Errorf("Pool.Run with a negative Backoff = %v, want ErrInvalidConfig", err)
	}
	sp, err := c.Pool(GlobalScope, "opts-sticky", PoolConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	err = sp.Run(context.Background(), func(context.Context, Assignment) error { return nil },
		&RunOptions[Assignment]{Backoff: time.Minute, MaxBackoff: time.Second})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "MaxBackoff (1s) must be at least Backoff (1m0s)") {
		t.Errorf("Pool.Run of a sticky pool with MaxBackoff below Backoff = %v, want ErrInvalidConfig", err)
	}
}

// TestStickyPoolRunOptions: Pool.Run of a sticky pool calls OnTermStart for each
// partition before its work, OnError instead of the default report (no
// EventError) with the partition that failed, OnTermEnd with nil for a
// partition whose work finished and with the context's cause for one
// stopped by the end of the run; RetryBusy waits out another run of the
// same pool instead of returning ErrBusy.
func TestStickyPoolRunOptions(t *testing.T) {
	c, stop := bubbleCoordinator(t, memstore.New(), fastConfig())
	defer stop()
	events := c.Subscribe(t.Context(), 256)
	p, err := c.Pool(GlobalScope, "sticky-callbacks", PoolConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Another run of the pool holds it first: busy until it returns.
	firstCtx, firstStop := context.WithCancel(context.Background())
	firstUp, firstDone := make(chan struct{}, 2), make(chan error, 1)
	go func() {
		firstDone <- p.Run(firstCtx, func(ctx context.Context, _ Assignment) error {
			firstUp <- struct{}{}
			<-ctx.Done()
			return nil
		}, nil)
	}()
	for range 2 {
		select {
		case <-firstUp:
		case <-time.After(wait):
			t.Fatal("the first run did not start its partitions")
		}
	}
	if err := p.Run(context.Background(), func(context.Context, Assignment) error { return nil }, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("Pool.Run of a busy sticky pool without RetryBusy = %v, want ErrBusy", err)
	}

	type call struct {
		what      string
		partition int
		err       error
	}
	calls := make(chan call, 64)
	errBoom := errors.New("boom")
	var mu sync.Mutex
	tries := map[int]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- p.Run(ctx, func(ctx context.Context, pt Assignment) error {
			mu.Lock()
			tries[pt.Index]++
			n := tries[pt.Index]
			mu.Unlock()
			calls <- call{"work", pt.Index, nil}
			switch {
			case pt.Index == 0 && n == 1:
				return errBoom
			case pt.Index == 0:
				return nil // finished: idle until it moves away and back
			}
			<-ctx.Done()
			return nil
		}, &RunOptions[Assignment]{
			Backoff:     10 * time.Millisecond,
			RetryBusy:   true,
			OnTermStart: func(pt Assignment) { calls <- call{"start", pt.Index, nil} },
			OnTermEnd:   func(pt Assignment, cause error) { calls <- call{"end", pt.Index, cause} },
			OnError: func(pt Assignment, err error, _ time.Duration) {
				if pt.Key == "" {
					calls <- call{"busy", -1, err}
					return
				}
				calls <- call{"error", pt.Index, err}
			},
		})
	}()
	next := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(wait):
			t.Fatal("no callback")
		}
		return call{}
	}
	if got := next(); got.what != "busy" || !errors.Is(got.err, ErrBusy) {
		t.Fatalf("first callback = %+v, want OnError with ErrBusy and the zero Partition", got)
	}
	firstStop()
	if err := <-firstDone; err != nil {
		t.Fatalf("the first Pool.Run = %v", err)
	}
	// Per partition, in order: 0 starts, fails, works again and ends
	// with nil; 1 starts and works.
	byPart := map[int][]call{}
	for len(byPart[0]) < 5 || len(byPart[1]) < 2 {
		c := next()
		if c.what == "busy" {
			continue
		}
		byPart[c.partition] = append(byPart[c.partition], c)
	}
	want0 := []string{"start", "work", "error", "work", "end"}
	for i, c := range byPart[0] {
		if c.what != want0[i] {
			t.Fatalf("partition 0's callbacks %+v, want %v", byPart[0], want0)
		}
	}
	if !errors.Is(byPart[0][2].err, errBoom) || byPart[0][4].err != nil {
		t.Fatalf("partition 0's callbacks %+v: want its error boom and its end with a nil cause", byPart[0])
	}
	if byPart[1][0].what != "start" || byPart[1][1].what != "work" {
		t.Fatalf("partition 1's callbacks %+v, want start and work", byPart[1])
	}
	cancel()
	if got := next(); got.what != "end" || got.partition != 1 || got.err == nil {
		t.Fatalf("callback after cancel = %+v, want partition 1's end with a cause", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Pool.Run = %v, want nil", err)
		}
	case <-time.After(wait):
		t.Fatal("Pool.Run did not return")
	}
	for _, ev := range pendingEvents(events) {
		if ev.Kind == EventError && (errors.Is(ev.Err, errBoom) || errors.Is(ev.Err, ErrBusy)) {
			t.Fatalf("a failure OnError took was also emitted: %+v", ev)
		}
	}
}

// TestRunOptionsCallbacks: Election.Run calls OnTermStart before the work,
// OnError instead of the default report (no EventError), OnTermEnd after
// the release with ErrReleased for finished work; RetryBusy waits out a
// Campaign of the same election instead of returning ErrBusy.
func TestRunOptionsCallbacks(t *testing.T) {
	c, stop := bubbleCoordinator(t, memstore.New(), fastConfig())
	defer stop()
	events := c.Subscribe(t.Context(), 256)
	e, err := c.Election(ClusterScope, "callbacks")
	if err != nil {
		t.Fatal(err)
	}
	held, err := e.Campaign(context.Background()) // busy until released
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		what  string
		epoch int64
		err   error
	}
	calls := make(chan call, 64)
	errBoom := errors.New("boom")
	n := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(ctx context.Context, l *Lease) error {
			n++
			calls <- call{"work", l.Epoch(), nil}
			if n == 1 {
				return errBoom
			}
			if n == 2 {
				return nil
			}
			<-ctx.Done()
			return nil
		}, &RunOptions[*Lease]{
			Backoff:     10 * time.Millisecond,
			RetryBusy:   true,
			OnTermStart: func(l *Lease) { calls <- call{"start", l.Epoch(), nil} },
			OnTermEnd: func(l *Lease, cause error) {
				if l.Valid() {
					t.Error("OnTermEnd called before the release")
				}
				calls <- call{"end", l.Epoch(), cause}
			},
			OnError: func(l *Lease, err error, _ time.Duration) {
				var epoch int64
				if l != nil {
					epoch = l.Epoch()
				}
				calls <- call{"error", epoch, err}
			},
		})
	}()
	next := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(wait):
			t.Fatal("no callback")
		}
		return call{}
	}
	if got := next(); got.what != "error" || got.epoch != 0 || !errors.Is(got.err, ErrBusy) {
		t.Fatalf("first callback = %+v, want OnError with ErrBusy and no term", got)
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []call
	for len(got) < 6 {
		if c := next(); c.what != "error" || !errors.Is(c.err, ErrBusy) {
			got = append(got, c)
		}
	}
	first := got[0].epoch
	want := []string{"start", "work", "error", "work", "end", "start"}
	for i, c := range got {
		if c.what != want[i] {
			t.Fatalf("callbacks %+v, want %v", got, want)
		}
	}
	if got[1].epoch != first || !errors.Is(got[2].err, errBoom) || got[2].epoch != first || got[4].epoch != first ||
		!errors.Is(got[4].err, ErrReleased) || got[5].epoch <= first {
		t.Fatalf("callbacks %+v: want one term's start, work, its error, work, its end with ErrReleased, and a new term", got)
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
	for _, ev := range pendingEvents(events) {
		if ev.Kind == EventError && (errors.Is(ev.Err, errBoom) || errors.Is(ev.Err, ErrBusy)) {
			t.Fatalf("a failure OnError took was also emitted: %+v", ev)
		}
	}
}

// pendingEvents returns the events already delivered on ch, without
// waiting.
func pendingEvents(ch <-chan Event) []Event {
	var out []Event
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}
