package store

import "time"

// The statements of the session table, and the liveness rule of the lease
// rows that ride on a session, as every database shares them.

// ----------------------------------------------------------------------
// Liveness
//
// A lease row is held by a session when session_id is set: it is live
// while that session's row is unexpired by the database clock, so one
// renewal of the session row extends every lease and pool membership of
// the process. Rows written by builds before sessions (session_id '')
// carry their own expiry and stay live until it, so a rolling upgrade
// never takes over a lease an older process still holds. Tombstones of
// renamed pool rows (schema version 3) are such rows, live until 9999.
//
// The same predicate is written once here, for SQL (heldExpr), and once in
// Row.Live, for rows read back.

// heldForever is the expires_at_us of a row held by a session: builds
// before sessions, which only read expires_at_us, see it held until it is
// released. It is 9999-12-31T23:59:59.999999Z.
const heldForever = "253402300799999999"

// sessionLive is true when the session whose id is the SQL expression id
// exists and has not expired by the database clock, less slack (an SQL
// expression in microseconds, "" for none).
func (d *dialect) sessionLive(t Tables, id, slack string) string {
	now := d.now
	if slack != "" {
		now += " - " + slack
	}
	return "EXISTS (SELECT 1 FROM " + d.quote(t.Sessions) + " s WHERE s.id = " + id + " AND s.expires_at_us >= " + now + ")"
}

// heldExpr is true when the lease row whose table or alias is l is held
// and live by the database clock.
func (d *dialect) heldExpr(t Tables, l string) string {
	return "(" + l + ".holder <> '' AND ((" + l + ".session_id = '' AND " + l + ".expires_at_us >= " + d.now + ") OR " +
		d.sessionLive(t, l+".session_id", "") + "))"
}

// sessionColumn reads a column of the row's session, or fallback for a row
// not held by a session. joined says the session table is joined as s;
// otherwise a subquery reads it, which takes no lock that lasts when the
// outer query locks the lease row (sqlFence).
func (d *dialect) sessionColumn(t Tables, l, col, fallback string, joined bool) string {
	sess := "s." + col
	if !joined {
		sess = "(SELECT s." + col + " FROM " + d.quote(t.Sessions) + " s WHERE s.id = " + l + ".session_id)"
	}
	return "CASE WHEN " + l + ".session_id = '' THEN " + l + "." + col + " ELSE COALESCE(" + sess + ", " + fallback + ") END"
}

// rowColumns is the column list read back for a lease aliased l: the
// renewal and expiry of its holder's session, the resign request and
// preference, and the database clock.
func (d *dialect) rowColumns(t Tables, joined bool) string {
	return "l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, " +
		d.sessionColumn(t, "l", "renewed_at_us", "l.renewed_at_us", joined) + ", " +
		d.sessionColumn(t, "l", "expires_at_us", "0", joined) + ", COALESCE(l.data, ''), " +
		"l.resign_epoch, l.prefer_holder, l.prefer_until_us, " + d.now + " AS now_us, " + d.incarnationColumns(t)
}

// readFrom is the FROM clause of a plain read: each lease with its
// session, joined.
func (d *dialect) readFrom(t Tables) string {
	return " FROM " + d.quote(t.Leases) + " l LEFT JOIN " + d.quote(t.Sessions) + " s ON s.id = l.session_id"
}

// ----------------------------------------------------------------------
// Sessions

// sqlCreateSession starts a session, live for ttl by the database clock.
// Where failovers are detected, it records the database incarnation it
// started in.
func (d *dialect) sqlCreateSession(t Tables, id, holder string, ttl time.Duration) stmt {
	cols, vals := "", ""
	if d.incarnation != "" {
		cols, vals = ", incarnation", ", "+d.incarnation
	}
	return stmt{"INSERT INTO " + d.quote(t.Sessions) + " (id, holder, created_at_us, renewed_at_us, expires_at_us" + cols + ") VALUES (?, ?, " +
		d.now + ", " + d.now + ", " + d.now + " + " + us(ttl) + vals + ")", []any{id, holder}}
}

// sqlRenewSession extends a session that has not expired by the database
// clock. An expired session is never revived: its leases may have been
// taken over, and are free in every reader's eyes.
//
// The same statement hands back the session's notice counter, which a
// resign request bumps (sqlNotifySession), so the holder learns of a
// request at its next renewal without a statement of its own: RETURNING
// on PostgreSQL and SQLite, OUTPUT on SQL Server. MariaDB and MySQL have
// no UPDATE ... RETURNING: there notice = LAST_INSERT_ID(notice) leaves
// the column as it is and makes its value the statement's last insert id,
// which the server sends back with the affected-row count.
func (d *dialect) sqlRenewSession(t Tables, id string, ttl time.Duration) stmt {
	set := "UPDATE " + d.quote(t.Sessions) + " SET renewed_at_us = " + d.now + ", expires_at_us = " + d.now + " + " + us(ttl)
	where := " WHERE id = ? AND expires_at_us >= " + d.now + d.sameIncarnation("")
	afterSet, afterWhere := d.returning("notice")
	return stmt{set + afterSet + where + afterWhere, []any{id}}
}

// sqlNotifySession bumps the notice counter of a session: its holder reads
// its pending resign requests after the next renewal that returns the new
// value.
func (d *dialect) sqlNotifySession(t Tables, id string) stmt {
	return stmt{"UPDATE " + d.quote(t.Sessions) + " SET notice = notice + 1 WHERE id = ?", []any{id}}
}

// sqlReadSession reads a session's expiry with the database clock.
func (d *dialect) sqlReadSession(t Tables, id string) stmt {
	return stmt{"SELECT renewed_at_us, expires_at_us, " + d.now + " AS now_us FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlEndSession deletes a session: every lease still held by it is free at
// once.
func (d *dialect) sqlEndSession(t Tables, id string) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlPruneSessions deletes sessions expired for longer than grace. Their
// leases are free already; a missing session reads as an expired one.
func (d *dialect) sqlPruneSessions(t Tables, grace time.Duration) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE expires_at_us < " + d.now + " - " + us(grace), nil}
}
