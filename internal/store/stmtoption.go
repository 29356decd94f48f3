package store

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The statement option: an argument that the driver takes, in front of a
// statement's own arguments, as an instruction for that statement alone.
//
// The library's statements must work through a pooler that gives each
// transaction whichever server connection is free (PgBouncer in
// transaction mode), whatever the caller's driver settings. A driver that
// keeps statements on the server by name, across transactions (pgx's
// default statement cache), breaks there; such a database's runtime type
// says, from a connection of the caller's pool, which option makes one
// statement independent of the server connection (stmtOptioner,
// postgres.go). The gate learns it once, from a connection of the pool
// (learnOption), puts it on every handle it gives out (session) and on
// the caller's transactions the store's statements run in (withOption),
// and exec, queryAll and scanRow send it first.

// stmtOptioner is a database whose driver takes an option in front of a
// statement's arguments (PostgreSQL on pgx).
type stmtOptioner interface {
	// stmtOption returns the option that makes one statement independent
	// of the server connection it runs on, for statements on the driver
	// connection driverConn (database/sql's Conn.Raw); nil when the
	// driver's settings already do, or it is not the driver expected.
	stmtOption(driverConn any) any
}

// optionKey is the gorm setting (gorm.DB.Set) that carries the statement
// option on a handle.
const optionKey = "leasehold:statement_option"

// learnTimeout bounds the wait for a connection to learn the option from
// inside a caller's transaction (withOption), which may hold the pool's
// last connection.
const learnTimeout = 2 * time.Second

// stmtOption is the option learned: v, nil for none.
type stmtOption struct{ v any }

// options learns and holds the statement option of one store.
type options struct {
	by   stmtOptioner // nil: the database has none
	pool *gorm.DB     // where a connection to learn it from comes from
	got  atomic.Pointer[stmtOption]
}

// learn learns the option from a connection of the pool, unless it is
// known. A failure (the database is down) leaves it for the next
// statement; the statement goes without the option meanwhile.
func (o *options) learn(ctx context.Context) {
	if o.by == nil || o.got.Load() != nil {
		return
	}
	sqlDB, err := o.pool.DB()
	if err != nil {
		o.got.CompareAndSwap(nil, &stmtOption{}) // not a database/sql pool
		return
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return
	}
	o.learnFrom(conn)
	_ = conn.Close() // back to the pool
}

// learnFrom learns the option from conn, unless it is known.
func (o *options) learnFrom(conn *sql.Conn) {
	if o.by == nil || o.got.Load() != nil {
		return
	}
	_ = conn.Raw(func(dc any) error {
		o.got.CompareAndSwap(nil, &stmtOption{v: o.by.stmtOption(dc)})
		return nil
	})
}

// on returns db carrying the option, when there is one. The handle is a
// session, as db is: each statement on it starts from a copy of it
// (gorm.Session), never from a statement that another one left behind.
func (o *options) on(db *gorm.DB) *gorm.DB {
	if got := o.got.Load(); got != nil && got.v != nil {
		return db.Set(optionKey, got.v).Session(&gorm.Session{})
	}
	return db
}

// withOption returns tx, a caller's transaction that a statement of the
// store runs in (Fence, RenewSessionIn, SetDataIn), carrying the option. When it is
// not known yet, it is learned first from another connection of the pool,
// waiting at most learnTimeout.
func (g *gate) withOption(tx *gorm.DB) *gorm.DB {
	if g.opts.by == nil {
		return tx
	}
	if g.opts.got.Load() == nil {
		ctx := context.Background()
		if tx.Statement != nil && tx.Statement.Context != nil {
			ctx = tx.Statement.Context
		}
		ctx, cancel := context.WithTimeout(ctx, learnTimeout)
		g.opts.learn(ctx)
		cancel()
	}
	return g.opts.on(tx)
}

// optioned is a statement with the option in front of its arguments. It
// is the only argument of a "?" handed to gorm, which builds it in place
// (clause.Expression): the option becomes the statement's first argument
// before gorm numbers the statement's own, and the dialector's numbering
// skips it (gorm.io/driver/postgres does for pgx's option).
type optioned struct {
	option any
	st     stmt
}

func (o optioned) Build(b clause.Builder) {
	if s, ok := b.(*gorm.Statement); ok && len(s.Vars) == 0 {
		s.Vars = append(s.Vars, o.option)
	}
	clause.Expr{SQL: o.st.q, Vars: o.st.args}.Build(b)
}

// sqlAndArgs returns what to hand gorm's Raw or Exec for st on db: st
// itself, or st behind its option when db carries one.
func sqlAndArgs(db *gorm.DB, st stmt) (string, []any) {
	if v, ok := db.Get(optionKey); ok && v != nil {
		return "?", []any{optioned{option: v, st: st}}
	}
	return st.q, st.args
}
