package store

import (
	"strconv"
	"strings"
	"time"
)

// The statements of the lease table, as every database shares them.

// takeable is true for a lease row (table or alias l) that session may
// take: free, expired, held by a dead session, or held by session itself;
// only while session itself is live; and only when no unexpired resign
// preference (prefer_holder, until prefer_until_us by the database clock)
// names another process. Arguments: takeableArgs.
func (d *dialect) takeable(t Tables, l string) string {
	return "(NOT " + d.heldExpr(t, l) + " OR " + l + ".session_id = ?) AND " + d.sessionLive(t, "?", "") +
		" AND (" + l + ".prefer_until_us < " + d.now + " OR " + l + ".prefer_holder IN (?, ?, ?))" + d.takingAllowed(t)
}

// takeableArgs are the arguments of takeable: the session twice, then the
// three forms of the holder a preference may name (HolderForms).
func takeableArgs(session, holder string) []any {
	f := HolderForms(holder)
	return []any{session, session, f[0], f[1], f[2]}
}

// acquireSet starts a new term: the epoch goes up by one (above the
// incarnation's floor, incarnation.go) in the same statement, and a resign request or preference left from an earlier term
// is cleared. Arguments: holder, session.
func (d *dialect) acquireSet(t Tables) string {
	return "holder = ?, session_id = ?, epoch = " + d.nextEpoch(t) + ", acquired_at_us = " + d.now + ", renewed_at_us = " + d.now +
		", expires_at_us = " + heldForever + ", resign_epoch = 0, prefer_holder = '', prefer_until_us = 0"
}

// sqlAcquire takes, for the live session, every named lease that is free,
// expired, held by a dead session or by this session, and starts a new
// term of each. It returns (name, epoch) of each term started, except on
// MySQL (acquireLockThenUpdate), where sqlAcquireLock and
// sqlAcquireTerms do the same in two statements.
func (d *dialect) sqlAcquire(t Tables, session, holder string, names []string) stmt {
	q := d.quote(t.Leases)
	in, inArgs := d.nameIn("name", names)
	args := append([]any{holder, session}, inArgs...)
	args = append(args, takeableArgs(session, holder)...)
	where := " WHERE " + in + " AND " + d.takeable(t, q)
	afterSet, afterWhere := d.returning("name", "epoch")
	return stmt{"UPDATE " + q + " SET " + d.acquireSet(t) + afterSet + where + afterWhere, args}
}

// sqlLockRows locks the rows of the named leases (lockFirst) for the
// rest of the caller's transaction, in name order.
func (d *dialect) sqlLockRows(t Tables, names []string) stmt {
	in, args := d.nameIn("name", names)
	return d.lockRowsWhere(t, in, args)
}

// sqlLockDead locks, as sqlLockRows does, the rows under a name prefix
// (lo, hi from prefixRange) that look dead (sqlPruneDead) on the
// statement's snapshot: candidates for a prune, which sqlPruneNames then
// checks again. Live rows are neither locked nor waited for.
func (d *dialect) sqlLockDead(t Tables, lo, hi string, grace time.Duration) stmt {
	return d.lockRowsWhere(t, prefixFilter+" AND "+d.deadExpr(t, d.quote(t.Leases), grace), []any{lo, hi})
}

func (d *dialect) lockRowsWhere(t Tables, where string, args []any) stmt {
	hint, suffix := d.lockRows.hint, d.lockRows.suffix
	return stmt{"SELECT name FROM " + d.quote(t.Leases) + hint + " WHERE " + where + " ORDER BY name" + suffix, args}
}

// sqlAcquireLock is the locking read of a MySQL acquire: it locks the
// named leases this session can take and reads their epochs.
func (d *dialect) sqlAcquireLock(t Tables, session, holder string, names []string) stmt {
	q := d.quote(t.Leases)
	args := append(namesArgs(names), takeableArgs(session, holder)...)
	return stmt{"SELECT name, epoch FROM " + q + " WHERE name IN (" + placeholders(len(names)) + ") AND " +
		d.takeable(t, q) + " FOR UPDATE", args}
}

// sqlAcquireTerms is the update of a MySQL acquire: it starts a new term
// of exactly the terms sqlAcquireLock locked.
func (d *dialect) sqlAcquireTerms(t Tables, session, holder string, terms []Term) stmt {
	filter, targs := termsFilter(terms)
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET " + d.acquireSet(t) + " WHERE " + filter,
		append([]any{holder, session}, targs...)}
}

// sqlRelease gives up the given terms of a session: the holder is cleared
// and the lease is free at once. The epoch is kept, so it is never reused.
// A term that is not this session's at that epoch is left untouched.
func (d *dialect) sqlRelease(t Tables, session string, terms []Term) stmt {
	q := d.quote(t.Leases)
	where, args := d.whereTerms(q, session, terms)
	return stmt{"UPDATE " + q + " SET holder = '', session_id = '', expires_at_us = " + d.now + where, args}
}

// sqlRequestResign records a resign request for one term of a lease,
// fenced by session and epoch, so it never touches a later term. prefer,
// when set, names the process that should take the lease next, and holds
// every other one off until window has passed by the database clock.
func (d *dialect) sqlRequestResign(t Tables, session string, term Term, prefer string, window time.Duration) stmt {
	until := "0"
	if prefer != "" {
		until = d.now + " + " + us(window)
	}
	e := strconv.FormatInt(term.Epoch, 10)
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET resign_epoch = " + e + ", prefer_holder = ?, prefer_until_us = " + until +
		" WHERE name = ? AND epoch = " + e + " AND session_id = ?", []any{prefer, term.Name, session}}
}

// sqlWriteLock takes, where writers exclude each other (SQLite), the
// database's write lock for the rest of the caller's transaction without
// changing a row, and returns no rows.
func (d *dialect) sqlWriteLock(t Tables) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET epoch = epoch WHERE 1 = 0 RETURNING name", nil}
}

// sqlPendingResigns reads which of the named leases held by a session have
// a resign request for their current term.
func (d *dialect) sqlPendingResigns(t Tables, session string, names []string) stmt {
	in, args := d.nameIn("name", names)
	return stmt{"SELECT name, epoch FROM " + d.quote(t.Leases) + " WHERE " + in +
		" AND session_id = ? AND resign_epoch = epoch AND resign_epoch > 0", append(args, session)}
}

// sqlSelect reads the named leases together with the database clock.
// PostgreSQL gets the names as one text[] parameter, matched with a
// semi-join (pgNameIn).
func (d *dialect) sqlSelect(t Tables, names []string) stmt {
	in, args := d.nameIn("l.name", names)
	return stmt{"SELECT " + d.rowColumns(t, true) + d.readFrom(t) + " WHERE " + in, args}
}

// sqlList reads every lease, or those whose name starts with a prefix:
// lo and hi are the bounds from prefixRange, or "" for all.
func (d *dialect) sqlList(t Tables, lo, hi string) stmt {
	q := "SELECT " + d.rowColumns(t, true) + d.readFrom(t)
	if lo == "" {
		return stmt{q + " ORDER BY l.name", nil}
	}
	return stmt{q + " WHERE " + strings.ReplaceAll(prefixFilter, "name", "l.name") + " ORDER BY l.name", []any{lo, hi}}
}

// sqlNow reads the database clock alone.
func (d *dialect) sqlNow() stmt {
	return stmt{"SELECT " + d.now + " AS now_us", nil}
}

// sqlFence reads one lease inside the caller's transaction and locks its
// row, and only its row, against a change of holder until that transaction
// ends: a share lock on PostgreSQL and MySQL, a held shared row lock on
// SQL Server. The session's expiry is read by a subquery, which takes no
// lock that lasts (MySQL does not lock a subquery's rows for a locking
// read of the outer query), so a fenced transaction never holds off the
// renewal of the holder's session. SQLite needs no lock hint: a writing
// transaction already excludes every other writer, and a deferred one that
// read a stale snapshot cannot commit a write.
func (d *dialect) sqlFence(t Tables, name string) stmt {
	hint, suffix := d.lockForShare("l")
	return stmt{"SELECT " + d.rowColumns(t, false) + " FROM " + d.quote(t.Leases) + " l" + hint + " WHERE l.name = ?" + suffix, []any{name}}
}

// sqlSetData writes a term's data, only while the term is this live
// session's.
func (d *dialect) sqlSetData(t Tables, session string, term Term, data string) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET data = ? WHERE name = ? AND epoch = " + strconv.FormatInt(term.Epoch, 10) +
		" AND session_id = ? AND " + d.sessionLive(t, "?", ""), []any{data, term.Name, session, session}}
}

// sqlPublish is the compare-and-set that publishes a pool's next
// generation: one above from, or above the incarnation's floor, and only
// where a lease could be taken now (incarnation.go).
func (d *dialect) sqlPublish(t Tables, name string, from int64, data string) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET epoch = " + d.nextEpoch(t) + ", data = ?, renewed_at_us = " + d.now +
		" WHERE name = ? AND holder = '' AND epoch = " + strconv.FormatInt(from, 10) + d.takingAllowed(t), []any{data, name}}
}

// sqlPruneDead deletes the rows under a name prefix (lo, hi from
// prefixRange) that nobody holds or is about to hold, by the database
// clock: rows unheld (released, or created and never acquired) for longer
// than grace, rows of builds before sessions expired for longer than
// grace, and rows whose session has been expired, or gone, for longer
// than grace.
func (d *dialect) sqlPruneDead(t Tables, lo, hi string, grace time.Duration) stmt {
	q := d.quote(t.Leases)
	return stmt{"DELETE FROM " + q + " WHERE " + prefixFilter + " AND " + d.deadExpr(t, q, grace), []any{lo, hi}}
}

// sqlPruneNames deletes those of the named rows (locked by sqlLockDead)
// that are dead, as sqlPruneDead judges them.
func (d *dialect) sqlPruneNames(t Tables, names []string, grace time.Duration) stmt {
	q := d.quote(t.Leases)
	in, args := d.nameIn("name", names)
	return stmt{"DELETE FROM " + q + " WHERE " + in + " AND " + d.deadExpr(t, q, grace), args}
}

// deadExpr is true for a lease row (table or alias l) nobody holds or is
// about to hold, for longer than grace by the database clock.
func (d *dialect) deadExpr(t Tables, l string, grace time.Duration) string {
	old := d.now + " - " + us(grace)
	return "((" + l + ".session_id = '' AND " + l + ".expires_at_us < " + old +
		") OR (" + l + ".session_id <> '' AND NOT " + d.sessionLive(t, l+".session_id", us(grace)) + "))"
}
