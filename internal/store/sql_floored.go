package store

import (
	"strconv"
	"strings"
	"time"
)

// The statements of floored rows, as every database shares them.

// flooredSQL builds the statements of floored rows (locks.go): lease rows
// that are deleted when nobody holds them, and whose epochs continue from
// a floor row that outlives them. Every statement that creates or deletes
// a floored row runs after its floor row is locked.
type flooredSQL struct{ *dialect }

// sqlLockEpochs locks the named rows for the rest of the caller's
// transaction, in name order, and reads their epochs. On SQLite it locks
// nothing: the caller holds the write lock (sqlWriteLock).
func (d flooredSQL) sqlLockEpochs(t Tables, names []string) stmt {
	in, args := d.nameIn("name", names)
	hint, suffix := d.lockRows.hint, d.lockRows.suffix
	return stmt{"SELECT name, epoch FROM " + d.quote(t.Leases) + hint + " WHERE " + in + " ORDER BY name" + suffix, args}
}

// sqlInsert inserts unheld rows with the given names and epochs. The
// caller checked, under the locks of their floor rows, that none exists;
// every creator of a floored row takes those locks first, so the insert
// never meets a row inserted meanwhile.
func (d flooredSQL) sqlInsert(t Tables, rows []Term) stmt {
	vals := make([]string, len(rows))
	args := make([]any, len(rows))
	for i, r := range rows {
		vals[i] = "(?, " + strconv.FormatInt(r.Epoch, 10) + ", " + d.now + ")"
		args[i] = r.Name
	}
	return stmt{"INSERT INTO " + d.quote(t.Leases) + " (name, epoch, expires_at_us) VALUES " + strings.Join(vals, ", "), args}
}

// sqlRaiseFloors raises the epoch of each floor row to at least the
// epoch given for it, and leaves a higher one as it is.
func (d flooredSQL) sqlRaiseFloors(t Tables, floors []Term) stmt {
	var b strings.Builder
	args := make([]any, 0, 2*len(floors))
	b.WriteString("UPDATE " + d.quote(t.Leases) + " SET epoch = CASE")
	names := make([]string, len(floors))
	for i, f := range floors {
		e := strconv.FormatInt(f.Epoch, 10)
		b.WriteString(" WHEN name = ? AND epoch < " + e + " THEN " + e)
		args = append(args, f.Name)
		names[i] = f.Name
	}
	in, inArgs := d.nameIn("name", names)
	b.WriteString(" ELSE epoch END WHERE " + in)
	return stmt{b.String(), append(args, inArgs...)}
}

// sqlCreate inserts the unheld floored rows at the epochs at, those of
// their floor rows (insertAtFloors).
func (d flooredSQL) sqlCreate(t Tables, at []Term, rows []Floored) stmt {
	return d.insertAtFloors(t, rows, d.sqlInsert(t, at))
}

// sqlDeleteTerms deletes the rows of the given terms of session: a row
// that is not the session's at that epoch any more is left untouched
// (deleteAtFloors).
func (d flooredSQL) sqlDeleteTerms(t Tables, session string, terms []FlooredTerm) stmt {
	plain := plainTerms(terms)
	where, args := sessionTermsWhere(session, plain)
	filter, fargs := termsFilterOf("l", plain)
	return d.deleteAtFloors(t, flooredRows(terms), "l.session_id = ? AND "+filter, append([]any{session}, fargs...),
		stmt{"DELETE FROM " + d.quote(t.Leases) + where, args})
}

// sqlReadDead reads, in name order, at most n rows under a name prefix
// (lo, hi from prefixRange) that nobody holds or is about to hold, as
// the prune of pool members judges them (deadExpr), with their epochs.
// It locks nothing: the prune decides again under the locks.
func (d flooredSQL) sqlReadDead(t Tables, lo, hi string, grace time.Duration, n int) stmt {
	q := d.quote(t.Leases)
	top, tail := d.firstRows(n)
	return stmt{"SELECT " + top + "name, epoch FROM " + q + " WHERE " + prefixFilter + " AND " +
		d.pools().deadExpr(t, q, grace) + " ORDER BY name" + tail, []any{lo, hi}}
}

// sqlDeleteDead deletes those of the given terms whose rows are still
// at that epoch and still dead (deleteAtFloors).
func (d flooredSQL) sqlDeleteDead(t Tables, terms []FlooredTerm, grace time.Duration) stmt {
	q := d.quote(t.Leases)
	plain := plainTerms(terms)
	filter, args := termsFilter(plain)
	lfilter, largs := termsFilterOf("l", plain)
	return d.deleteAtFloors(t, flooredRows(terms), lfilter+" AND "+d.pools().deadExpr(t, "l", grace), largs,
		stmt{"DELETE FROM " + q + " WHERE " + filter + " AND " + d.pools().deadExpr(t, q, grace), args})
}

// plainTerms returns the terms of terms, without their floor rows.
func plainTerms(terms []FlooredTerm) []Term {
	out := make([]Term, len(terms))
	for i, t := range terms {
		out[i] = t.Term
	}
	return out
}

// flooredRows returns the rows of terms, with their floor rows.
func flooredRows(terms []FlooredTerm) []Floored {
	out := make([]Floored, len(terms))
	for i, t := range terms {
		out[i] = Floored{Name: t.Name, Floor: t.Floor}
	}
	return out
}
