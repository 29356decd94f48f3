package coordination_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// TestPoolConformance runs a pool of five members through a join, a
// graceful leave and a crash on every database, recording every work
// interval, and checks that no index was held twice at once and every
// generation's count matched its member list.
func TestPoolConformance(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCases(t, []conformanceCase{
		{"FiveMembersJoinLeaveCrash", casePoolFive},
		{"NestedNamesDoNotCollide", casePoolNestedNames},
		{"PrefixMatchIsExact", casePrefixMatchIsExact},
	})
}

func casePoolFive(t *testing.T, b *bundle) {
	cfg := b.fastConfig() // TTL 1.2s, retry (poll) 100ms; twice that on a replicated target
	rec := newRecorder()
	var nodes []*poolNode
	add := func(node string) *poolNode {
		r, fs := startFaulty(t, b.db, node, cfg)
		p, err := r.Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		pctx, leave := context.WithCancel(context.Background())
		n := &poolNode{c: r.Coordinator, fs: fs, cancel: r.cancel, leave: leave, done: make(chan struct{})}
		go func() {
			defer close(n.done)
			_ = p.Run(pctx, rec.fn(r.Identity().Instance), nil)
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
		nodes = append(nodes, n)
		return n
	}
	for _, n := range []string{"node-a", "node-b", "node-c", "node-d"} {
		add(n)
	}
	rec.waitSettled(t, 4, wait)

	start := time.Now()
	add("node-e")
	rec.waitSettled(t, 5, wait)
	join := time.Since(start)

	start = time.Now()
	nodes[1].leave()
	<-nodes[1].done
	rec.waitSettled(t, 4, wait)
	leave := time.Since(start)

	start = time.Now()
	nodes[2].fs.failAll.Store(true) // cut off from the database: a crash as the others see it
	rec.waitSettled(t, 3, wait)
	crash := time.Since(start)

	rec.check(t)
	poll := cfg.RetryInterval
	t.Logf("LOUD: %s: pool rebalance: join %v, graceful leave %v (RebalanceBound %v), crash %v (CrashRebalanceBound %v); poll %v, TTL %v",
		b.target.Name, join.Round(time.Millisecond), leave.Round(time.Millisecond), rebalanceBound(poll),
		crash.Round(time.Millisecond), crashRebalanceBound(cfg.TTL, poll), poll, cfg.TTL)
}
