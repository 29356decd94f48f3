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

// Connection slots, pinned connections, transactions and reads.

// gate bounds how many connections the store's statements use, and runs
// them: each takes a connection slot for its whole duration, and runs on
// the pool, or on the connection lent to a wake-up transport (wake.go).
type gate struct {
	db *gorm.DB
	// renewal and general bound the connections in use: renewal carries
	// the session's own statements (start, renewal, end) and the
	// releases, general everything else. They are the same slots when
	// MaxConnections is 1.
	renewal, general slots
	// multi makes the callers of takeGeneral take their slots in turn.
	multi    sync.Mutex
	maxConns int
	// lockFirst is the dialect's: whether a decision runs under READ
	// COMMITTED (decideTx).
	lockFirst bool
	// lend lends the general slots to the connection a wake-up transport
	// listens on (wake.go): on PostgreSQL with two or more connections;
	// nil otherwise.
	lend *lending
	// sql tells a transaction that lost to a conflicting one (lostRace).
	sql *currentSQL
}

// slots is a counting semaphore of connection slots, its capacity the
// number of slots: a statement takes one by sending on it and gives it
// back by receiving. Takers that wait are served in the order they came
// (a channel's blocked senders are), so none starves behind later ones.
type slots chan struct{}

// take takes a slot, waiting for one until ctx is done. A done ctx fails
// at once, even with a slot free, so a statement whose caller has given up
// never starts.
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

// takeGeneral takes n general slots, or none if ctx is done first. It
// takes them one after another, so two callers taking several at once
// could each hold some and wait for the other's forever: callers take
// them in turn (multi), each until it has all it asked for.
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
// transactions starts from. It is bound to ctx and carries dbresolver's
// Write marker, so a read/write-splitting resolver registered on the
// caller's db (gorm.io/plugin/dbresolver) sends reads as well as writes to
// a source, never to a replica: lease reads must see the latest commit,
// and a replica may lag or be another database altogether. The marker is
// applied per call, so a resolver registered after New is honoured too.
// Statements still run through gorm's callbacks, so the caller's plugins
// (logging, tracing) see every one of them.
func (g *gate) session(ctx context.Context) *gorm.DB {
	return g.db.WithContext(ctx).Clauses(dbresolver.Write).Session(&gorm.Session{})
}

// run runs fn with a connection slot of sem taken for its whole duration:
// fn may send several statements, in a transaction or on a pinned
// connection, but never two at once.
//
// The general statements of a store that can lend its general slots to
// the connection a wake-up transport listens on (PostgreSQL) go through
// that lending instead: on the listening connection while it is shared,
// on the pool otherwise (wake.go).
func (g *gate) run(ctx context.Context, sem slots, fn func(db *gorm.DB) error) error {
	if sem == g.general && g.lend != nil {
		return g.lend.run(ctx, fn)
	}
	return g.runOn(ctx, sem, fn)
}

// runOn is run on the pool.
//
// fn runs again, at most lostRaceAttempts times in all, when its
// transaction lost to a conflicting one (lostRace): it was rolled back
// whole, so nothing of it took effect.
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

// pinned runs fn with a handle whose statements all use one connection
// taken from the primary's pool, for work that holds a session-level lock
// (MySQL's GET_LOCK, SQLite's BEGIN IMMEDIATE). The connection is presented
// to gorm as a transaction (pinnedConn): that is how gorm and its routing
// plugins recognise statements that must stay on their connection, while a
// plain *sql.Conn would be swapped for a pooled source by dbresolver.
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
// must share. Its Commit and Rollback make it a gorm.TxCommitter so that
// routing plugins leave it alone; gorm never calls them, since the store
// neither begins nor ends gorm transactions on it, and they fail if called.
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

// decideTx runs fn in a transaction for statements that decide, from the
// sessions table, which lease rows to change (acquire, prune): under READ
// COMMITTED, so that each statement reads the sessions as of its own
// start, where the database locks rows (dialect.lockFirst).
func (g *gate) decideTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	if _, ok := db.Statement.ConnPool.(pinnedConn); ok {
		// The listening connection (PostgreSQL): gorm would only set a
		// savepoint on it, so the transaction is begun and ended here.
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

// queryAll runs a query and scans every row with scan. A row error or an
// error after the last row (SQLite's step that ends the statement, a
// PostgreSQL implicit commit, which take a change back) fails the whole
// read, so a caller never acts on rows of a statement that failed.
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

// scanRow reads the first row st returns into dest, as Row().Scan would,
// and returns sql.ErrNoRows when there is none. Unlike Row, it returns the
// error of a callback of the caller's that failed the statement before it
// ran, where Row has no *sql.Row to scan and Scan would panic.
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
