package coordination

import (
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

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
	h := newHandles("inst")
	p := &Pool{key: "global/orders", rows: poolRowsFor("global/orders")}
	r := &poolRun{p: p, wake: make(chan struct{}, 1)}
	if err := h.enter(r); err != nil {
		t.Fatal(err)
	}
	id := "inst.1"
	r.member.Store(&id)
	woken := func(names ...string) bool {
		h.woke(names)
		select {
		case <-r.wake:
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
