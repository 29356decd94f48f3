package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/leasehold/leasehold/internal/wake"
)

// gate bounds how many connections the store's statements use, and runs
// them: each takes a connection slot for its whole duration, on the pool
// or on the connection lent to a wake-up transport (wake.go).
type gate struct {
	db *gorm.DB
	// renewal carries the session's own statements and the releases,
	// general everything else; the same slots when MaxConnections is 1.
	renewal, general slots
	multi            sync.Mutex // takeGeneral's callers take in turn
	maxConns         int
	lockFirst        bool     // the dialect's (decideTx)
	lend             *lending // PostgreSQL with two or more connections; nil otherwise
	sql              *currentSQL
}

// slots is a counting semaphore of connection slots; takers that wait are
// served in the order they came.
type slots chan struct{}

// take takes a slot, waiting for one until ctx is done. A done ctx fails
// at once, even with a slot free.
func (s slots) take(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give gives back a slot taken by take.
func (s slots) give() { <-s }

// giveN gives back n slots.
func (s slots) giveN(n int) {
	for range n {
		s.give()
	}
}

// takeGeneral takes n general slots, or none if ctx is done first.
// Callers take in turn, so two never each hold some and wait for the
// other's.
func (g *gate) takeGeneral(ctx context.Context, n int) error {
	g.multi.Lock()
	defer g.multi.Unlock()
	for i := range n {
		if err := g.general.take(ctx); err != nil {
			g.general.giveN(i)
			return err
		}
	}
	return nil
}

// lostRaceAttempts bounds how often run sends its statements when they
// keep losing to conflicting transactions.
const lostRaceAttempts = 3

// newGate returns the gate of n connections on db, for the SQL cur and
// the tables t.
func newGate(db *gorm.DB, n int, cur *currentSQL, t Tables) *gate {
	d := cur.dl()
	g := &gate{db: db, maxConns: n, lockFirst: d.lockFirst(), sql: cur}
	if n == 1 {
		g.general = make(slots, 1)
		g.renewal = g.general
		return g
	}
	g.general = make(slots, n-1)
	g.renewal = make(slots, 1)
	if d.wakes == wake.Through {
		g.lend = newLending(g, t, d.leases().sqlNow())
	}
	return g
}

// session returns the handle every library statement outside the caller's
// transactions starts from: bound to ctx, through the caller's gorm
// callbacks, and sent to a source, never a replica, by a dbresolver
// registered on the caller's db, also after New.
func (g *gate) session(ctx context.Context) *gorm.DB {
	return g.db.WithContext(ctx).Clauses(dbresolver.Write).Session(&gorm.Session{})
}

// run runs fn with a connection slot of sem taken for its whole duration:
// fn may send several statements, but never two at once. General
// statements run on the lent connection while it is shared (wake.go).
func (g *gate) run(ctx context.Context, sem slots, fn func(db *gorm.DB) error) error {
	if sem == g.general && g.lend != nil {
		return g.lend.run(ctx, fn)
	}
	return g.runOn(ctx, sem, fn)
}

// runOn is run on the pool. fn runs again, lostRaceAttempts times in all
// at most, while it fails with a lost race: nothing of it took effect.
func (g *gate) runOn(ctx context.Context, sem slots, fn func(db *gorm.DB) error) error {
	if err := sem.take(ctx); err != nil {
		return err
	}
	defer sem.give()
	for attempt := 1; ; attempt++ {
		err := fn(g.session(ctx))
		if err == nil || !g.sql.dl().lostRace(err) || attempt == lostRaceAttempts || ctx.Err() != nil {
			return err
		}
	}
}

// pinned runs fn with a handle whose statements all use one connection of
// the primary's pool, presented to gorm as a transaction (pinnedConn), so
// that routing plugins keep them on it.
func pinned(db *gorm.DB, fn func(conn *gorm.DB) error) error {
	return db.Connection(func(conn *gorm.DB) error {
		c, ok := conn.Statement.ConnPool.(*sql.Conn)
		if !ok {
			return fmt.Errorf("leasehold: gorm pinned a %T, not a *sql.Conn", conn.Statement.ConnPool)
		}
		conn.Statement.ConnPool = pinnedConn{c}
		return fn(conn.Session(&gorm.Session{}))
	})
}

// pinnedConn is one connection of the pool that a sequence of statements
// shares. It is a gorm.TxCommitter whose Commit and Rollback are never
// called, and fail.
type pinnedConn struct{ *sql.Conn }

var errPinnedNotTx = errors.New("leasehold: a pinned connection is not a transaction")

// Commit implements gorm.TxCommitter; it is never called.
func (pinnedConn) Commit() error { return errPinnedNotTx }

// Rollback implements gorm.TxCommitter; it is never called.
func (pinnedConn) Rollback() error { return errPinnedNotTx }

// exec runs one statement and returns its affected-row count.
func exec(db *gorm.DB, st stmt) (int64, error) {
	res := db.Exec(st.q, st.args...)
	return res.RowsAffected, res.Error
}

// execStep runs st, a step a database may not take: an empty st sends
// nothing.
func execStep(db *gorm.DB, st stmt) error {
	if st.q == "" {
		return nil
	}
	_, err := exec(db, st)
	return err
}

// execCounted runs c and returns the count of rows it changed.
func execCounted(db *gorm.DB, c counted) (int64, error) {
	if !c.byRow {
		return exec(db, c.stmt)
	}
	got, err := queryAll(db, c.stmt, func(rs *sql.Rows, n *int64) error {
		var empty string
		return rs.Scan(n, &empty)
	})
	if err != nil || len(got) != 1 {
		return 0, err
	}
	return got[0], nil
}

// chunks calls fn with consecutive pieces of items, at most n each.
func chunks[T any](items []T, n int, fn func([]T) error) error {
	for len(items) > 0 {
		k := min(n, len(items))
		if err := fn(items[:k]); err != nil {
			return err
		}
		items = items[k:]
	}
	return nil
}

func usTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// decideTx runs fn in a transaction for statements that decide from the
// sessions table which lease rows to change: under READ COMMITTED where
// lockFirst.
func (g *gate) decideTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	if _, ok := db.Statement.ConnPool.(pinnedConn); ok {
		// The listening connection, where gorm would set a savepoint.
		return pinnedTx(db, pgBeginDecide, fn)
	}
	if !g.lockFirst {
		return db.Transaction(fn)
	}
	return db.Transaction(fn, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
}

// pinnedTx runs fn in a transaction on a pinned connection, begun by the
// statement begin and ended by COMMIT, or by ROLLBACK when fn fails or
// panics.
func pinnedTx(db *gorm.DB, begin string, fn func(tx *gorm.DB) error) (err error) {
	if err := db.Exec(begin).Error; err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			// A cancelled context fails this too; the driver then closes
			// the connection, which ends the transaction.
			db.Exec("ROLLBACK")
		}
	}()
	if err := fn(db); err != nil {
		return err
	}
	committed = true
	return db.Exec("COMMIT").Error
}

// queryAll runs a query and scans every row with scan. An error after the
// last row (which may take a change back) fails the whole read.
func queryAll[T any](db *gorm.DB, st stmt, scan func(rs *sql.Rows, v *T) error) ([]T, error) {
	rs, err := db.Raw(st.q, st.args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []T
	for rs.Next() {
		var v T
		if err := scan(rs, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return out, rs.Close()
}

// scanRow reads the first row st returns into dest, or returns
// sql.ErrNoRows. Unlike gorm's Row, it returns the error of a caller's
// callback that failed the statement before it ran.
func scanRow(db *gorm.DB, st stmt, dest ...any) error {
	rs, err := db.Raw(st.q, st.args...).Rows()
	if err != nil {
		if rs != nil {
			_ = rs.Close()
		}
		return err
	}
	if rs == nil {
		return errors.New("leasehold: gorm returned neither rows nor an error for a read")
	}
	defer rs.Close()
	if !rs.Next() {
		if err := rs.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rs.Scan(dest...); err != nil {
		return err
	}
	return rs.Close()
}

// lockNames runs a locking read of lease names and returns the names
// locked.
func lockNames(db *gorm.DB, st stmt) ([]string, error) {
	return queryAll(db, st, func(rs *sql.Rows, name *string) error { return rs.Scan(name) })
}

func scanTerms(db *gorm.DB, st stmt) ([]Term, error) {
	return queryAll(db, st, func(rs *sql.Rows, t *Term) error { return rs.Scan(&t.Name, &t.Epoch) })
}
