package store

import (
	"strconv"
	"time"
)

// Failover of the database
//
// Every guarantee of leasehold rests on the database remembering the lease
// rows. A failover to an asynchronous standby breaks that: the last
// acquires, renewals and releases the old primary acknowledged may be
// missing on the new one. A lease can then look free while a process still
// trusts a term the old primary granted, and its epoch is one the old
// primary already handed out.
//
// Where the database can say which incarnation of the server answers
// (facts.incarnationExpr: PostgreSQL's system identifier and timeline,
// MariaDB's server_id, SQL Server's instance name), the store defends
// against this in three places:
//
//   - The incarnation table's one row records the incarnation the lease
//     rows were last known to live in. The first process to see another
//     one adopts it (sqlAdopt): no lease may be taken for a hold-off, the
//     longest session TTL (at least the adopter's) by the new server's
//     clock, so that every term the old primary granted has passed its
//     holder's trust deadline; and every epoch from then on goes above a
//     floor 2^32 past the highest epoch the new server has, so that no
//     epoch the old primary may have issued since is issued again.
//   - Every acquire and every pool publish requires, in its own
//     statement, that the row names the incarnation answering and that the
//     hold-off has passed (takingAllowed), and takes its epoch above the
//     floor (nextEpoch). Safety does not wait for anyone to notice.
//   - Each session records the incarnation it was last checked in, and
//     its renewal succeeds only there (sameIncarnation). After a failover
//     the holder's renewal fails, and the holder checks its terms against
//     the new server's rows (Rebind) before it trusts any of them again:
//     a term the new server does not have is dropped at once.
//
// MySQL (whose probe fails: mysql.go) and SQLite have no incarnation
// here: their leases assume that what the server acknowledged it keeps.

// incarnationID is the key of the incarnation table's one row.
const incarnationID = "1"

// epochJump is how far above the highest epoch it has a new incarnation's
// epochs start: more than the old primary could have issued for one lease
// in the time its writes were not yet on the standby.
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

// takingAllowed is a condition, starting with " AND ", that a lease may be
// taken now: the incarnation row names the incarnation answering and its
// hold-off has passed by the database clock. "" where failovers are not
// detected.
func (d *dialect) takingAllowed(t Tables) string {
	if d.incarnation == "" {
		return ""
	}
	return " AND EXISTS (SELECT 1 FROM " + d.quote(t.Incarnation) + " i WHERE i.id = " + incarnationID +
		" AND i.incarnation = " + d.incarnation + " AND i.hold_until_us <= " + d.now + ")"
}

// incarnationColumns are the two columns every lease read ends with: until
// when no lease may be taken (-1 when the incarnation row is missing or
// names another incarnation, which the reader adopts), and the epoch
// floor. Constant zeros where failovers are not detected.
func (d *dialect) incarnationColumns(t Tables) string {
	if d.incarnation == "" {
		return "0 AS hold_until_us, 0 AS epoch_floor"
	}
	return "COALESCE(" + d.incarnationRow(t, "CASE WHEN i.incarnation = "+d.incarnation+" THEN i.hold_until_us ELSE -1 END") +
		", -1) AS hold_until_us, COALESCE(" + d.incarnationRow(t, "i.epoch_floor") + ", 0) AS epoch_floor"
}

// incarnationSQL builds the statements of the incarnation row, and of a
// session's move to the incarnation answering.
type incarnationSQL struct{ *dialect }

// sqlEnsureIncarnation creates the incarnation row, naming the incarnation
// answering, unless it exists.
func (d incarnationSQL) sqlEnsureIncarnation(t Tables) stmt {
	q := d.quote(t.Incarnation)
	into := "INSERT INTO " + q + " (id, incarnation, previous, adopted_at_us, hold_until_us, epoch_floor) "
	row := incarnationID + ", " + d.incarnation + ", '', " + d.now + ", 0, 0"
	return stmt{d.insertOnceConcurrent(into, row, q, "id", incarnationID), nil}
}

// sqlAdopt records the incarnation answering in the row, if it names
// another, and starts the hold-off and raises the floor (see the top of
// this file). hold is the least hold-off: the adopter's own TTL. The
// assignments that read the old incarnation come before the one that
// changes it, which MySQL's left-to-right UPDATE would need.
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
// it was last checked in: it matches the session whenever it is live, so
// that of two concurrent checks of one session (a renewal tick and an
// acquire's renewal) the second, finding it moved already, does not take
// it for gone. It does not extend the session.
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
