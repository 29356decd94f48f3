package coordination

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination/internal/membership"
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
	var pools []*Pool // of the first node, to read the rows
	join := func(r *running) []member {
		var ms []member
		for _, name := range nestedPoolNames {
			p, err := r.Pool(GlobalScope, name, PoolConfig{})
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
				_ = p.Run(pctx, recs[name].fn(r.id.Instance))
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
	var leases []*Lease
	for _, name := range []string{"pool/global/a/generation", "pool/global/a/member/" + ra.id.Instance, "a", "a/member"} {
		leases = append(leases, mustCampaign(t, election(t, ra.Coordinator, GlobalScope, name)))
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
			rows, err := rawStore(t, b.db).Get(ctx, []string{p.rows.Generation})
			if err != nil {
				continue // a busy database; the next read decides
			}
			mu.Lock()
			switch {
			case len(rows) == 0:
				regressions = append(regressions, fmt.Sprintf("pool %q: generation row %q is gone", p.Key(), p.rows.Generation))
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
	want := []string{ra.id.Instance, rb.id.Instance, rd.id.Instance}
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
			case inst == rc.id.Instance:
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
			if strings.HasPrefix(r.Name, p.rows.Prefix) {
				owners = append(owners, p.Key())
			}
		}
		isElection := slices.ContainsFunc(leases, func(l *Lease) bool { return l.Key() == r.Name })
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
		key, err := leaseName(GlobalScope, "", name)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	for _, key := range keys {
		rows := poolRowsFor(key)
		if err := s.EnsureRows(ctx, []string{rows.Generation, rows.Member("m1")}); err != nil {
			t.Fatal(err)
		}
	}
	// Never acquired, and created long ago: dead.
	if err := b.db.Exec("UPDATE " + s.Tables().Leases + " SET expires_at_us = 1").Error; err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		rows := poolRowsFor(key)
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
		rows := poolRowsFor(key)
		n, err := s.PruneDead(ctx, rows.Members, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("PruneDead(%q) deleted %d rows, want 1", rows.Members, n)
		}
		for _, other := range keys[i+1:] {
			if got, err := s.Get(ctx, []string{poolRowsFor(other).Member("m1")}); err != nil || len(got) != 1 {
				t.Errorf("PruneDead(%q) deleted a member row of pool %q (%v)", rows.Members, other, err)
			}
		}
	}
}

// TestRowKeysCannotCollide builds the row keys of every election and pool
// over names made of the characters that matter ('/', 'a', 'member',
// 'generation' and their combinations) in both scopes and two clusters,
// and checks that no key equals another and that each pool's prefixes
// cover exactly its own rows.
func TestRowKeysCannotCollide(t *testing.T) {
	parts := []string{"a", "A", "member", "generation", "x", "pool", "global", "cluster", "c1"}
	names := slices.Clone(parts)
	for _, p := range parts {
		for _, q := range parts {
			names = append(names, p+"/"+q, p+"/"+q+"/x", p+":"+q, p+"_"+q)
		}
	}
	type owner struct{ kind, key string }
	rows := map[string]owner{}
	var pools []membership.Rows
	add := func(row string, o owner) {
		if prev, ok := rows[row]; ok && prev != o {
			t.Fatalf("row key %q is both %v and %v", row, prev, o)
		}
		rows[row] = o
	}
	for _, cluster := range []string{"c1", "pool"} {
		for _, scope := range []Scope{ClusterScope, GlobalScope} {
			for _, name := range names {
				key, err := leaseName(scope, cluster, name)
				if err != nil {
					t.Fatal(err)
				}
				add(key, owner{"election", key})
				pr := poolRowsFor(key)
				pools = append(pools, pr)
				add(pr.Generation, owner{"pool", key})
				for _, inst := range []string{"generation", "member", "i1"} {
					add(pr.Member(inst), owner{"pool", key})
				}
			}
		}
	}
	for _, pr := range pools {
		key := strings.TrimSuffix(strings.TrimPrefix(pr.Prefix, "pool|"), "|")
		for row, o := range rows {
			mine := o == owner{"pool", key}
			if strings.HasPrefix(row, pr.Prefix) != mine {
				t.Fatalf("prefix %q and row %q of %v", pr.Prefix, row, o)
			}
			_, isMember := pr.MemberID(row)
			if isMember != (mine && row != pr.Generation) {
				t.Fatalf("member prefix %q and row %q of %v", pr.Members, row, o)
			}
		}
	}
	if _, err := leaseName(GlobalScope, "c1", "a|b"); err == nil {
		t.Fatal(`leaseName accepted a name with '|'`)
	}
}

// TestPoolWakeForOneMember: a wake-up for one member of a pool wakes the
// pool only in the process whose member that is; a change to any row of
// the pool wakes it everywhere.
func TestPoolWakeForOneMember(t *testing.T) {
	ps := newPoolSet("inst")
	p := &Pool{key: "global/orders", rows: poolRowsFor("global/orders"), wake: make(chan struct{}, 1)}
	if err := ps.enter(p); err != nil {
		t.Fatal(err)
	}
	ps.joined(p, "inst.1")
	woken := func(names ...string) bool {
		ps.woke(names)
		select {
		case <-p.wake:
			return true
		default:
			return false
		}
	}
	if woken(p.rows.Wake("other.1")) {
		t.Error("a wake-up for another member woke the pool")
	}
	if !woken(p.rows.Wake("inst.1")) {
		t.Error("a wake-up for this process's member did not wake the pool")
	}
	if !woken(p.rows.Member("other.1")) || !woken(p.rows.Generation) {
		t.Error("a change to a row of the pool did not wake it")
	}
	if woken(poolRowsFor("global/other").Wake("inst.1")) {
		t.Error("a wake-up for a member of another pool woke the pool")
	}
}

// TestPoolMemberRow: the releases that wake nobody (store.Options.Quiet)
// are those of pool member rows, and no other row's.
func TestPoolMemberRow(t *testing.T) {
	key, err := leaseName(GlobalScope, "", "orders")
	if err != nil {
		t.Fatal(err)
	}
	rows := poolRowsFor(key)
	for name, want := range map[string]bool{
		rows.Member("a1b2"):             true,
		rows.Member("static:w-0"):       true,
		rows.Generation:                 false,
		rows.Wake("a1b2"):               false,
		key:                             false,
		"global/member":                 false,
		lockRow("global/member", "k"):   false,
		"pool" + keySep + "member":      false,
		semRow("pool"+keySep+"x", 0):    false,
		"pool|global/orders|memberless": false,
	} {
		if got := poolMemberRow(name); got != want {
			t.Errorf("poolMemberRow(%q) = %v, want %v", name, got, want)
		}
	}
}
