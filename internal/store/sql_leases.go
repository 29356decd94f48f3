package store

import (
	"strconv"
	"strings"
	"time"
)

// leaseSQL builds the statements of the lease rows.
type leaseSQL struct{ *dialect }

// takeable is true for a lease row (table or alias l) that the live
// session may take (Row.Takeable). Arguments: takeableArgs.
func (d leaseSQL) takeable(t Tables, l string) string {
	return "(NOT " + d.heldExpr(t, l) + " OR " + l + ".session_id = ?) AND " + d.sessionLive(t, "?", "") +
		" AND (" + l + ".prefer_until_us < " + d.now + " OR " + l + ".prefer_holder IN (?, ?, ?))" + d.takingAllowed(t)
}

// takeableArgs are the arguments of takeable.
func takeableArgs(session, holder string) []any {
	f := HolderForms(holder)
	return []any{session, session, f[0], f[1], f[2]}
}

// acquireSet starts a new term at the next epoch, clearing a resign
// request or preference. Arguments: holder, session.
func (d leaseSQL) acquireSet(t Tables) string {
	return "holder = ?, session_id = ?, epoch = " + d.nextEpoch(t) + ", acquired_at_us = " + d.now + ", renewed_at_us = " + d.now +
		", expires_at_us = " + heldForever + ", resign_epoch = 0, prefer_holder = '', prefer_until_us = 0"
}

// sqlAcquire starts a new term of every named lease the session may take,
// and returns (name, epoch) of each (acquireReturning).
func (d leaseSQL) sqlAcquire(t Tables, session, holder string, names []string) stmt {
	q := d.quote(t.Leases)
	in, inArgs := d.nameIn("name", names)
	args := append([]any{holder, session}, inArgs...)
	args = append(args, takeableArgs(session, holder)...)
	where := " WHERE " + in + " AND " + d.takeable(t, q)
	afterSet, afterWhere := d.returning("name", "epoch")
	return stmt{"UPDATE " + q + " SET " + d.acquireSet(t) + afterSet + where + afterWhere, args}
}

// sqlLockRows locks the named rows for the rest of the transaction, in
// name order.
func (d leaseSQL) sqlLockRows(t Tables, names []string) stmt {
	in, args := d.nameIn("name", names)
	return d.lockRowsWhere(t, in, args)
}

// lockRowsWhere locks the rows that match where, in name order, for the
// rest of the transaction, and reads their names.
func (d *dialect) lockRowsWhere(t Tables, where string, args []any) stmt {
	hint, suffix := d.lockRows.hint, d.lockRows.suffix
	return stmt{"SELECT name FROM " + d.quote(t.Leases) + hint + " WHERE " + where + " ORDER BY name" + suffix, args}
}

// sqlAcquireLock locks the named leases the session may take and reads
// their epochs (acquireLockThenUpdate).
func (d leaseSQL) sqlAcquireLock(t Tables, session, holder string, names []string) stmt {
	q := d.quote(t.Leases)
	args := append(namesArgs(names), takeableArgs(session, holder)...)
	return stmt{"SELECT name, epoch FROM " + q + " WHERE name IN (" + placeholders(len(names)) + ") AND " +
		d.takeable(t, q) + " FOR UPDATE", args}
}

// sqlAcquireTerms is the update of a MySQL acquire: it starts a new term
// of exactly the terms sqlAcquireLock locked, and, where recheckAcquire,
// only of those this session can still take.
func (d leaseSQL) sqlAcquireTerms(t Tables, session, holder string, terms []Term) stmt {
	q := d.quote(t.Leases)
	filter, targs := termsFilter(terms)
	args := append([]any{holder, session}, targs...)
	where := " WHERE " + filter
	if d.recheckAcquire {
		where += " AND " + d.takeable(t, q)
		args = append(args, takeableArgs(session, holder)...)
	}
	return stmt{"UPDATE " + q + " SET " + d.acquireSet(t) + where, args}
}

// sqlAcquiredEpochs reads back the epochs sqlAcquireTerms gave, which the
// incarnation's floor may have raised above the locked epoch + 1.
func (d leaseSQL) sqlAcquiredEpochs(t Tables, session string, terms []Term) stmt {
	names := make([]string, len(terms))
	for i, term := range terms {
		names[i] = term.Name
	}
	in, args := d.nameIn("name", names)
	return stmt{"SELECT name, epoch FROM " + d.quote(t.Leases) + " WHERE " + in + " AND session_id = ?", append(args, session)}
}

// sqlRelease frees the given terms of a session at once, keeping their
// epochs; a term not the session's at that epoch is left untouched.
func (d leaseSQL) sqlRelease(t Tables, session string, terms []Term) stmt {
	q := d.quote(t.Leases)
	where, args := d.whereTerms(q, session, terms)
	return stmt{"UPDATE " + q + " SET holder = '', session_id = '', expires_at_us = " + d.now + where, args}
}

// sqlRequestResign records a resign request for one term, fenced by
// session and epoch; prefer, when set, names the process that should take
// the lease next, holding every other off for window.
func (d leaseSQL) sqlRequestResign(t Tables, session string, term Term, prefer string, window time.Duration) stmt {
	until := "0"
	if prefer != "" {
		until = d.now + " + " + us(window)
	}
	e := strconv.FormatInt(term.Epoch, 10)
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET resign_epoch = " + e + ", prefer_holder = ?, prefer_until_us = " + until +
		" WHERE name = ? AND epoch = " + e + " AND session_id = ?", []any{prefer, term.Name, session}}
}

// sqlWriteLock takes SQLite's write lock for the rest of the transaction,
// changing and returning nothing.
func (d leaseSQL) sqlWriteLock(t Tables) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET epoch = epoch WHERE 1 = 0 RETURNING name", nil}
}

// sqlPendingResigns reads which of the named leases held by a session have
// a resign request for their current term.
func (d leaseSQL) sqlPendingResigns(t Tables, session string, names []string) stmt {
	in, args := d.nameIn("name", names)
	return stmt{"SELECT name, epoch FROM " + d.quote(t.Leases) + " WHERE " + in +
		" AND session_id = ? AND resign_epoch = epoch AND resign_epoch > 0", append(args, session)}
}

// sessionColumn reads a column of the row's session, or fallback for a row
// not held by a session: from the session table joined as s, or else by a
// subquery, which keeps no lock (sqlFence).
func (d leaseSQL) sessionColumn(t Tables, l, col, fallback string, joined bool) string {
	sess := "s." + col
	if !joined {
		sess = "(SELECT s." + col + " FROM " + d.quote(t.Sessions) + " s WHERE s.id = " + l + ".session_id)"
	}
	return "CASE WHEN " + l + ".session_id = '' THEN " + l + "." + col + " ELSE COALESCE(" + sess + ", " + fallback + ") END"
}

// rowColumns are the columns of a Row, for a lease aliased l.
func (d leaseSQL) rowColumns(t Tables, joined bool) string {
	return "l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, " +
		d.sessionColumn(t, "l", "renewed_at_us", "l.renewed_at_us", joined) + ", " +
		d.sessionColumn(t, "l", "expires_at_us", "0", joined) + ", COALESCE(l.data, ''), " +
		"l.resign_epoch, l.prefer_holder, l.prefer_until_us, " + d.now + " AS now_us, " + d.incarnationColumns(t)
}

// readFrom is the FROM clause of a plain read.
func (d leaseSQL) readFrom(t Tables) string {
	return " FROM " + d.quote(t.Leases) + " l LEFT JOIN " + d.quote(t.Sessions) + " s ON s.id = l.session_id"
}

// sqlSelect reads the named leases with the database clock.
func (d leaseSQL) sqlSelect(t Tables, names []string) stmt {
	in, args := d.nameIn("l.name", names)
	return stmt{"SELECT " + d.rowColumns(t, true) + d.readFrom(t) + " WHERE " + in, args}
}

// sqlList reads every lease, or those whose name starts with a prefix:
// lo and hi are the bounds from prefixRange, or "" for all.
func (d leaseSQL) sqlList(t Tables, lo, hi string) stmt {
	q := "SELECT " + d.rowColumns(t, true) + d.readFrom(t)
	if lo == "" {
		return stmt{q + " ORDER BY l.name", nil}
	}
	return stmt{q + " WHERE " + strings.ReplaceAll(prefixFilter, "name", "l.name") + " ORDER BY l.name", []any{lo, hi}}
}

// sqlNow reads the database clock alone.
func (d leaseSQL) sqlNow() stmt {
	return stmt{"SELECT " + d.now + " AS now_us", nil}
}

// sqlFence reads one lease inside the caller's transaction and locks its
// row, and only its row, against a change of holder until the transaction
// ends; the holder's session row stays free for its renewal.
func (d leaseSQL) sqlFence(t Tables, name string) stmt {
	hint, suffix := d.lockForShare("l")
	return stmt{"SELECT " + d.rowColumns(t, false) + " FROM " + d.quote(t.Leases) + " l" + hint + " WHERE l.name = ?" + suffix, []any{name}}
}
