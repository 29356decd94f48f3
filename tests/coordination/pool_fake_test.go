package coordination_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
)

// startFakePoolNode starts a coordinator on the in-process store ms,
// behind a fault-injecting store of its own, and runs a member of pool
// whose work rec records. The caller stops it (poolNode.cancel) and waits
// for poolNode.done and the coordinator's Done.
func startFakePoolNode(t *testing.T, ms *memstore.Store, node string, cfg coordination.Config, pool string, rec *recorder) *poolNode {
	t.Helper()
	fs := &faultStore{Backend: ms}
	c := newCoordinator(t, fs, testIdentity(t, node), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Run(ctx) }()
	<-c.Ready()
	p, err := c.Pool(coordination.GlobalScope, pool, coordination.PoolConfig{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	pctx, leave := context.WithCancel(ctx)
	n := &poolNode{c: c, fs: fs, cancel: cancel, leave: leave, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		_ = p.Run(pctx, rec.fn(identityOf(c).Instance), nil)
	}()
	return n
}

func TestPoolRebalanceOnFakeTime(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		cfg := withDefaults(t, coordination.Config{Logger: zaptest.NewLogger(t)}) // TTL 15s, poll = retry 2s
		rec := newRecorder()
		var nodes []*poolNode
		add := func(i int) *poolNode {
			n := startFakePoolNode(t, ms, fmt.Sprintf("node-%d", i), cfg, "orders", rec)
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
		if b := rebalanceBound(poll); took > b {
			t.Errorf("rebalance after join took %v, want within RebalanceBound %v", took, b)
		}

		// Graceful leave.
		left := time.Now()
		nodes[1].leave()
		<-nodes[1].done
		g3 := rec.waitSettled(t, 4, time.Minute)
		took = time.Since(left)
		t.Logf("graceful leave: generation %d -> %d in %v", g2, g3, took)
		if b := rebalanceBound(poll); took > b {
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
		if b := crashRebalanceBound(cfg.TTL, poll); took > b {
			t.Errorf("rebalance after a crash took %v, want within CrashRebalanceBound %v", took, b)
		}

		// Dead member rows are pruned when membership changes, once they
		// have been dead for ten TTLs: the leaver's released row and the
		// crashed member's alike. Never sooner, so that a row a member is
		// about to acquire is never deleted under it.
		memberRow := func(n *poolNode) string { return poolMemberRow("global/orders", identityOf(n.c).Instance) }
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
	cfg := withDefaults(t, coordination.Config{Logger: zap.NewNop()})
	rec := newRecorder()
	var nodes []*poolNode
	var alive []*poolNode
	add := func() {
		n := startFakePoolNode(t, ms, fmt.Sprintf("node-%d", len(nodes)), cfg, "churn", rec)
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
