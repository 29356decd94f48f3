package coordination_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/testdb"
)

func init() {
	conformanceCases = append(conformanceCases, conformanceCase{"PoolsListsEveryPool", casePoolsListsEveryPool})
}

// casePoolsListsEveryPool runs pools of both scopes whose names nest, next
// to an election named like one of them, and reads them all with Pools
// from a coordinator that never runs.
func casePoolsListsEveryPool(t *testing.T, b *bundle) {
	cfg := steady(b.fastConfig()) // no lease may expire on a busy machine
	ra := start(t, b.db, "node-a", cfg)
	rb := start(t, b.db, "node-b", cfg)
	reader, err := coordination.New(b.db, testIdentity(t, "node-r"), coordination.Config{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	e, err := ra.Election(coordination.GlobalScope, "a")
	if err != nil {
		t.Fatal(err)
	}
	l := mustCampaign(t, e)
	defer func() { _ = l.Release(context.Background()) }()

	type joined struct {
		leave context.CancelFunc
		done  chan struct{}
	}
	join := func(r *running, scope coordination.Scope, name string) joined {
		p, err := r.Pool(scope, name, coordination.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, leave := context.WithCancel(context.Background())
		j := joined{leave: leave, done: make(chan struct{})}
		go func() {
			defer close(j.done)
			_ = p.Run(ctx, func(ctx context.Context, _ coordination.Assignment) error { <-ctx.Done(); return nil }, nil)
		}()
		t.Cleanup(func() {
			leave()
			select {
			case <-j.done:
			case <-time.After(wait):
				t.Errorf("Pool.Run of %s on %s did not return", name, r.Holder())
			}
		})
		return j
	}
	join(ra, coordination.GlobalScope, "a")
	bLeaves := join(rb, coordination.GlobalScope, "a")
	join(ra, coordination.GlobalScope, "a/member/x")
	join(rb, coordination.ClusterScope, "a")

	idA, idB := ra.Identity().Instance, rb.Identity().Instance
	settled := func(st coordination.PoolState, ids ...string) bool {
		if st.Generation == 0 || len(st.List) != len(ids) {
			return false
		}
		for _, id := range ids {
			if !slices.Contains(st.List, id) {
				return false
			}
		}
		for _, m := range st.Members {
			if m.Live && m.Ack != st.Generation {
				return false
			}
		}
		return true
	}
	read := func(want func([]coordination.PoolState) bool) []coordination.PoolState {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			got, err := reader.Admin().Pools(ctx)
			cancel()
			if err != nil {
				t.Fatalf("Pools: %v", err)
			}
			if want(got) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("Pools did not reach the expected state within %v: %+v", wait, got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	keys := []string{"cluster/test/a", "global/a", "global/a/member/x"}
	got := read(func(ps []coordination.PoolState) bool {
		return len(ps) == 3 && settled(ps[0], idB) && settled(ps[1], idA, idB) && settled(ps[2], idA)
	})
	for i, st := range got {
		if st.Key != keys[i] {
			t.Fatalf("pool %d is %q, want %q (in key order)", i, st.Key, keys[i])
		}
		if st.DatabaseTime.IsZero() {
			t.Errorf("pool %s: DBNow is zero", st.Key)
		}
		for _, m := range st.Members {
			if !m.Live || !m.ExpiresAt.After(st.DatabaseTime) || m.Holder == "" {
				t.Errorf("pool %s: member %+v not live at %v", st.Key, m, st.DatabaseTime)
			}
		}
	}
	if ms := got[1].Members; len(ms) != 2 || ms[0].ID > ms[1].ID {
		t.Fatalf("global/a members = %+v, want both, by id", ms)
	}
	for _, m := range got[1].Members {
		want := ra.Holder()
		if m.ID == idB {
			want = rb.Holder()
		}
		if m.Holder != want {
			t.Errorf("member %s holder = %q, want %q", m.ID, m.Holder, want)
		}
	}
	gen := got[1].Generation

	// A member that left keeps its row, not live, until it is pruned.
	bLeaves.leave()
	select {
	case <-bLeaves.done:
	case <-time.After(wait):
		t.Fatal("Pool.Run did not return after leave")
	}
	got = read(func(ps []coordination.PoolState) bool { return len(ps) == 3 && settled(ps[1], idA) })
	if got[1].Generation <= gen {
		t.Errorf("generation after a leave = %d, want above %d", got[1].Generation, gen)
	}
	var left *coordination.Member
	for i, m := range got[1].Members {
		if m.ID == idB {
			left = &got[1].Members[i]
		}
	}
	if left == nil || left.Live {
		t.Errorf("the row of the member that left = %+v, want present and not live", left)
	}
	if got[0].Key != keys[0] || !settled(got[0], idB) || got[2].Key != keys[2] || !settled(got[2], idA) {
		t.Errorf("a leave from global/a changed another pool: %+v", got)
	}
}

// TestAdminSessions runs AdminSessionsListsProcesses on every database
// target.
func TestAdminSessions(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCasesOn(t, testdb.Targets(), []conformanceCase{{"AdminSessionsListsProcesses", caseAdminSessionsListsProcesses}})
}

// caseAdminSessionsListsProcesses: Admin.Sessions lists one live process
// per holder with its session's time left by the database clock, and on a
// database without a file the UDP addresses its wake-ups come to; a
// process that stopped is no longer listed.
func caseAdminSessionsListsProcesses(t *testing.T, b *bundle) {
	cfg := steady(b.fastConfig())
	a := startWithoutPGNotify(t, b.db, "node-a", cfg)
	f := startWithoutPGNotify(t, b.db, "node-f", cfg)
	la := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "a"))
	defer release(t, la)
	lf := mustCampaign(t, election(t, f.Coordinator, coordination.GlobalScope, "f"))
	waitListening(t, a, f)
	admin, err := coordination.NewAdmin(b.db, coordination.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got, err := admin.Sessions(ctx)
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	if len(got) != 2 || got[0].Holder != min(a.Holder(), f.Holder()) || got[1].Holder != max(a.Holder(), f.Holder()) {
		t.Fatalf("Sessions = %+v, want %s and %s, by holder", got, a.Holder(), f.Holder())
	}
	peers := b.target.Dialect != "sqlite" // SQLite wakes through sockets beside its file
	for _, s := range got {
		if !s.Live || s.ExpiresAt.Sub(s.DatabaseTime) < cfg.TTL/2 || s.RenewedAt.After(s.DatabaseTime) {
			t.Errorf("session %+v: want live, with more than TTL/2 left, renewed before the read", s)
		}
		if peers != (len(s.WakeAddrs) > 0) {
			t.Errorf("session %+v: wake-up addresses %v, want some: %v", s, s.WakeAddrs, peers)
		}
	}

	release(t, lf)
	f.cancel()
	select {
	case <-f.Done():
	case <-time.After(wait):
		t.Fatalf("coordinator %s did not stop within %v", f.Holder(), wait)
	}
	if got, err = admin.Sessions(ctx); err != nil || len(got) != 1 || got[0].Holder != a.Holder() {
		t.Fatalf("Sessions after %s stopped = %+v, %v; want %s only", f.Holder(), got, err, a.Holder())
	}
}
