package status

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// TestMemberRows: a member is dead when its holder's session is gone or
// expired, or when the generation lists it without a row; a member whose
// row was released has left; only a live member's acknowledgement can be
// pending.
func TestMemberRows(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := coordination.PoolState{Key: "global/orders", Generation: 4, List: []string{"a", "gone"}, DatabaseTime: now,
		Members: []coordination.Member{
			{ID: "a", Holder: "node-a/c/a", Ack: 3, Live: true, ExpiresAt: now.Add(time.Second)},
			{ID: "killed", Holder: "node-k/c/killed", Ack: 3},
			{ID: "left", Ack: 3},
		}}
	rows := memberRows(st, func(string) bool { return false })
	type want struct {
		id                string
		live, dead, acked bool
	}
	wants := []want{{"a", true, false, false}, {"gone", false, true, false}, {"killed", false, true, false}, {"left", false, false, false}}
	if len(rows) != len(wants) {
		t.Fatalf("memberRows = %+v, want %d rows", rows, len(wants))
	}
	for i, w := range wants {
		if r := rows[i]; r.ID != w.id || r.Live != w.live || r.Dead != w.dead || r.Acked != w.acked {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
}

// TestSplitRow: a row key splits into its kind, its owner's scoped key and
// the rest, which may hold a '|'; an election's key has no kind.
func TestSplitRow(t *testing.T) {
	for _, c := range []struct{ key, kind, owner, rest string }{
		{"global/ledger", "", "global/ledger", ""},
		{"cluster/eu-1/reports", "", "cluster/eu-1/reports", ""},
		{"lock|global/jobs|order|7", "lock", "global/jobs", "order|7"},
		{"lockfloor|global/jobs|12", "lockfloor", "global/jobs", "12"},
		{"sem|cluster/eu-1/limit|2", "sem", "cluster/eu-1/limit", "2"},
		{"pool|global/orders|member|a1", "pool", "global/orders", "member|a1"},
	} {
		if kind, owner, rest := splitRow(c.key); kind != c.kind || owner != c.owner || rest != c.rest {
			t.Errorf("splitRow(%q) = %q, %q, %q; want %q, %q, %q", c.key, kind, owner, rest, c.kind, c.owner, c.rest)
		}
	}
}
