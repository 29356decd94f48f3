package store

import "time"

// Liveness: a lease row with a session_id is live while that session's
// row is unexpired by the database clock; a row without one (a build
// before sessions, a tombstone) while its own expires_at_us is.

// heldForever (9999-12-31T23:59:59.999999Z) is the expires_at_us of a row
// held by a session, which builds before sessions read as held.
const heldForever = "253402300799999999"

// sessionLive is true when the session whose id is the SQL expression id
// has not expired, less slack (microseconds, "" for none).
func (d *dialect) sessionLive(t Tables, id, slack string) string {
	now := d.now
	if slack != "" {
		now += " - " + slack
	}
	return "EXISTS (SELECT 1 FROM " + d.quote(t.Sessions) + " s WHERE s.id = " + id + " AND s.expires_at_us >= " + now + ")"
}

// heldExpr is true when the lease row (table or alias l) is held and live.
func (d *dialect) heldExpr(t Tables, l string) string {
	return "(" + l + ".holder <> '' AND ((" + l + ".session_id = '' AND " + l + ".expires_at_us >= " + d.now + ") OR " +
		d.sessionLive(t, l+".session_id", "") + "))"
}

// sessionSQL builds the statements of the session table.
type sessionSQL struct{ *dialect }

// sqlCreateSession starts a session, live for ttl, in the incarnation
// answering.
func (d sessionSQL) sqlCreateSession(t Tables, id, holder string, ttl time.Duration) stmt {
	return d.createSession(t, id, holder, ttl, "", "")
}

// sqlCreateSessionAdvertised is sqlCreateSession of a row that advertises
// its process's peer wake-ups; no lease rides on it.
func (d sessionSQL) sqlCreateSessionAdvertised(t Tables, id, holder string, ttl time.Duration, addrs, key string) stmt {
	return d.createSession(t, id, holder, ttl, ", wake_addrs, wake_key", ", ?, ?", addrs, key)
}

// createSession is the INSERT of a session row with the extra columns
// cols and values vals (each starting with a comma) and their args.
func (d sessionSQL) createSession(t Tables, id, holder string, ttl time.Duration, cols, vals string, args ...any) stmt {
	if d.incarnation != "" {
		cols, vals = cols+", incarnation", vals+", "+d.incarnation
	}
	return stmt{"INSERT INTO " + d.quote(t.Sessions) + " (id, holder, created_at_us, renewed_at_us, expires_at_us" + cols + ") VALUES (?, ?, " +
		d.now + ", " + d.now + ", " + d.now + " + " + us(ttl) + vals + ")", append([]any{id, holder}, args...)}
}

// sqlPeers reads the peer wake-up adverts of the rows live, or expired
// less than grace ago.
func (d sessionSQL) sqlPeers(t Tables, grace time.Duration) stmt {
	return stmt{"SELECT wake_addrs, wake_key FROM " + d.quote(t.Sessions) + " WHERE wake_key <> '' AND expires_at_us >= " + d.now + " - " + us(grace), nil}
}

// sqlRenewSession extends a session that has not expired (an expired one
// is never revived), and hands back its notice counter.
func (d sessionSQL) sqlRenewSession(t Tables, id string, ttl time.Duration) stmt {
	set := "UPDATE " + d.quote(t.Sessions) + " SET renewed_at_us = " + d.now + ", expires_at_us = " + d.now + " + " + us(ttl)
	where := " WHERE id = ? AND expires_at_us >= " + d.now + d.sameIncarnation("")
	afterSet, afterWhere := d.returning("notice")
	return stmt{set + afterSet + where + afterWhere, []any{id}}
}

// sqlNotifySession bumps the notice counter of a session.
func (d sessionSQL) sqlNotifySession(t Tables, id string) stmt {
	return stmt{"UPDATE " + d.quote(t.Sessions) + " SET notice = notice + 1 WHERE id = ?", []any{id}}
}

// sqlReadSession reads a session's expiry with the database clock.
func (d sessionSQL) sqlReadSession(t Tables, id string) stmt {
	return stmt{"SELECT renewed_at_us, expires_at_us, " + d.now + " AS now_us FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlListSessions reads every session row with the database clock, by
// holder; not the wake-up keys.
func (d sessionSQL) sqlListSessions(t Tables) stmt {
	return stmt{"SELECT id, holder, renewed_at_us, expires_at_us, wake_addrs, " + d.now + " AS now_us FROM " + d.quote(t.Sessions) + " ORDER BY holder, id", nil}
}

// sqlEndSession deletes a session: its leases are free at once.
func (d sessionSQL) sqlEndSession(t Tables, id string) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlPruneSessions deletes sessions expired for longer than grace; a
// missing session reads as an expired one.
func (d sessionSQL) sqlPruneSessions(t Tables, grace time.Duration) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE expires_at_us < " + d.now + " - " + us(grace), nil}
}
