package store

import (
	"strconv"
	"time"
)

// The statements of the rows of partitioned pools (generations and
// memberships), as every database shares them.

// poolSQL builds the statements of the pool rows.
type poolSQL struct{ *dialect }

// sqlSetData writes a term's data, only while the term is this live
// session's.
func (d poolSQL) sqlSetData(t Tables, session string, term Term, data string) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET data = ? WHERE name = ? AND epoch = " + strconv.FormatInt(term.Epoch, 10) +
		" AND session_id = ? AND " + d.sessionLive(t, "?", ""), []any{data, term.Name, session, session}}
}

// sqlPublish is the compare-and-set that publishes a pool's next
// generation: one above from, or above the incarnation's floor, and only
// where a lease could be taken now (incarnation.go).
func (d poolSQL) sqlPublish(t Tables, name string, from int64, data string) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET epoch = " + d.nextEpoch(t) + ", data = ?, renewed_at_us = " + d.now +
		" WHERE name = ? AND holder = '' AND epoch = " + strconv.FormatInt(from, 10) + d.takingAllowed(t), []any{data, name}}
}

// sqlLockDead locks, as sqlLockRows does, the rows under a name prefix
// (lo, hi from prefixRange) that look dead (sqlPruneDead) on the
// statement's snapshot: candidates for a prune, which sqlPruneNames then
// checks again. Live rows are neither locked nor waited for.
func (d poolSQL) sqlLockDead(t Tables, lo, hi string, grace time.Duration) stmt {
	return d.lockRowsWhere(t, prefixFilter+" AND "+d.deadExpr(t, d.quote(t.Leases), grace), []any{lo, hi})
}

// sqlPruneDead deletes the rows under a name prefix (lo, hi from
// prefixRange) that nobody holds or is about to hold, by the database
// clock: rows unheld (released, or created and never acquired) for longer
// than grace, rows of builds before sessions expired for longer than
// grace, and rows whose session has been expired, or gone, for longer
// than grace.
func (d poolSQL) sqlPruneDead(t Tables, lo, hi string, grace time.Duration) stmt {
	q := d.quote(t.Leases)
	return stmt{"DELETE FROM " + q + " WHERE " + prefixFilter + " AND " + d.deadExpr(t, q, grace), []any{lo, hi}}
}

// sqlPruneNames deletes those of the named rows (locked by sqlLockDead)
// that are dead, as sqlPruneDead judges them.
func (d poolSQL) sqlPruneNames(t Tables, names []string, grace time.Duration) stmt {
	q := d.quote(t.Leases)
	in, args := d.nameIn("name", names)
	return stmt{"DELETE FROM " + q + " WHERE " + in + " AND " + d.deadExpr(t, q, grace), args}
}

// deadExpr is true for a lease row (table or alias l) nobody holds or is
// about to hold, for longer than grace by the database clock.
func (d poolSQL) deadExpr(t Tables, l string, grace time.Duration) string {
	old := d.now + " - " + us(grace)
	return "((" + l + ".session_id = '' AND " + l + ".expires_at_us < " + old +
		") OR (" + l + ".session_id <> '' AND NOT " + d.sessionLive(t, l+".session_id", us(grace)) + "))"
}
