package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// TestSemaphoreConformance runs the semaphore cases on every database
// target. Subtest names are <target>/<Case>.
func TestSemaphoreConformance(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCases(t, semaphoreCases)
}

var semaphoreCases = []conformanceCase{
	{"SemaphoreNeverAboveLimit", caseSemaphoreNeverAboveLimit},
	{"SemaphoreTryAcquire", caseSemaphoreTryAcquire},
	{"SemaphoreRun", caseSemaphoreRun},
}

func semaphore(t testing.TB, c *coordination.Coordinator, name string, limit int) *coordination.Semaphore {
	t.Helper()
	s, err := c.Semaphore(coordination.GlobalScope, name, limit)
	if err != nil {
		t.Fatalf("Semaphore(%q, %d): %v", name, limit, err)
	}
	return s
}

// Three processes with three goroutines each contend for a limit of 2:
// never more than 2 holders at once, both slots used, and each slot's
// epochs rise. A trust window no busy machine exhausts (steady): a slot
// that lapsed under load and was taken again would count as a third
// holder, and fail its holder's Check.
func caseSemaphoreNeverAboveLimit(t *testing.T, b *bundle) {
	cfg := steady(b.fastConfig())
	var sems []*coordination.Semaphore
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		sems = append(sems, semaphore(t, start(t, b.db, node, cfg).Coordinator, "exports", 2))
	}
	var inside, most atomic.Int32
	var mu sync.Mutex
	last := make(map[string]int64)
	var wg sync.WaitGroup
	for i := range 9 {
		s := sems[i%3]
		wg.Go(func() {
			for range 4 {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				l, err := s.Acquire(ctx)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				mu.Lock()
				if l.Epoch() <= last[l.Key()] {
					t.Errorf("slot %s granted at epoch %d, not above %d", l.Key(), l.Epoch(), last[l.Key()])
				}
				last[l.Key()] = l.Epoch()
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				if err := l.Check(); err != nil {
					t.Error(err)
				}
				inside.Add(-1)
				if err := l.Release(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > 2 {
		t.Fatalf("%d holders at once; the limit is 2", m)
	}
	if len(last) != 2 {
		t.Fatalf("slots used: %v; want both", last)
	}
}

// TryAcquire takes free slots and is refused once every slot is held;
// a bad limit is refused naming it.
func caseSemaphoreTryAcquire(t *testing.T, b *bundle) {
	cfg := attempting(b)
	a, c := start(t, b.db, "node-a", cfg), start(t, b.db, "node-c", cfg)
	sa, sc := semaphore(t, a.Coordinator, "jobs", 2), semaphore(t, c.Coordinator, "jobs", 2)
	ctx := context.Background()
	l1, err := sa.TryAcquire(ctx)
	check(t, err)
	l2, err := sc.TryAcquire(ctx)
	check(t, err)
	if l1.Key() == l2.Key() {
		t.Fatalf("both grants on slot %s", l1.Key())
	}
	for _, s := range []*coordination.Semaphore{sa, sc} {
		if _, err := s.TryAcquire(ctx); !errors.Is(err, coordination.ErrNotAcquired) {
			t.Fatalf("TryAcquire with every slot held = %v; want ErrNotAcquired", err)
		}
	}
	release(t, l1)
	l3, err := sc.TryAcquire(ctx)
	if err != nil || l3.Key() != l1.Key() || l3.Epoch() <= l1.Epoch() {
		t.Fatalf("TryAcquire after a release = %v, %v; want slot %s above epoch %d", l3, err, l1.Key(), l1.Epoch())
	}
	release(t, l2)
	release(t, l3)
	for _, limit := range []int{0, -1, maxLimit + 1} {
		if _, err := a.Semaphore(coordination.GlobalScope, "bad", limit); !errors.Is(err, coordination.ErrInvalidConfig) {
			t.Fatalf("Semaphore(limit %d) = %v; want ErrInvalidConfig", limit, err)
		}
	}
	if _, err := a.Semaphore(coordination.GlobalScope, "jobs", 3); !errors.Is(err, coordination.ErrInvalidConfig) {
		t.Fatalf("Semaphore with another limit = %v; want ErrInvalidConfig", err)
	}
}

// Run runs the function in at most limit processes at once, and in
// limit of them once they all want to.
func caseSemaphoreRun(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	var running, most atomic.Int32
	full := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 3 {
		s := semaphore(t, start(t, b.db, fmt.Sprintf("node-%d", i), cfg).Coordinator, "limited", 2)
		wg.Go(func() {
			err := s.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n == 2 {
					once.Do(func() { close(full) })
				}
				<-ctx.Done()
				return nil
			}, nil)
			if err != nil {
				t.Error(err)
			}
		})
	}
	select {
	case <-full:
	case <-time.After(wait):
		t.Fatal("never 2 runs at once")
	}
	cancel()
	wg.Wait()
	if m := most.Load(); m != 2 {
		t.Fatalf("at most %d runs at once; want 2", m)
	}
}
