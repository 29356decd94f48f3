package coordination

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination/internal/membership"
	"github.com/leasehold/leasehold/internal/faketime"
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
func (r *recorder) fn(member string) AssignmentFunc {
	return func(ctx context.Context, a Assignment) error {
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
	c      *Coordinator
	fs     *faultStore
	cancel context.CancelFunc // stops the coordinator
	leave  context.CancelFunc // stops Pool.Run only (graceful leave)
	done   chan struct{}      // Pool.Run returned
}

func TestPoolRebalanceOnFakeTime(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		cfg := Config{Logger: zaptest.NewLogger(t)}.withDefaults() // TTL 15s, poll = retry 2s
		rec := newRecorder()
		var nodes []*poolNode
		add := func(i int) *poolNode {
			fs := &faultStore{leaseStore: ms}
			c := newCoordinator(fs, testIdentity(t, fmt.Sprintf("node-%d", i)), cfg)
			ctx, cancel := context.WithCancel(context.Background())
			go func() { _ = c.Run(ctx) }()
			<-c.Ready()
			p, err := c.Pool(GlobalScope, "orders", PoolConfig{})
			if err != nil {
				t.Fatal(err)
			}
			pctx, leave := context.WithCancel(ctx)
			n := &poolNode{c: c, fs: fs, cancel: cancel, leave: leave, done: make(chan struct{})}
			go func() {
				defer close(n.done)
				_ = p.Run(pctx, rec.fn(c.id.Instance))
			}()
			nodes = append(nodes, n)
			return n
		}
		defer func() {
			for _, n := range nodes {
				n.cancel()
				<-n.done
				<-n.c.Done()
			}
		}()

		for i := range 3 {
			add(i)
		}
		g := rec.waitSettled(t, 3, time.Minute)
		poll := cfg.RetryInterval

		// On fake time statements and the work's return take no time, so
		// the bounds hold exactly.
		// Join: two more members.
		joined := time.Now()
		add(3)
		add(4)
		g2 := rec.waitSettled(t, 5, time.Minute)
		took := time.Since(joined)
		t.Logf("join: generation %d -> %d in %v (poll %v)", g, g2, took, poll)
		if b := RebalanceBound(poll); took > b {
			t.Errorf("rebalance after join took %v, want within RebalanceBound %v", took, b)
		}

		// Graceful leave.
		left := time.Now()
		nodes[1].leave()
		<-nodes[1].done
		g3 := rec.waitSettled(t, 4, time.Minute)
		took = time.Since(left)
		t.Logf("graceful leave: generation %d -> %d in %v", g2, g3, took)
		if b := RebalanceBound(poll); took > b {
			t.Errorf("rebalance after graceful leave took %v, want within RebalanceBound %v", took, b)
		}

		// Crash: node 2 loses the database for good, at a random moment
		// between its renewals.
		time.Sleep(time.Duration(rand.Int64N(int64(cfg.RenewInterval))))
		crashed := time.Now()
		nodes[2].fs.failAll.Store(true)
		g4 := rec.waitSettled(t, 3, 5*time.Minute)
		took = time.Since(crashed)
		t.Logf("crash: generation %d -> %d in %v (TTL %v)", g3, g4, took, cfg.TTL)
		if b := CrashRebalanceBound(cfg.TTL, poll); took > b {
			t.Errorf("rebalance after a crash took %v, want within CrashRebalanceBound %v", took, b)
		}

		// Dead member rows are pruned when membership changes, once they
		// have been dead for ten TTLs: the leaver's released row and the
		// crashed member's alike. Never sooner, so that a row a member is
		// about to acquire is never deleted under it.
		memberRow := func(n *poolNode) string { return poolRowsFor("global/orders").Member(n.c.id.Instance) }
		hasRow := func(name string) bool {
			_, ok := ms.Row(name)
			return ok
		}
		if !hasRow(memberRow(nodes[1])) {
			t.Errorf("the leaver's released row was pruned before its grace period")
		}
		if !hasRow(memberRow(nodes[2])) {
			t.Errorf("the crashed member's row was pruned before its grace period")
		}
		time.Sleep(deadMemberGrace * cfg.TTL) // fake time
		add(5)
		rec.waitSettled(t, 4, time.Minute)
		for _, n := range nodes[1:3] {
			if hasRow(memberRow(n)) {
				t.Errorf("the dead member row %s was not pruned after %d TTLs", memberRow(n), deadMemberGrace)
			}
		}
		rec.check(t)
	})
}

// TestPoolChurnOnFakeTime drives a pool through many random joins,
// graceful leaves and crashes on fake time and checks every interval: a
// missing or leaky barrier shows up as an index held twice at once.
func TestPoolChurnOnFakeTime(t *testing.T) {
	for seed := range int64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			faketime.Test(t, func(t *testing.T) { poolChurn(t, seed) })
		})
	}
}

func poolChurn(t *testing.T, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	ms := memstore.New()
	cfg := Config{Logger: zap.NewNop()}.withDefaults()
	rec := newRecorder()
	var nodes []*poolNode
	var alive []*poolNode
	add := func() {
		fs := &faultStore{leaseStore: ms}
		c := newCoordinator(fs, testIdentity(t, fmt.Sprintf("node-%d", len(nodes))), cfg)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = c.Run(ctx) }()
		<-c.Ready()
		p, _ := c.Pool(GlobalScope, "churn", PoolConfig{})
		pctx, leave := context.WithCancel(ctx)
		n := &poolNode{c: c, fs: fs, cancel: cancel, leave: leave, done: make(chan struct{})}
		go func() {
			defer close(n.done)
			_ = p.Run(pctx, rec.fn(c.id.Instance))
		}()
		nodes = append(nodes, n)
		alive = append(alive, n)
	}
	defer func() {
		for _, n := range nodes {
			n.fs.failAll.Store(false)
			n.cancel()
			<-n.done
			<-n.c.Done()
		}
	}()
	for range 3 {
		add()
	}
	for range 25 {
		switch op := rng.IntN(3); {
		case op == 0 || len(alive) < 2:
			add()
		case op == 1:
			i := rng.IntN(len(alive))
			alive[i].leave()
			<-alive[i].done
			alive = slices.Delete(alive, i, i+1)
		default:
			i := rng.IntN(len(alive))
			alive[i].fs.failAll.Store(true) // cut off for good
			alive = slices.Delete(alive, i, i+1)
		}
		// Let some but not always all of the rebalance happen before the
		// next change.
		time.Sleep(time.Duration(rng.IntN(int(cfg.TTL + 2*cfg.RetryInterval))))
	}
	rec.waitSettled(t, len(alive), 10*time.Minute)
	rec.check(t)
	t.Logf("seed %d: %d intervals, %d members at the end", seed, len(rec.ivs), len(alive))
}

func TestRebalanceBounds(t *testing.T) {
	if got, want := RebalanceBound(time.Second), 1250*time.Millisecond; got != want {
		t.Errorf("RebalanceBound(1s) = %v, want %v", got, want)
	}
	if got, want := CrashRebalanceBound(5*time.Second, time.Second), 5*time.Second+250*time.Millisecond+membership.ExpiryMargin; got != want {
		t.Errorf("CrashRebalanceBound(5s, 1s) = %v, want %v", got, want)
	}
	// The measured case: TTL 5s, poll 1s must settle within TTL + one poll.
	if b := CrashRebalanceBound(5*time.Second, time.Second); b > 6*time.Second {
		t.Errorf("CrashRebalanceBound(5s, 1s) = %v, over TTL + one poll", b)
	}
}
