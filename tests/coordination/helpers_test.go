package coordination_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/memstore"
)

// interval is one member's work on one index of one generation.
type interval struct {
	member     string
	gen        int64
	index      int
	count      int
	members    []string
	start, end time.Time // end is zero while running
}

// memberInstance returns the instance id of a member id: a process that
// joins a pool again (after losing its membership on a loaded machine)
// does so under "<instance>.<n>" (memberID).
func memberInstance(id string) string {
	instance, _, _ := strings.Cut(id, ".")
	return instance
}

// recorder collects work intervals from every member of a pool.
type recorder struct {
	mu   sync.Mutex
	ivs  []*interval
	wake chan struct{}
}

func newRecorder() *recorder { return &recorder{wake: make(chan struct{}, 1)} }

// fn returns the AssignmentFunc of one member.
func (r *recorder) fn(member string) coordination.AssignmentFunc {
	return func(ctx context.Context, a coordination.Assignment) error {
		iv := &interval{member: member, gen: a.Generation, index: a.Index, count: a.Count, members: a.Members, start: time.Now()}
		r.mu.Lock()
		r.ivs = append(r.ivs, iv)
		r.mu.Unlock()
		r.poke()
		<-ctx.Done()
		r.mu.Lock()
		iv.end = time.Now()
		r.mu.Unlock()
		r.poke()
		return nil
	}
}

func (r *recorder) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// running returns the intervals still running.
func (r *recorder) running() []interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []interval
	for _, iv := range r.ivs {
		if iv.end.IsZero() {
			out = append(out, *iv)
		}
	}
	return out
}

// settledAt reports whether exactly the given members work, all in one
// generation with the right count.
func (r *recorder) settled(members int) (int64, bool) {
	run := r.running()
	if len(run) != members {
		return 0, false
	}
	for _, iv := range run {
		if iv.gen != run[0].gen || iv.count != members {
			return 0, false
		}
	}
	return run[0].gen, true
}

// waitSettled waits until members members work in one generation.
func (r *recorder) waitSettled(t testing.TB, members int, limit time.Duration) int64 {
	t.Helper()
	deadline := time.After(limit)
	for {
		if g, ok := r.settled(members); ok {
			return g
		}
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("pool did not settle on %d members within %v; running: %+v", members, limit, r.running())
		}
	}
}

// check asserts the pool's safety properties over every interval: no
// index held by two members at overlapping times; within a generation the
// indexes are distinct, cover 0..count-1, and count matches the member
// list they came from.
func (r *recorder) check(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	ivs := make([]interval, len(r.ivs))
	for i, iv := range r.ivs {
		ivs[i] = *iv
	}
	r.mu.Unlock()
	end := func(iv interval) time.Time {
		if iv.end.IsZero() {
			return time.Now().Add(time.Hour)
		}
		return iv.end
	}
	for i, a := range ivs {
		if a.count != len(a.members) || a.index < 0 || a.index >= a.count || memberInstance(a.members[a.index]) != a.member {
			t.Fatalf("generation %d: %s has index %d of %d, list %v", a.gen, a.member, a.index, a.count, a.members)
		}
		for _, b := range ivs[i+1:] {
			if a.index == b.index && a.member != b.member && a.start.Before(end(b)) && b.start.Before(end(a)) {
				t.Fatalf("index %d held twice at once: %s (gen %d, %v..%v) and %s (gen %d, %v..%v)",
					a.index, a.member, a.gen, a.start, a.end, b.member, b.gen, b.start, b.end)
			}
			if a.gen == b.gen && (a.index == b.index) != (a.member == b.member) {
				t.Fatalf("generation %d: %s and %s disagree on index %d", a.gen, a.member, b.member, a.index)
			}
			if a.gen == b.gen && !slices.Equal(a.members, b.members) {
				t.Fatalf("generation %d has two member lists: %v and %v", a.gen, a.members, b.members)
			}
		}
	}
	// Every generation that ran to completion covered all its indexes.
	byGen := map[int64]map[int]bool{}
	counts := map[int64]int{}
	for _, iv := range ivs {
		if byGen[iv.gen] == nil {
			byGen[iv.gen] = map[int]bool{}
		}
		byGen[iv.gen][iv.index] = true
		counts[iv.gen] = iv.count
	}
	gens := make([]int64, 0, len(byGen))
	for g := range byGen {
		gens = append(gens, g)
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	for _, g := range gens {
		if len(byGen[g]) != counts[g] {
			t.Logf("generation %d: %d of %d indexes ran (superseded before the rest started)", g, len(byGen[g]), counts[g])
		}
	}
}

// poolNode is one process of a pool test on fake time.
type poolNode struct {
	c      *coordination.Coordinator
	fs     *faultStore
	cancel context.CancelFunc // stops the coordinator
	leave  context.CancelFunc // stops Pool.Run only (graceful leave)
	done   chan struct{}      // Pool.Run returned
}

func bubbleCoordinator(t *testing.T, ms *memstore.Store, cfg coordination.Config) (*coordination.Coordinator, func()) {
	t.Helper()
	cfg.Logger = zaptest.NewLogger(t)
	c := newCoordinator(t, ms, testIdentity(t, "node-a"), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Run(ctx) }()
	<-c.Ready()
	return c, func() {
		cancel()
		<-c.Done()
	}
}
