package store

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// Errors returned by the store.
var (
	// ErrUnsupportedDialect is returned for a gorm dialector leasehold does
	// not support.
	ErrUnsupportedDialect = errors.New("leasehold: unsupported database dialect")
	// ErrInvalidPrefix is returned for a table prefix that is not a safe
	// SQL identifier fragment.
	ErrInvalidPrefix = errors.New("leasehold: invalid table prefix")
	// ErrSchemaMissing is returned when the coordination tables do not
	// exist or are older than this build needs.
	ErrSchemaMissing = errors.New("leasehold: coordination schema is missing or outdated")
	// ErrMigrationLock is returned when the migration lock could not be
	// taken in time.
	ErrMigrationLock = errors.New("leasehold: could not take the migration lock")
	// ErrPoolerMode is returned by the start-up probe (ProbeFailover) when
	// the database is behind a transaction pooler that gives a client's
	// transactions different server connections, and the driver keeps
	// prepared statements on them, which the next one lacks. On
	// PostgreSQL the DSN then needs default_query_exec_mode=exec (or
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
	// failover of the database (incarnation.go): the TTL of the process.
	// The longest TTL among the sessions on record counts when it is
	// longer.
	FailoverHold time.Duration
	// MaxConnections bounds how many statements of the store run at once,
	// and so how many connections of the caller's pool they use. With two
	// or more, one is kept for the session's renewal and the releases, so
	// that reads and acquires can never delay them. Statements run in the
	// caller's transactions (Fence, RenewSessionIn) are not counted: they
	// use the caller's connection. 0 means DefaultMaxConnections.
	MaxConnections int
	// Quiet, unless nil, reports the leases whose release wakes nobody:
	// rows nobody waits to take, whose holder announces the change itself
	// (a pool member's row, which its member announces once it published
	// the generation without it).
	Quiet func(name string) bool
}

// Store runs the coordination statements on one database. It runs the
// statements of the lease and pool rows itself, and hands the rest to the
// owners it is made of, each with its own part of the state:
//
//   - the connection gate (gate, conn.go): the connection slots every
//     statement takes, the transactions of decisions, and the PostgreSQL
//     connection lent to a wake-up transport (wake.go);
//   - the session rows (Sessions, sessions.go): a process's one row, its
//     renewal, and its end;
//   - the schema (Schema, migrate.go): its version, its check, and the
//     migrations;
//   - the failover detection (Failover, failover.go): the database's
//     incarnation, and which SQL the statements use;
//   - the rows of keyed locks (LockRows, floored.go): created at their
//     floor's epoch, deleted when released or dead.
type Store struct {
	conns  *gate
	sql    *currentSQL
	tables Tables

	sessions *Sessions
	schema   *Schema
	failover *Failover
	lockRows *LockRows

	// released is what a release that freed any lease calls, here and in
	// lockRows.
	released *releaseHook
	// quiet is Options.Quiet.
	quiet func(name string) bool
}

// releaseHook is called after a release that freed any lease, with the
// names of its terms, for the transports the release statement does not
// notify by itself (wake.go, OnRelease); fn is nil otherwise. It is set
// before the first release.
type releaseHook struct{ fn func(names []string) }

// after calls the hook, when set, with the names of the n terms a release
// gave up (name(i) of each), once it freed any (total > 0).
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

// currentSQL is the SQL of the store's statements: the dialect with
// failover detection, or without it once ProbeFailover found that the
// server cannot say its incarnation (failover.go). It is set before the
// coordinator's loops start and never changes after.
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
	// A fresh session: the caller's scopes and conditions must not leak
	// into the library's statements.
	sql := &currentSQL{}
	sql.d.Store(d)
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

// SerializesWriters reports whether a writing transaction on this database
// excludes every other writer until it ends, whichever rows it touches
// (SQLite). A fenced transaction then keeps the session's renewal out for
// as long as it is open; RenewSessionIn lets the fenced transaction renew
// the session itself, and ReadSession sees the result once it commits,
// without waiting for the writer.
func (s *Store) SerializesWriters() bool { return s.sql.dl().serialWriters }
