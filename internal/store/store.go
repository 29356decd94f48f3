// Package store is leasehold's access to the coordination tables: the
// lease operations (acquire, renew, release, read, fence) and the schema
// migrations, for every supported dialect. All dialect differences live in
// dialect.go and schema.go; this file only sequences statements.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"
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

// Row is one lease as the database sees it. Times are microseconds since
// the Unix epoch on the database clock; NowUS is that clock at the read.
type Row struct {
	Name         string
	Holder       string
	Epoch        int64
	AcquiredAtUS int64
	RenewedAtUS  int64
	ExpiresAtUS  int64
	Data         string
	NowUS        int64
}

// Live reports whether the lease is held and unexpired at the read.
func (r Row) Live() bool { return r.Holder != "" && r.ExpiresAtUS >= r.NowUS }

// Store runs the lease statements on one database.
type Store struct {
	db     *gorm.DB
	d      *dialect
	tables Tables
	leases string // quoted lease table
}

// New returns a store for the database behind db, using the tables of the
// given prefix ("" means the default).
func New(db *gorm.DB, prefix string) (*Store, error) {
	if db == nil || db.Dialector == nil {
		return nil, errors.New("leasehold: db is nil")
	}
	d, err := lookupDialect(db.Name())
	if err != nil {
		return nil, err
	}
	t, err := TablesFor(prefix)
	if err != nil {
		return nil, err
	}
	// A fresh session: the caller's scopes and conditions must not leak into
	// the library's statements.
	return &Store{db: db.Session(&gorm.Session{NewDB: true}), d: d, tables: t, leases: d.quote(t.Leases)}, nil
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
func (s *Store) session(ctx context.Context) *gorm.DB {
	return s.db.WithContext(ctx).Clauses(dbresolver.Write).Session(&gorm.Session{})
}

// pinned runs fn with a handle whose statements all use one connection
// taken from the primary's pool, for work that holds a session-level lock
// (MySQL's GET_LOCK, SQLite's BEGIN IMMEDIATE). The connection is presented
// to gorm as a transaction (pinnedConn): that is how gorm and its routing
// plugins recognise statements that must stay on their connection, while a
// plain *sql.Conn would be swapped for a pooled source by dbresolver.
func (s *Store) pinned(ctx context.Context, fn func(conn *gorm.DB) error) error {
	return s.session(ctx).Connection(func(conn *gorm.DB) error {
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

// Dialect returns the dialect name.
func (s *Store) Dialect() string { return s.d.name }

// Tables returns the table names in use.
func (s *Store) Tables() Tables { return s.tables }

func micros(d time.Duration) int64 { return d.Microseconds() }

// EnsureRow creates the lease row for name if it does not exist yet.
func (s *Store) EnsureRow(ctx context.Context, name string) error {
	q, n := s.d.sqlInsertIfAbsent(s.leases)
	args := []any{name}
	if n == 2 {
		args = append(args, name)
	}
	return s.session(ctx).Exec(q, args...).Error
}

// Acquire takes the lease for holder when it is free, expired or already
// held by holder, starting a new term with the next epoch. It reports
// ok=false when another holder has it. The row must exist (EnsureRow).
func (s *Store) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (epoch int64, ok bool, err error) {
	q := s.d.sqlAcquire(s.leases, micros(ttl))
	args := []any{holder, name, holder}
	if s.d.acquireResult == resultReadBack {
		return s.acquireInTx(ctx, q, args, name)
	}
	var epochs []int64
	scan := func(db *gorm.DB) error { return db.Raw(q, args...).Scan(&epochs).Error }
	if s.d.acquireResult == resultRowsInTx {
		err = s.session(ctx).Transaction(scan)
	} else {
		err = scan(s.session(ctx))
	}
	if err != nil {
		return 0, false, err
	}
	if len(epochs) == 0 {
		return 0, false, nil
	}
	return epochs[0], true, nil
}

// acquireInTx runs the acquire as an explicit transaction: the UPDATE that
// bumps the epoch, a read of the new epoch while the row lock is held, and
// COMMIT. Only the COMMIT, sent after the epoch is known here, can make the
// term durable. If ctx ends while the UPDATE waits for a row lock, the
// driver drops the connection and the server rolls the still-open
// transaction back whenever the UPDATE gets its lock, instead of committing
// a term this process never learned of (which an autocommit UPDATE would).
// The one remaining window is the COMMIT itself: when ctx ends or the
// connection breaks after the server committed but before its reply
// arrives, the acquire reports an error for a term the database holds.
func (s *Store) acquireInTx(ctx context.Context, q string, args []any, name string) (epoch int64, ok bool, err error) {
	err = s.session(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec(q, args...)
		if res.Error != nil {
			return res.Error
		}
		// The acquire changes the epoch, so a match always counts as one
		// affected row, with or without clientFoundRows.
		if res.RowsAffected == 0 {
			return nil
		}
		if err := tx.Raw(s.d.sqlAcquiredEpoch(s.leases), name).Row().Scan(&epoch); err != nil {
			return fmt.Errorf("read the acquired epoch: %w", err)
		}
		ok = true
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return epoch, ok, nil
}

// Renew extends every given term of holder that the database still shows
// as held by it and unexpired, all in one statement. It returns the terms
// that were not renewed (lost). Only when the affected-row count falls
// short does it read the rows back to learn which ones.
func (s *Store) Renew(ctx context.Context, holder string, terms []Term, ttl time.Duration) (lost []Term, err error) {
	if len(terms) == 0 {
		return nil, nil
	}
	q, args := s.d.sqlRenew(s.leases, micros(ttl), holder, terms)
	res := s.session(ctx).Exec(q, args...)
	if res.Error != nil {
		return nil, res.Error
	}
	// Every matched row changes (renewed_at_us moves), so the count is the
	// number renewed with or without MySQL's clientFoundRows.
	if res.RowsAffected == int64(len(terms)) {
		return nil, nil
	}
	return s.classify(ctx, holder, terms)
}

// classify reads terms back after a renew that did not match all of them.
// A row still held by holder with the same epoch and unexpired now was
// unexpired when the renew ran, so the renew matched and extended it; any
// other row was not renewed and is lost.
func (s *Store) classify(ctx context.Context, holder string, terms []Term) ([]Term, error) {
	names := make([]string, len(terms))
	for i, t := range terms {
		names[i] = t.Name
	}
	rows, err := s.Get(ctx, names)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]Row, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	var lost []Term
	for _, t := range terms {
		r, ok := byName[t.Name]
		if !ok || r.Holder != holder || r.Epoch != t.Epoch || r.ExpiresAtUS < r.NowUS {
			lost = append(lost, t)
		}
	}
	return lost, nil
}

// Release gives up the given terms of holder in one statement and returns
// how many were still held. Terms already lost are left untouched.
func (s *Store) Release(ctx context.Context, holder string, terms []Term) (int64, error) {
	if len(terms) == 0 {
		return 0, nil
	}
	q, args := s.d.sqlRelease(s.leases, holder, terms)
	res := s.session(ctx).Exec(q, args...)
	return res.RowsAffected, res.Error
}

// Get reads the named leases with the database clock. Names without a row
// are absent from the result.
func (s *Store) Get(ctx context.Context, names []string) ([]Row, error) {
	if len(names) == 0 {
		return nil, nil
	}
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return s.query(s.session(ctx), s.d.sqlSelect(s.leases, len(names)), args...)
}

// List reads every lease whose name starts with prefix ("" for all),
// ordered by name. The match is byte for byte, also on SQLite.
func (s *Store) List(ctx context.Context, prefix string) ([]Row, error) {
	if prefix == "" {
		return s.query(s.session(ctx), s.d.sqlList(s.leases, false))
	}
	lo, hi, err := prefixRange(prefix)
	if err != nil {
		return nil, err
	}
	return s.query(s.session(ctx), s.d.sqlList(s.leases, true), lo, hi)
}

// Now reads the database clock in microseconds since the Unix epoch.
func (s *Store) Now(ctx context.Context) (int64, error) {
	var now int64
	err := s.session(ctx).Raw(s.d.sqlNow()).Row().Scan(&now)
	return now, err
}

// SerializesWriters reports whether a writing transaction on this database
// excludes every other writer until it ends, whichever rows it touches
// (SQLite). A fenced transaction then keeps the holder's renewal statement
// out for as long as it is open; RenewIn lets the fenced transaction renew
// its term itself, and a plain read (Get) sees the result once it commits,
// without waiting for the writer.
func (s *Store) SerializesWriters() bool { return s.d.serialWriters }

// RenewIn renews the given terms of holder inside the caller's
// transaction tx, with the same statement as Renew: it matches only this
// holder and each term's epoch, and only rows unexpired by the database
// clock. The renewal takes effect only if tx commits. It returns how many
// rows matched.
func (s *Store) RenewIn(tx *gorm.DB, holder string, terms []Term, ttl time.Duration) (int64, error) {
	if len(terms) == 0 {
		return 0, nil
	}
	q, args := s.d.sqlRenew(s.leases, micros(ttl), holder, terms)
	res := tx.Exec(q, args...)
	return res.RowsAffected, res.Error
}

// Fence reads the lease row inside the caller's transaction tx, locking it
// against a change of holder until tx ends, and returns it. The caller
// compares holder, epoch and expiry.
func (s *Store) Fence(tx *gorm.DB, name string) (Row, bool, error) {
	rows, err := s.query(tx, s.d.sqlFence(s.leases), name)
	if err != nil || len(rows) == 0 {
		return Row{}, false, err
	}
	return rows[0], true, nil
}

func (s *Store) query(db *gorm.DB, q string, args ...any) ([]Row, error) {
	rs, err := db.Raw(q, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Row
	for rs.Next() {
		var r Row
		if err := rs.Scan(&r.Name, &r.Holder, &r.Epoch, &r.AcquiredAtUS, &r.RenewedAtUS, &r.ExpiresAtUS, &r.Data, &r.NowUS); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// SchemaVersion returns the applied schema version, 0 when the version
// table does not exist.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	db := s.session(ctx)
	if !db.Migrator().HasTable(s.tables.Migrations) {
		// HasTable swallows errors; tell "absent" from "unreachable".
		if err := db.Exec("SELECT 1").Error; err != nil {
			return 0, err
		}
		return 0, nil
	}
	var v int
	err := db.Raw(s.d.sqlCurrentVersion(s.tables)).Row().Scan(&v)
	return v, err
}

// CheckSchema returns an error wrapping ErrSchemaMissing when the schema is
// older than LatestVersion, or the database error when it cannot tell.
func (s *Store) CheckSchema(ctx context.Context) error {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v < LatestVersion {
		return fmt.Errorf("%w: tables with prefix %q are at version %d, this build needs %d; "+
			"run migrations.Migrate(ctx, db, migrations.Options{TablePrefix: %q}), apply the DDL from migrations.DDL, "+
			"or leave AutoMigrate enabled", ErrSchemaMissing, s.tables.Prefix, v, LatestVersion, s.tables.Prefix)
	}
	return nil
}

// Migrate brings the schema to LatestVersion. It is idempotent and safe to
// run from many processes at once: a dialect-specific lock serialises the
// runs, and each run applies only the steps not yet recorded.
func (s *Store) Migrate(ctx context.Context, lockTimeout time.Duration) (applied []int, err error) {
	db := s.session(ctx)
	apply := func(tx *gorm.DB) error {
		if err := tx.Exec(s.d.createMigrationsTable(s.tables)).Error; err != nil {
			return fmt.Errorf("create %s: %w", s.tables.Migrations, err)
		}
		var current int
		if err := tx.Raw(s.d.sqlCurrentVersion(s.tables)).Row().Scan(&current); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		for _, m := range migrations {
			if m.Version <= current {
				continue
			}
			var err error
			if m.transactional && s.d.name == MySQL {
				err = explicitTx(tx, func() error { return s.applyStep(tx, m) })
			} else {
				err = s.applyStep(tx, m)
			}
			if err != nil {
				return err
			}
			applied = append(applied, m.Version)
		}
		return nil
	}
	lock := s.d.migrationLock(s.tables, lockTimeout)
	key := migrationLockKey(s.tables)
	switch s.d.name {
	case Postgres:
		// DDL is transactional on PostgreSQL: lock, migrate and record in one
		// transaction; the lock ends with it.
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(lock.setup).Error; err != nil {
				return err
			}
			if err := tx.Exec(lock.acquire).Error; err != nil {
				return fmt.Errorf("%w: %w", ErrMigrationLock, err)
			}
			return apply(tx)
		})
	case SQLServer:
		err = db.Transaction(func(tx *gorm.DB) error {
			var rc int
			if err := tx.Raw(lock.acquire, key).Row().Scan(&rc); err != nil {
				return fmt.Errorf("%w: %w", ErrMigrationLock, err)
			}
			if rc < 0 {
				return fmt.Errorf("%w: sp_getapplock returned %d", ErrMigrationLock, rc)
			}
			return apply(tx)
		})
	case MySQL:
		// DDL commits implicitly on MySQL, so a transaction cannot hold the
		// lock: a named lock on one pinned connection does. It is released
		// explicitly, and by the server if the connection dies.
		err = s.pinned(ctx, func(conn *gorm.DB) error {
			var dbName sql.NullString
			if err := conn.Raw("SELECT DATABASE()").Row().Scan(&dbName); err != nil {
				return err
			}
			name := mysqlLockName(dbName.String, key)
			var got sql.NullInt64
			secs := max(int64(lockTimeout/time.Second), 1)
			if err := conn.Raw(lock.acquire, name, secs).Row().Scan(&got); err != nil {
				return fmt.Errorf("%w: %w", ErrMigrationLock, err)
			}
			if !got.Valid || got.Int64 != 1 {
				return fmt.Errorf("%w: GET_LOCK(%q) timed out after %v", ErrMigrationLock, name, lockTimeout)
			}
			defer conn.Exec(lock.release, name)
			return apply(conn)
		})
	case SQLite:
		// BEGIN IMMEDIATE takes the write lock up front (waiting up to the
		// busy timeout), whatever _txlock the caller's DSN sets.
		err = s.pinned(ctx, func(conn *gorm.DB) error {
			if err := conn.Exec(lock.acquire).Error; err != nil {
				return fmt.Errorf("%w: %w", ErrMigrationLock, err)
			}
			if err := apply(conn); err != nil {
				conn.Exec("ROLLBACK")
				return err
			}
			return conn.Exec(lock.release).Error
		})
	}
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// explicitTx runs fn in a transaction begun and ended by statements on
// conn, a pinned connection: gorm's Transaction would take the pinned
// connection for a transaction already and only set a savepoint.
func explicitTx(conn *gorm.DB, fn func() error) error {
	if err := conn.Exec("START TRANSACTION").Error; err != nil {
		return err
	}
	if err := fn(); err != nil {
		conn.Exec("ROLLBACK")
		return err
	}
	return conn.Exec("COMMIT").Error
}

// applyStep runs one migration step and records its version, skipping the
// statements when the step's applied check finds them done already.
func (s *Store) applyStep(tx *gorm.DB, m Migration) error {
	done := false
	if m.applied != nil {
		if q := m.applied(s.d, s.tables); q != "" {
			var n int
			if err := tx.Raw(q).Row().Scan(&n); err != nil {
				return fmt.Errorf("migration %d (%s): check: %w", m.Version, m.Description, err)
			}
			done = n > 0
		}
	}
	if !done {
		for _, stmt := range m.statements(s.d, s.tables) {
			if err := tx.Exec(stmt).Error; err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Description, err)
			}
		}
	}
	if err := tx.Exec(s.d.sqlRecordVersion(s.tables, m.Version), m.Description).Error; err != nil {
		return fmt.Errorf("record migration %d: %w", m.Version, err)
	}
	return nil
}

// mysqlLockName builds a GET_LOCK name (at most 64 characters) scoped to
// the database, since MySQL's named locks are server-wide.
func mysqlLockName(database, key string) string {
	name := key + "@" + database
	if len(name) > 64 {
		name = fmt.Sprintf("leasehold:migrate:%x", advisoryKey(name))
	}
	return name
}

// SetData writes data into a row this holder holds at this epoch, unexpired
// by the database clock. It reports false when the term is over.
func (s *Store) SetData(ctx context.Context, holder string, t Term, data string) (bool, error) {
	q, args := s.d.sqlSetData(s.leases, holder, t, data)
	res := s.session(ctx).Exec(q, args...)
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected == 1 {
		return true, nil
	}
	// MySQL without clientFoundRows counts an unchanged row as 0: read back.
	rows, err := s.Get(ctx, []string{t.Name})
	if err != nil {
		return false, err
	}
	ok := len(rows) == 1 && rows[0].Holder == holder && rows[0].Epoch == t.Epoch &&
		rows[0].ExpiresAtUS >= rows[0].NowUS && rows[0].Data == data
	return ok, nil
}

// Publish moves an unheld row (a pool's generation row) from epoch from to
// from+1 with new data, only if it is still at from: a compare-and-set.
func (s *Store) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	res := s.session(ctx).Exec(s.d.sqlPublish(s.leases, from), data, name)
	return res.RowsAffected == 1, res.Error
}

// PruneDead deletes the rows whose name starts with prefix (byte for byte)
// that were released, or have been expired for longer than grace, and
// returns how many it deleted. Pools use it for the member rows of processes that left
// or died, whose names (by instance id) are never used again.
func (s *Store) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	lo, hi, err := prefixRange(prefix)
	if err != nil {
		return 0, err
	}
	res := s.session(ctx).Exec(s.d.sqlPruneDead(s.leases, micros(grace)), lo, hi)
	return res.RowsAffected, res.Error
}
