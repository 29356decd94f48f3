package coordination_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// nestedPoolNames are pool names that extend each other through the parts
// of the pool row keys of schema versions before 3, plus one that differs
// only in case (SQLite's LIKE ignores case).
var nestedPoolNames = []string{"a", "a/member/x", "a/generation", "a/member", "A"}

// casePoolNestedNames runs pools whose names nest, and elections named like
// pool rows, on shared coordinators. Every pool must assign its indexes to
// its own members only; a member joining, leaving and another joining
// (which prunes the leaver's row) must leave every generation row in
// place with an epoch that only grew; and no row may belong to two pools.
func casePoolNestedNames(t *testing.T, b *bundle) {
	// Short polls, but a trust window no busy machine exhausts: the case
	// checks which rows each pool sees, and asserts that the elections
	// beside the pools are never lost.
	cfg := steady(b.fastConfig())
	ctx := context.Background()

	type member struct {
		leave context.CancelFunc
		done  chan struct{}
	}
	recs := make(map[string]*recorder, len(nestedPoolNames))
	for _, name := range nestedPoolNames {
		recs[name] = newRecorder()
	}
	var pools []*coordination.Pool // of the first node, to read the rows
	join := func(r *running) []member {
		var ms []member
		for _, name := range nestedPoolNames {
			p, err := r.Pool(coordination.GlobalScope, name, coordination.PoolConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if len(pools) < len(nestedPoolNames) {
				pools = append(pools, p)
			}
			pctx, leave := context.WithCancel(ctx)
			m := member{leave: leave, done: make(chan struct{})}
			go func() {
				defer close(m.done)
				_ = p.Run(pctx, recs[name].fn(r.Identity().Instance), nil)
			}()
			t.Cleanup(func() {
				leave()
				select {
				case <-m.done:
				case <-time.After(wait):
					t.Errorf("Pool.Run of %q on %s did not return", name, r.Holder())
				}
			})
			ms = append(ms, m)
		}
		return ms
	}
	settle := func(n int) {
		t.Helper()
		for _, name := range nestedPoolNames {
			recs[name].waitSettled(t, n, wait)
		}
	}

	ra, rb := start(t, b.db, "node-a", cfg), start(t, b.db, "node-b", cfg)
	// Elections named like pool row keys, old and new, and like a pool.
	var leases []*coordination.Lease
	for _, name := range []string{"pool/global/a/generation", "pool/global/a/member/" + ra.Identity().Instance, "a", "a/member"} {
		leases = append(leases, mustCampaign(t, election(t, ra.Coordinator, coordination.GlobalScope, name)))
	}
	join(ra)
	join(rb)
	settle(2)

	// Watch every generation row from now on: it must never vanish or go
	// back, also not while another pool prunes its dead members.
	stop := make(chan struct{})
	var watchWG sync.WaitGroup
	var mu sync.Mutex
	var regressions []string
	last := map[string]int64{}
	read := func() {
		for _, p := range pools {
			rows, err := rawStore(t, b.db).Get(ctx, []string{poolGenerationRow(p.Key())})
			if err != nil {
				continue // a busy database; the next read decides
			}
			mu.Lock()
			switch {
			case len(rows) == 0:
				regressions = append(regressions, fmt.Sprintf("pool %q: generation row %q is gone", p.Key(), poolGenerationRow(p.Key())))
			case rows[0].Epoch < last[p.Key()]:
				regressions = append(regressions, fmt.Sprintf("pool %q: generation went from %d back to %d", p.Key(), last[p.Key()], rows[0].Epoch))
			default:
				last[p.Key()] = rows[0].Epoch
			}
			mu.Unlock()
		}
	}
	read()
	before := map[string]int64{}
	for k, v := range last {
		before[k] = v
	}
	watchWG.Add(1)
	go func() {
		defer watchWG.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				read()
			}
		}
	}()

	// A third member joins and leaves; a fourth joins, and the publish of
	// its generation prunes the leaver's released rows.
	rc := start(t, b.db, "node-c", cfg)
	left := join(rc)
	settle(3)
	for _, m := range left {
		m.leave()
		<-m.done
	}
	settle(2)
	rd := start(t, b.db, "node-d", cfg)
	join(rd)
	settle(3)
	close(stop)
	watchWG.Wait()
	read()

	mu.Lock()
	for _, r := range regressions {
		t.Error(r)
	}
	for _, p := range pools {
		if last[p.Key()] <= before[p.Key()] {
			t.Errorf("pool %q: generation %d did not grow from %d across a join, a leave and a join", p.Key(), last[p.Key()], before[p.Key()])
		}
	}
	mu.Unlock()

	// Each pool sees its own members only: the three live ones, and the
	// leaver's row until a prune deletes it. Pruning is best effort (it
	// runs after a publish), so the leaver may still be there, not live.
	want := []string{ra.Identity().Instance, rb.Identity().Instance, rd.Identity().Instance}
	slices.Sort(want)
	for _, p := range pools {
		st, err := p.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// By instance: a member that lost its membership on a loaded
		// machine joined again under a new member id of its instance.
		var live []string
		for _, m := range st.Members {
			switch inst := memberInstance(m.ID); {
			case inst == rc.Identity().Instance:
				if m.Live {
					t.Errorf("pool %q: the leaver %s is still live", p.Key(), m.ID)
				}
			case !slices.Contains(want, inst):
				t.Errorf("pool %q sees a member %q that is none of its members %v", p.Key(), m.ID, want)
			case m.Live && !slices.Contains(live, inst):
				live = append(live, inst)
			}
		}
		slices.Sort(live)
		if !slices.Equal(live, want) {
			t.Errorf("pool %q sees live members %v, want %v", p.Key(), live, want)
		}
		var list []string
		for _, id := range st.List {
			list = append(list, memberInstance(id))
		}
		slices.Sort(list)
		if !slices.Equal(list, want) {
			t.Errorf("pool %q: generation %d lists %v, want %v", p.Key(), st.Generation, st.List, want)
		}
	}

	// Every row belongs to exactly one pool or is one of the elections.
	all, err := rawStore(t, b.db).List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		var owners []string
		for _, p := range pools {
			if strings.HasPrefix(r.Name, poolRowsPrefix(p.Key())) {
				owners = append(owners, p.Key())
			}
		}
		isElection := slices.ContainsFunc(leases, func(l *coordination.Lease) bool { return l.Key() == r.Name })
		if len(owners) > 1 || (len(owners) == 1) == isElection || (len(owners) == 0 && !isElection) {
			t.Errorf("row %q belongs to pools %v (election: %v)", r.Name, owners, isElection)
		}
	}

	for _, l := range leases {
		if !l.Valid() {
			t.Errorf("election %s was lost while the pools ran", l.Token())
		}
		release(t, l)
	}
	for _, name := range nestedPoolNames {
		recs[name].check(t)
	}
}

// casePrefixMatchIsExact checks that listing and pruning by prefix match
// bytes exactly: not ignoring case (SQLite's LIKE does) and not treating
// '_' as a wildcard.
func casePrefixMatchIsExact(t *testing.T, b *bundle) {
	ctx := context.Background()
	s := rawStore(t, b.db)
	if _, err := s.Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, name := range []string{"a", "A", "a_b", "aXb", "ab"} {
		keys = append(keys, "global/"+name) // the key of a GlobalScope pool of that name
	}
	for _, key := range keys {
		rows := poolRowsOf(key)
		if err := s.EnsureRows(ctx, []string{rows.Generation, rows.Member("m1")}); err != nil {
			t.Fatal(err)
		}
	}
	// Never acquired, and created long ago: dead.
	if err := b.db.Exec("UPDATE " + s.Tables().Leases + " SET expires_at_us = 1").Error; err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		rows := poolRowsOf(key)
		got, err := s.List(ctx, rows.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range got {
			names = append(names, r.Name)
		}
		if want := []string{rows.Generation, rows.Member("m1")}; !slices.Equal(names, want) {
			t.Errorf("List(%q) = %q, want %q", rows.Prefix, names, want)
		}
	}
	for i, key := range keys {
		rows := poolRowsOf(key)
		n, err := s.PruneDead(ctx, rows.Members, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("PruneDead(%q) deleted %d rows, want 1", rows.Members, n)
		}
		for _, other := range keys[i+1:] {
			if got, err := s.Get(ctx, []string{poolMemberRow(other, "m1")}); err != nil || len(got) != 1 {
				t.Errorf("PruneDead(%q) deleted a member row of pool %q (%v)", rows.Members, other, err)
			}
		}
	}
}
