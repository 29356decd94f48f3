package membership

import (
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// TestNextList checks the member list of a new generation: the members
// that stay keep their order, so their indexes stay where they can, and
// joiners come after them, by id.
func TestNextList(t *testing.T) {
	live := func(ids ...string) map[string]Row {
		m := make(map[string]Row)
		for _, id := range ids {
			m[id] = Row{ID: id, Live: true}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		list []string
		live map[string]Row
		want []string
	}{
		{"Empty", nil, live(), []string{}},
		{"FirstJoin", nil, live("b"), []string{"b"}},
		{"Unchanged", []string{"c", "a", "b"}, live("a", "b", "c"), []string{"c", "a", "b"}},
		{"JoinersByID", []string{"c"}, live("c", "e", "a", "d"), []string{"c", "a", "d", "e"}},
		{"LeaverDropped", []string{"c", "a", "b"}, live("c", "b"), []string{"c", "b"}},
		{"LeaveAndJoin", []string{"c", "a", "b"}, live("b", "d", "c"), []string{"c", "b", "d"}},
		{"AllGone", []string{"a", "b"}, live(), []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextList(tc.list, tc.live); !slices.Equal(got, tc.want) {
				t.Errorf("nextList(%q, %v) = %q, want %q", tc.list, tc.live, got, tc.want)
			}
		})
	}
}

// TestStateOf checks how a read's rows make a pool's state: the generation
// row gives the generation and its list, member rows their
// acknowledgements, by id, and rows of other names are not the pool's.
func TestStateOf(t *testing.T) {
	rows := Rows{Prefix: "pool|global/p|", Generation: "pool|global/p|generation", Members: "pool|global/p|member|"}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	hold := now.Add(time.Second)
	row := func(name, data string, live bool) store.Row {
		r := store.Row{Name: name, Epoch: 7, Data: data, Now: now, HoldUntil: hold, EpochFloor: 3}
		if live {
			r.Holder, r.ExpiresAt = "n/c/i", now.Add(time.Second)
		}
		return r
	}
	st := StateOf(rows, []store.Row{
		row(rows.Member("b"), "6", false),
		row(rows.Generation, "b,a", false),
		row(rows.Member("a"), "7", true),
		row(rows.Members, "7", true), // no member id: not a member row
	})
	if st.Generation != 7 || !slices.Equal(st.List, []string{"b", "a"}) {
		t.Errorf("generation %d, list %q; want 7, [b a]", st.Generation, st.List)
	}
	if !st.DBNow.Equal(now) || !st.HoldUntil.Equal(hold) || st.Floor != 3 {
		t.Errorf("DBNow %v, HoldUntil %v, Floor %d; want %v, %v, 3", st.DBNow, st.HoldUntil, st.Floor, now, hold)
	}
	if len(st.Members) != 2 || st.Members[0].ID != "a" || st.Members[1].ID != "b" {
		t.Fatalf("members %+v, want a then b", st.Members)
	}
	if a := st.Members[0]; a.Ack != 7 || a.Holder != "n/c/i" || !a.Live || !a.ExpiresAt.Equal(now.Add(time.Second)) {
		t.Errorf("member a = %+v, want ack 7, holder n/c/i, live until 1s after the read", a)
	}
	if b := st.Members[1]; b.Ack != 6 || b.Live {
		t.Errorf("member b = %+v, want ack 6, not live", b)
	}
	if !st.heldOff() {
		t.Errorf("state read before HoldUntil is not held off")
	}
}
