package store

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
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
}

// Store runs the coordination statements on one database.
type Store struct {
	db *gorm.DB
	// dialect is the dialect's SQL, as dl returns it: with failover
	// detection, or without it once probeIncarnation found that the server
	// cannot say its incarnation (incarnation.go). It is set before the
	// coordinator's loops start and never changes after.
	dialect atomic.Pointer[dialect]
	tables  Tables

	// renewal and general bound the connections in use: renewal carries
	// the session's own statements (start, renewal, end) and the
	// releases, general everything else. They
	// are the same semaphore when MaxConnections is 1.
	renewal, general *semaphore.Weighted
	maxConns         int

	// lend lends the general slots to the connection a wake-up transport
	// listens on (wake.go): on PostgreSQL with two or more connections;
	// nil otherwise.
	lend *lending
	// released is called after a release that freed any lease, with the
	// names of its terms, where the wake-up is not sent by the release
	// statement itself (wake.go, OnRelease); nil otherwise.
	released func(names []string)

	// failoverHold is Options.FailoverHold; incarnationRow is set once
	// the incarnation row is known to exist (incarnation.go).
	failoverHold   time.Duration
	incarnationRow atomic.Bool
	// probed is set once ProbeFailover has asked the database.
	probed atomic.Bool
}

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
	s := &Store{
		// A fresh session: the caller's scopes and conditions must not leak
		// into the library's statements.
		db: db.Session(&gorm.Session{NewDB: true}), tables: t, maxConns: n, failoverHold: o.FailoverHold,
	}
	s.dialect.Store(d)
	if n == 1 {
		s.general = semaphore.NewWeighted(1)
		s.renewal = s.general
	} else {
		s.general = semaphore.NewWeighted(int64(n - 1))
		s.renewal = semaphore.NewWeighted(1)
		if n, ok := d.database.(notifier); ok {
			s.lend = newLending(s, n)
		}
	}
	return s, nil
}

// dl returns the SQL of the store's dialect.
func (s *Store) dl() *dialect { return s.dialect.Load() }

// Dialect returns the dialect name.
func (s *Store) Dialect() string { return s.dl().name }

// Tables returns the table names in use.
func (s *Store) Tables() Tables { return s.tables }

// MaxConnections returns the bound on the connections the store uses.
func (s *Store) MaxConnections() int { return s.maxConns }

// SerializesWriters reports whether a writing transaction on this database
// excludes every other writer until it ends, whichever rows it touches
// (SQLite). A fenced transaction then keeps the session's renewal out for
// as long as it is open; RenewSessionIn lets the fenced transaction renew
// the session itself, and ReadSession sees the result once it commits,
// without waiting for the writer.
func (s *Store) SerializesWriters() bool { return s.dl().serialWriters }
