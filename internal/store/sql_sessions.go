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

// ----------------------------------------------------------------------
// Sessions

// sessionSQL builds the statements of the session table.
type sessionSQL struct{ *dialect }

// sqlCreateSession starts a session, live for ttl by the database clock.
// Where failovers are detected, it records the database incarnation it
// started in.
func (d sessionSQL) sqlCreateSession(t Tables, id, holder string, ttl time.Duration) stmt {
	return d.createSession(t, id, holder, ttl, "", "")
}

// sqlCreateSessionAdvertised is sqlCreateSession of a row that
// advertises where its process receives peer wake-ups, and the key they
// are authenticated with (schema version 10). No lease rides on it.
func (d sessionSQL) sqlCreateSessionAdvertised(t Tables, id, holder string, ttl time.Duration, addrs, key string) stmt {
	return d.createSession(t, id, holder, ttl, ", wake_addrs, wake_key", ", ?, ?", addrs, key)
}

// createSession is the INSERT of a session row, with the columns cols
// and their values vals (each starting with a comma), whose arguments are
// args.
func (d sessionSQL) createSession(t Tables, id, holder string, ttl time.Duration, cols, vals string, args ...any) stmt {
	if d.incarnation != "" {
		cols, vals = cols+", incarnation", vals+", "+d.incarnation
	}
	return stmt{"INSERT INTO " + d.quote(t.Sessions) + " (id, holder, created_at_us, renewed_at_us, expires_at_us" + cols + ") VALUES (?, ?, " +
		d.now + ", " + d.now + ", " + d.now + " + " + us(ttl) + vals + ")", append([]any{id, holder}, args...)}
}

// sqlPeers reads the peer wake-up adverts of the rows live, or expired
// less than grace ago, by the database clock: a process whose renewal of
// its row is late is still sent to.
func (d sessionSQL) sqlPeers(t Tables, grace time.Duration) stmt {
	return stmt{"SELECT wake_addrs, wake_key FROM " + d.quote(t.Sessions) + " WHERE wake_key <> '' AND expires_at_us >= " + d.now + " - " + us(grace), nil}
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
func (d sessionSQL) sqlRenewSession(t Tables, id string, ttl time.Duration) stmt {
	set := "UPDATE " + d.quote(t.Sessions) + " SET renewed_at_us = " + d.now + ", expires_at_us = " + d.now + " + " + us(ttl)
	where := " WHERE id = ? AND expires_at_us >= " + d.now + d.sameIncarnation("")
	afterSet, afterWhere := d.returning("notice")
	return stmt{set + afterSet + where + afterWhere, []any{id}}
}

// sqlNotifySession bumps the notice counter of a session: its holder reads
// its pending resign requests after the next renewal that returns the new
// value.
func (d sessionSQL) sqlNotifySession(t Tables, id string) stmt {
	return stmt{"UPDATE " + d.quote(t.Sessions) + " SET notice = notice + 1 WHERE id = ?", []any{id}}
}

// sqlReadSession reads a session's expiry with the database clock.
func (d sessionSQL) sqlReadSession(t Tables, id string) stmt {
	return stmt{"SELECT renewed_at_us, expires_at_us, " + d.now + " AS now_us FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlEndSession deletes a session: every lease still held by it is free at
// once.
func (d sessionSQL) sqlEndSession(t Tables, id string) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlPruneSessions deletes sessions expired for longer than grace. Their
// leases are free already; a missing session reads as an expired one.
func (d sessionSQL) sqlPruneSessions(t Tables, grace time.Duration) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE expires_at_us < " + d.now + " - " + us(grace), nil}
}
