package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// Errors returned by the store.
var (
	// ErrInvalidConfig is wrapped by every error of bad input; the public
	// packages export it as coordination.ErrInvalidConfig.
	ErrInvalidConfig = errors.New("leasehold: invalid config")
	// ErrUnsupportedDialect is returned for a gorm dialector leasehold does
	// not support.
	ErrUnsupportedDialect = fmt.Errorf("%w: unsupported database dialect", ErrInvalidConfig)
	// ErrInvalidPrefix is returned for a table prefix that is not a safe
	// SQL identifier fragment.
	ErrInvalidPrefix = fmt.Errorf("%w: invalid table prefix", ErrInvalidConfig)
	// ErrSchemaMissing is returned when the coordination tables do not
	// exist or are older than this build needs.
	ErrSchemaMissing = errors.New("leasehold: coordination schema is missing or outdated")
	// ErrMigrationLock is returned when the migration lock could not be
	// taken in time.
	ErrMigrationLock = errors.New("leasehold: could not take the migration lock")
	// ErrPoolerMode is returned by ProbeFailover when the database is
	// behind a transaction pooler and the driver keeps prepared statements
	// on server connections, which the client's next transaction may not
	// have: the PostgreSQL DSN needs default_query_exec_mode=exec (or
	// simple_protocol, or cache_describe).
	ErrPoolerMode = errors.New("leasehold: the driver keeps prepared statements behind a transaction pooler")
)

// DefaultMaxConnections is how many connections the store's statements
// use at most, unless Options says otherwise.
const DefaultMaxConnections = 2

// Options tune a Store.
type Options struct {
	// TablePrefix selects the tables ("" means DefaultTablePrefix).
	TablePrefix string
	// FailoverHold is the least time no lease may be taken after a
	// failover of the database (the process's TTL; a longer session TTL
	// on record counts instead).
	FailoverHold time.Duration
	// MaxConnections bounds how many connections of the caller's pool the
	// store's statements use at once; with two or more, one is kept for
	// the session's renewal and the releases. Statements in the caller's
	// transactions are not counted. 0 means DefaultMaxConnections.
	MaxConnections int
	// Quiet, unless nil, reports the leases whose release wakes nobody
	// (rows nobody waits to take).
	Quiet func(name string) bool
}

// Store runs the coordination statements on one database: those of the
// lease and pool rows itself, the rest through its owners (Sessions,
// Schema, Failover, LockRows).
type Store struct {
	conns  *gate
	sql    *currentSQL
	tables Tables

	sessions *Sessions
	schema   *Schema
	failover *Failover
	lockRows *LockRows

	released *releaseHook // here and in lockRows
	quiet    func(name string) bool
}

// releaseHook is what a release that freed any lease calls with the names
// of its terms (OnRelease); fn is set before the first release, or nil.
type releaseHook struct{ fn func(names []string) }

// after calls the hook with name(i) of the n terms of a release that freed
// total > 0 leases.
func (h *releaseHook) after(total int64, n int, name func(i int) string) {
	if total == 0 || h.fn == nil {
		return
	}
	names := make([]string, n)
	for i := range names {
		names[i] = name(i)
	}
	h.fn(names)
}

// currentSQL is the dialect of the store's statements, which only
// ProbeFailover changes (Galera, no incarnation), before the coordinator's
// loops start.
type currentSQL struct{ d atomic.Pointer[dialect] }

// dl returns the dialect in use.
func (c *currentSQL) dl() *dialect { return c.d.Load() }

// New returns a store for the database behind db.
func New(db *gorm.DB, o Options) (*Store, error) {
	if db == nil || db.Dialector == nil {
		return nil, errors.New("leasehold: db is nil")
	}
	d, err := lookupDialect(db.Name())
	if err != nil {
		return nil, err
	}
	t, err := TablesFor(o.TablePrefix)
	if err != nil {
		return nil, err
	}
	n := o.MaxConnections
	if n == 0 {
		n = DefaultMaxConnections
	}
	if n < 1 {
		return nil, fmt.Errorf("leasehold: MaxConnections (%d) must be at least 1", n)
	}
	sql := &currentSQL{}
	sql.d.Store(d)
	// A fresh session: no scope or condition of the caller's leaks in.
	conns := newGate(db.Session(&gorm.Session{NewDB: true}), n, sql, t)
	released := &releaseHook{}
	return &Store{
		conns: conns, sql: sql, tables: t, released: released, quiet: o.Quiet,
		sessions: &Sessions{conns: conns, sql: sql, tables: t},
		lockRows: &LockRows{conns: conns, sql: sql, tables: t, released: released},
		schema:   &Schema{conns: conns, sql: d.schema(), tables: t},
		failover: &Failover{conns: conns, sql: sql, tables: t, hold: o.FailoverHold},
	}, nil
}

// Sessions returns the owner of the session rows.
func (s *Store) Sessions() *Sessions { return s.sessions }

// Schema returns the owner of the schema and its migrations.
func (s *Store) Schema() *Schema { return s.schema }

// Failover returns the owner of the failover detection.
func (s *Store) Failover() *Failover { return s.failover }

// LockRows returns the owner of the floored rows of keyed locks.
func (s *Store) LockRows() *LockRows { return s.lockRows }

// Dialect returns the dialect name.
func (s *Store) Dialect() string { return s.sql.dl().name }

// Tables returns the table names in use.
func (s *Store) Tables() Tables { return s.tables }

// MaxConnections returns the bound on the connections the store uses.
func (s *Store) MaxConnections() int { return s.conns.maxConns }

// SerializesWriters reports whether a writing transaction excludes every
// other writer until it ends (SQLite): a fenced transaction then holds off
// the session's renewal, so it renews the session itself (RenewSessionIn),
// and ReadSession sees that once it commits.
func (s *Store) SerializesWriters() bool { return s.sql.dl().serialWriters }

// CheckBusyTimeout returns, as advice, an error naming the DSN setting
// when the connections of the pool do not wait for a lock another holds
// (SQLite with busy_timeout 0, modernc.org/sqlite's default): every
// statement that meets another connection's write, this process's own
// included, then fails at once with SQLITE_BUSY. The DSN's settings apply
// to every connection, so one connection answers for all. err is set when
// the database could not be asked; elsewhere both are nil.
func (s *Store) CheckBusyTimeout(ctx context.Context) (advice, err error) {
	q := s.sql.dl().busyTimeout
	if q == "" {
		return nil, nil
	}
	var ms []int64
	err = s.conns.run(ctx, s.conns.general, func(db *gorm.DB) (err error) {
		ms, err = queryAll(db, stmt{q: q}, func(rs *sql.Rows, v *int64) error { return rs.Scan(v) })
		return err
	})
	if err != nil || len(ms) != 1 || ms[0] > 0 {
		return nil, err
	}
	return errors.New("leasehold: SQLite busy_timeout is 0, so a statement that meets another connection's write fails at once " +
		"with SQLITE_BUSY instead of waiting: set it in the DSN, _pragma=busy_timeout(5000) with modernc.org/sqlite " +
		"or _busy_timeout=5000 with github.com/mattn/go-sqlite3"), nil
}
