package store

import (
	"strconv"
	"time"
)

// Failover of the database. Where the database names the server
// incarnation answering (facts.incarnationExpr), a failover that may have
// lost acknowledged writes is defended against in the statements:
//
//   - the first process to see a new incarnation adopts it (sqlAdopt): no
//     lease may be taken for a hold-off of the longest session TTL, and
//     every epoch from then on goes above a floor epochJump past the
//     highest the new server has;
//   - every acquire and publish requires the recorded incarnation and the
//     end of the hold-off (takingAllowed), and takes its epoch above the
//     floor (nextEpoch);
//   - a session renews only in the incarnation it was last checked in
//     (sameIncarnation), so its holder checks its terms (Rebind) before it
//     trusts them again.

// incarnationID is the key of the incarnation table's one row.
const incarnationID = "1"

// epochJump is how far above the highest epoch it has a new incarnation's
// epochs start.
const epochJump = int64(1) << 32

// sameIncarnation is a condition, starting with " AND ", that the row
// (alias l, "" for none) records the incarnation answering; "" where
// failovers are not detected.
func (d *dialect) sameIncarnation(l string) string {
	if d.incarnation == "" {
		return ""
	}
	if l != "" {
		l += "."
	}
	return " AND " + l + "incarnation = " + d.incarnation
}

// incarnationRow is a subquery of one column of the incarnation row.
func (d *dialect) incarnationRow(t Tables, expr string) string {
	return "(SELECT " + expr + " FROM " + d.quote(t.Incarnation) + " i WHERE i.id = " + incarnationID + ")"
}

// nextEpoch is the epoch of a new term or generation of a row: one above
// its epoch, or above the incarnation's floor when that is higher.
func (d *dialect) nextEpoch(t Tables) string {
	if d.incarnation == "" {
		return "epoch + 1"
	}
	floor := "COALESCE(" + d.incarnationRow(t, "i.epoch_floor") + ", 0)"
	return "CASE WHEN epoch >= " + floor + " THEN epoch ELSE " + floor + " END + 1"
}

// takingAllowed is a condition, starting with " AND ", that the
// incarnation row names the incarnation answering and its hold-off has
// passed; "" where failovers are not detected.
func (d *dialect) takingAllowed(t Tables) string {
	if d.incarnation == "" {
		return ""
	}
	return " AND EXISTS (SELECT 1 FROM " + d.quote(t.Incarnation) + " i WHERE i.id = " + incarnationID +
		" AND i.incarnation = " + d.incarnation + " AND i.hold_until_us <= " + d.now + ")"
}

// incarnationColumns end every lease read: the end of the hold-off (-1
// when the row is missing or names another incarnation) and the epoch
// floor; zeros where failovers are not detected.
func (d *dialect) incarnationColumns(t Tables) string {
	if d.incarnation == "" {
		return "0 AS hold_until_us, 0 AS epoch_floor"
	}
	return "COALESCE(" + d.incarnationRow(t, "CASE WHEN i.incarnation = "+d.incarnation+" THEN i.hold_until_us ELSE -1 END") +
		", -1) AS hold_until_us, COALESCE(" + d.incarnationRow(t, "i.epoch_floor") + ", 0) AS epoch_floor"
}

// incarnationSQL builds the statements of the incarnation row.
type incarnationSQL struct{ *dialect }

// sqlEnsureIncarnation creates the incarnation row, naming the incarnation
// answering, unless it exists.
func (d incarnationSQL) sqlEnsureIncarnation(t Tables) stmt {
	q := d.quote(t.Incarnation)
	into := "INSERT INTO " + q + " (id, incarnation, previous, adopted_at_us, hold_until_us, epoch_floor) "
	row := incarnationID + ", " + d.incarnation + ", '', " + d.now + ", 0, 0"
	return stmt{d.insertOnceConcurrent(into, row, q, "id", incarnationID), nil}
}

// sqlAdopt records the incarnation answering, if the row names another,
// starts the hold-off (at least hold) and raises the floor. The
// assignments that read the old incarnation come first (MySQL assigns
// left to right).
func (d incarnationSQL) sqlAdopt(t Tables, hold time.Duration) stmt {
	sessTTL := "COALESCE((SELECT MAX(s.expires_at_us - s.renewed_at_us) FROM " + d.quote(t.Sessions) + " s), 0)"
	maxEpoch := "COALESCE((SELECT MAX(l.epoch) FROM " + d.quote(t.Leases) + " l), 0)"
	return stmt{"UPDATE " + d.quote(t.Incarnation) + " SET hold_until_us = " + d.now + " + CASE WHEN " + sessTTL + " > " + us(hold) +
		" THEN " + sessTTL + " ELSE " + us(hold) + " END, epoch_floor = CASE WHEN epoch_floor >= " + maxEpoch +
		" THEN epoch_floor ELSE " + maxEpoch + " END + " + strconv.FormatInt(epochJump, 10) +
		", previous = incarnation, adopted_at_us = " + d.now + ", incarnation = " + d.incarnation +
		" WHERE id = " + incarnationID + " AND incarnation <> " + d.incarnation, nil}
}

// sqlRebind moves a live session to the incarnation answering, whichever
// it was last checked in, without extending it.
func (d incarnationSQL) sqlRebind(t Tables, id string) stmt {
	return stmt{"UPDATE " + d.quote(t.Sessions) + " SET incarnation = " + d.incarnation + " WHERE id = ? AND expires_at_us >= " +
		d.now, []any{id}}
}

// sqlSessionTerms reads the terms the lease rows show a session holding.
func (d incarnationSQL) sqlSessionTerms(t Tables, id string) stmt {
	return stmt{"SELECT name, epoch FROM " + d.quote(t.Leases) + " WHERE session_id = ? AND holder <> ''", []any{id}}
}

// scanIncarnation fills the last two columns of a lease read into r.
func scanIncarnation(r *Row, hold int64) {
	switch {
	case hold < 0:
		r.incarnationStale = true
	case hold > 0:
		r.HoldUntil = usTime(hold)
	}
}
