package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// partInterval is one member's work on one partition of a sticky pool:
// one call of its AssignmentFunc.
type partInterval struct {
	node       string // the coordinator's node name
	member     string // the membership it ran under: its lease's epoch (a partition's Assignment carries no member id)
	part       int
	since      int64
	pt         coordination.Assignment
	start, end time.Time // end is zero while running
}

// partRecorder collects the partition work intervals of every member of
// a sticky pool.
type partRecorder struct {
	parts int
	mu    sync.Mutex
	ivs   []*partInterval
	wake  chan struct{}
}

func newPartRecorder(parts int) *partRecorder {
	return &partRecorder{parts: parts, wake: make(chan struct{}, 1)}
}

// fn returns the AssignmentFunc of the member on node.
func (r *partRecorder) fn(node string) coordination.AssignmentFunc {
	return func(ctx context.Context, pt coordination.Assignment) error {
		iv := &partInterval{node: node, member: fmt.Sprintf("membership epoch %d", pt.Epoch), part: pt.Index, since: pt.Generation, pt: pt, start: time.Now()}
		r.mu.Lock()
		r.ivs = append(r.ivs, iv)
		r.mu.Unlock()
		poke(r.wake)
		<-ctx.Done()
		r.mu.Lock()
		iv.end = time.Now()
		r.mu.Unlock()
		poke(r.wake)
		return nil
	}
}

// running returns, by partition, the intervals still running.
func (r *partRecorder) running() map[int][]*partInterval {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int][]*partInterval)
	for _, iv := range r.ivs {
		if iv.end.IsZero() {
			out[iv.part] = append(out[iv.part], iv)
		}
	}
	return out
}

// settled returns, by partition, the interval working on it, when every
// partition is worked on by exactly one of the given nodes and every one
// of them works on its share of the partitions, balanced within one.
func (r *partRecorder) settled(nodes []string) (map[int]*partInterval, bool) {
	run := r.running()
	out := make(map[int]*partInterval, r.parts)
	counts := make(map[string]int)
	for _, n := range nodes {
		counts[n] = 0
	}
	for p := range r.parts {
		if len(run[p]) != 1 {
			return nil, false
		}
		iv := run[p][0]
		if _, ok := counts[iv.node]; !ok {
			return nil, false
		}
		counts[iv.node]++
		out[p] = iv
	}
	lo, hi := r.parts/len(nodes), (r.parts+len(nodes)-1)/len(nodes)
	for _, c := range counts {
		if c < lo || c > hi {
			return nil, false
		}
	}
	return out, true
}

// waitSettled waits until the partitions are settled over nodes.
func (r *partRecorder) waitSettled(t testing.TB, nodes []string, limit time.Duration) map[int]*partInterval {
	t.Helper()
	deadline := time.After(limit)
	for {
		if s, ok := r.settled(nodes); ok {
			return s
		}
		select {
		case <-r.wake:
		case <-deadline:
			run := r.running()
			keys := make([]int, 0, len(run))
			for p := range run {
				keys = append(keys, p)
			}
			sort.Ints(keys)
			desc := ""
			for _, p := range keys {
				for _, iv := range run[p] {
					desc += fmt.Sprintf(" %d:%s", p, iv.node)
				}
			}
			t.Fatalf("partitions did not settle over %v within %v; running:%s", nodes, limit, desc)
		}
	}
}

// check asserts that no partition was worked on twice at overlapping
// times, by two members or by one.
func (r *partRecorder) check(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	end := func(iv *partInterval) time.Time {
		if iv.end.IsZero() {
			return time.Now().Add(time.Hour)
		}
		return iv.end
	}
	for i, a := range r.ivs {
		for _, b := range r.ivs[i+1:] {
			if a.part == b.part && a.start.Before(end(b)) && b.start.Before(end(a)) {
				t.Fatalf("partition %d worked on twice at once: %s (since %d, %v..%v) and %s (since %d, %v..%v)",
					a.part, a.member, a.since, a.start, a.end, b.member, b.since, b.start, b.end)
			}
		}
	}
}

// checkMoves checks a rebalance from before to after: every partition
// whose node did not change is still worked on by the very same call
// (its context stayed alive), only partitions of the nodes in from moved
// when from is set, and at most bound moved. It returns how many moved.
func checkMoves(t testing.TB, what string, before, after map[int]*partInterval, from string, bound int) int {
	t.Helper()
	moved := 0
	for p, b := range before {
		a := after[p]
		if a.node == b.node && a.member != b.member {
			t.Errorf("%s: %s lost its membership (member %s, then %s): the machine was too slow to renew within the TTL", what, a.node, b.member, a.member)
			continue
		}
		if a.node == b.node {
			if a != b {
				t.Errorf("%s: partition %d stayed on %s but its work was restarted (since %d, then %d)", what, p, a.node, b.since, a.since)
			}
			continue
		}
		moved++
		if from != "" && b.node != from {
			t.Errorf("%s: partition %d moved from %s to %s; only %s's should move", what, p, b.node, a.node, from)
		}
	}
	if moved > bound {
		t.Errorf("%s: %d partitions moved; bound %d", what, moved, bound)
	}
	return moved
}

// stickyNode is one process of a sticky pool in these tests.
type stickyNode struct {
	name string
	*poolNode
	pool *coordination.Pool
}

// startSticky starts a coordinator on node that runs the sticky pool
// "orders" with cfg.
func startSticky(t *testing.T, db *gorm.DB, node string, cfg coordination.Config, pcfg coordination.PoolConfig, rec *partRecorder) *stickyNode {
	t.Helper()
	r, fs := startFaulty(t, db, node, cfg)
	p, err := r.Pool(coordination.GlobalScope, "orders", pcfg)
	if err != nil {
		t.Fatal(err)
	}
	pctx, leave := context.WithCancel(context.Background())
	n := &poolNode{c: r.Coordinator, fs: fs, cancel: r.cancel, leave: leave, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		if err := p.Run(pctx, rec.fn(node), nil); err != nil && !errors.Is(err, coordination.ErrClosed) {
			t.Errorf("Pool.Run of %s: %v", node, err)
		}
	}()
	t.Cleanup(func() {
		leave()
		fs.failAll.Store(false)
		select {
		case <-n.done:
		case <-time.After(wait):
			t.Errorf("Pool.Run of %s did not return", node)
		}
	})
	return &stickyNode{name: node, poolNode: n, pool: p}
}

// TestStickyPoolConformance runs sticky pools on every database: joins,
// graceful leaves and crashes move only what balance requires while the
// partitions that stay keep their work running, no partition is worked on
// twice at once, and a static member restarted within its TTL gets its
// partitions back without a new generation.
func TestStickyPoolConformance(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCases(t, []conformanceCase{
		{"JoinLeaveCrashMoveOnlyWhatBalanceRequires", caseStickyMoves},
		{"StaticMemberRestartKeepsPartitions", caseStickyStaticRestart},
		{"FenceHoldsUntilThePartitionMoves", caseStickyFence},
		{"ModeMismatchIsReported", caseStickyModeMismatch},
		{"IndexMemberDoesNotJoinAStickyPool", caseIndexMemberOfStickyPool},
	})
}

// caseIndexMemberOfStickyPool runs a sticky pool on one process and the
// same pool by index and count on another: the index member reports
// ErrMode and never takes a member row, so it takes no partitions.
func caseIndexMemberOfStickyPool(t *testing.T, b *bundle) {
	cfg := stickyConfig()
	rec := newPartRecorder(4)
	sn := startSticky(t, b.db, "node-a", cfg, coordination.PoolConfig{Partitions: 4}, rec)
	rec.waitSettled(t, []string{"node-a"}, wait)

	bn := start(t, b.db, "node-b", cfg)
	events := bn.Subscribe(t.Context(), 64)
	plain, err := bn.Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = plain.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
			t.Errorf("the index member was assigned %+v in a sticky pool", a)
			<-ctx.Done()
			return nil
		}, nil)
	}()
	defer func() { stop(); <-done }()
	recvEvent(t, events, func(e coordination.Event) bool {
		return e.Kind == coordination.EventError && isPoolMode(e.Err)
	})
	st, err := sn.pool.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 1 {
		t.Errorf("the sticky pool has member rows %+v, want node-a's only", st.Members)
	}
	if _, ok := rec.settled([]string{"node-a"}); !ok {
		t.Errorf("node-a no longer works on all 4 partitions: %v", rec.running())
	}
}

// caseStickyModeMismatch runs a pool by index and count on one process
// and as a sticky pool on another: the sticky member reports the mode
// mismatch (an error wrapping ErrInvalidConfig) and never publishes over
// the live member's list. A second Run of a running pool is refused with
// ErrBusy.
func caseStickyModeMismatch(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	rec := newRecorder()
	a := start(t, b.db, "node-a", cfg)
	plain, err := a.Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = plain.Run(ctx, rec.fn(a.Identity().Instance), nil)
	}()
	t.Cleanup(func() { stop(); <-done })
	rec.waitSettled(t, 1, wait)
	if err := plain.Run(ctx, newPartRecorder(1).fn("node-a"), nil); !errors.Is(err, coordination.ErrBusy) {
		t.Errorf("a second Run of a running pool: %v, want ErrBusy", err)
	}

	bn := start(t, b.db, "node-b", cfg)
	events := bn.Subscribe(t.Context(), 64)
	sticky, err := bn.Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	sctx, sstop := context.WithCancel(context.Background())
	sdone := make(chan struct{})
	go func() {
		defer close(sdone)
		_ = sticky.Run(sctx, newPartRecorder(4).fn("node-b"), nil)
	}()
	defer func() { sstop(); <-sdone }()
	ev := recvEvent(t, events, func(e coordination.Event) bool {
		return e.Kind == coordination.EventError && isPoolMode(e.Err)
	})
	t.Logf("sticky member refused the pool: %v", ev.Err)
	st, err := plain.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.List) != 1 || memberInstance(st.List[0]) != a.Identity().Instance {
		t.Errorf("the index member's list became %v", st.List)
	}
}

func caseStickyFence(t *testing.T, b *bundle) {
	const parts = 6
	cfg := stickyConfig()
	rec := newPartRecorder(parts)
	pcfg := coordination.PoolConfig{Partitions: parts}
	fence := func(pt coordination.Assignment) error {
		return b.db.Transaction(pt.Fence)
	}
	startSticky(t, b.db, "node-a", cfg, pcfg, rec)
	startSticky(t, b.db, "node-b", cfg, pcfg, rec)
	before := rec.waitSettled(t, []string{"node-a", "node-b"}, wait)
	for p, iv := range before {
		if err := fence(iv.pt); err != nil {
			t.Fatalf("partition %d of %s: Fence: %v", p, iv.node, err)
		}
	}
	if err := (coordination.Assignment{}).Fence(b.db); !isNotInTransaction(err) {
		t.Errorf("Fence outside a transaction: %v, want ErrInvalidConfig for a handle outside a transaction", err)
	}
	if err := fence(coordination.Assignment{}); !errors.Is(err, coordination.ErrFenced) {
		t.Errorf("Fence of a zero Assignment: %v, want ErrFenced", err)
	}

	startSticky(t, b.db, "node-c", cfg, pcfg, rec)
	after := rec.waitSettled(t, []string{"node-a", "node-b", "node-c"}, wait)
	moved := 0
	for p, bf := range before {
		err := fence(bf.pt)
		if after[p] == bf {
			if err != nil {
				t.Errorf("partition %d stayed on %s, its work running, but its Fence of before the join fails: %v", p, bf.node, err)
			}
			continue
		}
		moved++
		if !isFenced(err, fmt.Sprintf("pool %q partition %d since generation %d", bf.pt.Key, p, bf.pt.Generation), "") {
			t.Errorf("partition %d moved from %s (%s) to %s (%s), but the old work's Fence returns %v, want ErrFenced naming the partition",
				p, bf.node, bf.member, after[p].node, after[p].member, err)
		}
		if err := fence(after[p].pt); err != nil {
			t.Errorf("partition %d: the new owner's Fence: %v", p, err)
		}
	}
	if moved < 2 || moved > 3 {
		t.Errorf("the join of a third member to 6 partitions moved %d, want 2 (3 with a lost membership)", moved)
	}
	rec.check(t)
}

// stickyConfig is fastConfig with a TTL of 3s: these cases check that
// partitions that stay keep running, which a membership lost on a loaded
// machine (a TTL of 1.2s leaves 0.9s to renew) would break for a reason
// that has nothing to do with the protocol.
func stickyConfig() coordination.Config {
	cfg := fastConfig()
	cfg.TTL = 3 * time.Second
	return cfg
}

func caseStickyMoves(t *testing.T, b *bundle) {
	const parts = 64
	cfg := stickyConfig()
	rec := newPartRecorder(parts)
	pcfg := coordination.PoolConfig{Partitions: parts}
	var nodes []*stickyNode
	names := func() []string {
		var out []string
		for _, n := range nodes {
			if n.leave != nil {
				out = append(out, n.name)
			}
		}
		return out
	}
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		nodes = append(nodes, startSticky(t, b.db, n, cfg, pcfg, rec))
	}
	before := rec.waitSettled(t, names(), wait)

	start := time.Now()
	nodes = append(nodes, startSticky(t, b.db, "node-d", cfg, pcfg, rec))
	after := rec.waitSettled(t, names(), wait)
	join := time.Since(start)
	joinMoved := checkMoves(t, "join of node-d", before, after, "", (parts+3)/4+1)

	start = time.Now()
	nodes[1].leave()
	<-nodes[1].done
	nodes[1].leave = nil
	before, after = after, rec.waitSettled(t, names(), wait)
	leave := time.Since(start)
	leaveMoved := checkMoves(t, "graceful leave of node-b", before, after, "node-b", parts)

	start = time.Now()
	nodes[2].fs.failAll.Store(true) // cut off from the database: a crash as the others see it
	nodes[2].leave = nil
	before, after = after, rec.waitSettled(t, names(), wait)
	crash := time.Since(start)
	crashMoved := checkMoves(t, "crash of node-c", before, after, "node-c", parts)

	rec.check(t)
	t.Logf("LOUD: %s: sticky pool of %d partitions: join moved %d in %v, graceful leave moved %d in %v, crash moved %d in %v; poll %v, TTL %v",
		b.target.Name, parts, joinMoved, join.Round(time.Millisecond), leaveMoved, leave.Round(time.Millisecond),
		crashMoved, crash.Round(time.Millisecond), cfg.RetryInterval, cfg.TTL)
}

func caseStickyStaticRestart(t *testing.T, b *bundle) {
	const parts = 30
	cfg := b.fastConfig()
	// A TTL long enough that a new coordinator starts well within it on a
	// loaded machine: the restart must come back before the partitions move.
	cfg.TTL = 6 * time.Second
	rec := newPartRecorder(parts)
	var nodes []*stickyNode
	for _, id := range []string{"web-0", "web-1", "web-2"} {
		nodes = append(nodes, startSticky(t, b.db, id, cfg, coordination.PoolConfig{Partitions: parts, MemberID: id}, rec))
	}
	before := rec.waitSettled(t, []string{"web-0", "web-1", "web-2"}, wait)
	st, err := nodes[0].pool.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// A rolling deploy of web-1: it stops, and a new process comes up
	// under the same MemberID (the recorder names it by the node, so the
	// new process is "web-1" again).
	nodes[1].leave()
	<-nodes[1].done
	nodes[1].cancel()
	start := time.Now()
	startSticky(t, b.db, "web-1", cfg, coordination.PoolConfig{Partitions: parts, MemberID: "web-1"}, rec)
	after := rec.waitSettled(t, []string{"web-0", "web-1", "web-2"}, wait)
	back := time.Since(start)
	for p, a := range after {
		bf := before[p]
		if a.node != bf.node || a.since != bf.since {
			t.Errorf("partition %d: %s since %d before the restart, %s since %d after", p, bf.node, bf.since, a.node, a.since)
		}
		if a.node != "web-1" && a != bf {
			t.Errorf("partition %d of %s was restarted by the restart of web-1", p, a.node)
		}
	}
	st2, err := nodes[0].pool.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st2.Generation != st.Generation {
		t.Errorf("the restart of a static member moved the pool from generation %d to %d", st.Generation, st2.Generation)
	}
	rec.check(t)
	t.Logf("LOUD: %s: static member back with its partitions %v after the restart began (TTL %v)", b.target.Name, back.Round(time.Millisecond), cfg.TTL)
}
