// Package store is leasehold's access to the coordination tables: the
// sessions, the lease operations (acquire, release, read, fence) and the
// schema migrations, for every supported dialect. Every difference between
// the databases lives in dialect.go; schema.go lists the migration steps;
// this file only sequences statements and bounds how many connections
// they use.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
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

	// listener is the listening connection on PostgreSQL with two or more
	// connections (wake.go); nil otherwise.
	listener *pgListener
	// local is the SQLite wake-up, once Listen has found the file.
	local atomic.Pointer[localWake]

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
			s.listener = newPGListener(s, n)
		}
	}
	return s, nil
}

// dl returns the SQL of the store's dialect.
func (s *Store) dl() *dialect { return s.dialect.Load() }

// Dialect returns the dialect name.
func (s *Store) Dialect() string { return s.dl().name() }

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
func (s *Store) SerializesWriters() bool { return s.dl().serialWriters() }

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

// run runs fn with a connection slot of sem taken for its whole duration:
// fn may send several statements, in a transaction or on a pinned
// connection, but never two at once.
//
// On PostgreSQL, while the store listens for wake-ups, the general
// statements run on the listening connection instead (pgListener).
func (s *Store) run(ctx context.Context, sem *semaphore.Weighted, fn func(db *gorm.DB) error) error {
	if sem == s.general && s.listener != nil {
		return s.listener.run(ctx, fn)
	}
	return s.runOn(ctx, sem, fn)
}

// runOn is run on the pool.
func (s *Store) runOn(ctx context.Context, sem *semaphore.Weighted, fn func(db *gorm.DB) error) error {
	if err := sem.Acquire(ctx, 1); err != nil {
		return err
	}
	defer sem.Release(1)
	return fn(s.session(ctx))
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

// ----------------------------------------------------------------------
// Sessions

// CreateSession starts session id of holder, live for ttl by the database
// clock. The id must be new: sessions are never reused.
//
// It runs on the renewal's connection slot, like every statement of the
// session's own row: a session is only started where its renewals can
// run. On PostgreSQL the general statements may run on the listening
// connection (pgListener), which outlives the pool when the caller closes
// its *sql.DB; a coordinator whose renewals fail must not start session
// after session there.
func (s *Store) CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error {
	return s.run(ctx, s.renewal, func(db *gorm.DB) error {
		_, err := exec(db, s.dl().sqlCreateSession(s.tables, id, holder, ttl))
		return err
	})
}

// RenewSession extends session id to the database's now plus ttl, if it
// has not expired. It reports false when the session has expired or is
// gone: then every lease it held is free, and it never comes back. It is
// the one statement of a renewal tick, however many leases the session
// holds, and it also returns the session's notice counter, which goes up
// with every resign request made to the session's leases (0 when the
// session was not renewed).
func (s *Store) RenewSession(ctx context.Context, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	err = s.run(ctx, s.renewal, func(db *gorm.DB) (err error) {
		ok, notice, err = s.renew(db, id, ttl)
		return err
	})
	return ok, notice, err
}

// RenewSessionIn renews session id inside the caller's transaction tx,
// with the same statement as RenewSession, and returns the same notice
// counter. It takes effect only if tx commits. It reports whether the
// session was live to renew.
func (s *Store) RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	return s.renew(tx, id, ttl)
}

// renew sends the renewal statement on db and reads back the notice.
func (s *Store) renew(db *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	st := s.dl().sqlRenewSession(s.tables, id, ttl)
	if s.dl().renewReturnsRows() {
		got, err := queryAll(db, st, func(rs *sql.Rows, v *int64) error { return rs.Scan(v) })
		if err != nil || len(got) != 1 {
			return false, 0, err
		}
		return true, got[0], nil
	}
	// MySQL: the notice comes back as the statement's last insert id
	// (sqlRenewSession). The statement still goes through gorm, so the
	// caller's callbacks see it.
	res := gorm.WithResult()
	tx := db.Clauses(res).Exec(st.q, st.args...)
	if tx.Error != nil {
		return false, 0, tx.Error
	}
	// Every match changes renewed_at_us, so the count is 1 with or without
	// MySQL's clientFoundRows.
	if tx.RowsAffected != 1 {
		return false, 0, nil
	}
	if res.Result != nil {
		if notice, err = res.Result.LastInsertId(); err != nil {
			return false, 0, fmt.Errorf("leasehold: read the session's notice: %w", err)
		}
	}
	return true, notice, nil
}

// ReadSession reads session id; ok is false when it is gone. It runs on
// the general connections: it is how the renewal loop learns, while its
// own statement waits for a writer, that fenced transactions renewed the
// session (SerializesWriters).
func (s *Store) ReadSession(ctx context.Context, id string) (sess Session, ok bool, err error) {
	err = s.run(ctx, s.general, func(db *gorm.DB) error {
		st := s.dl().sqlReadSession(s.tables, id)
		var renewed, expires, now int64
		switch err := scanRow(db, st, &renewed, &expires, &now); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		sess, ok = Session{RenewedAt: usTime(renewed), ExpiresAt: usTime(expires), Now: usTime(now)}, true
		return nil
	})
	return sess, ok, err
}

// EndSession deletes session id: every lease it still holds is free at
// once. Sessions expired long ago are pruned on the way.
func (s *Store) EndSession(ctx context.Context, id string, pruneAfter time.Duration) error {
	return s.run(ctx, s.renewal, func(db *gorm.DB) error {
		if _, err := exec(db, s.dl().sqlEndSession(s.tables, id)); err != nil {
			return err
		}
		_, err := exec(db, s.dl().sqlPruneSessions(s.tables, pruneAfter))
		return err
	})
}

// ----------------------------------------------------------------------
// Leases

// EnsureRows creates the rows of the named leases that do not exist yet,
// in statements of at most WriteChunk names.
func (s *Store) EnsureRows(ctx context.Context, names []string) error {
	return chunks(names, WriteChunk, func(part []string) error {
		return s.run(ctx, s.general, func(db *gorm.DB) error {
			_, err := exec(db, s.dl().sqlEnsureRows(s.tables, part))
			return err
		})
	})
}

// Acquire takes, for the live session, every named lease that is free,
// expired, held by a dead session, or held by this session, and starts a
// new term of each with the next epoch, in statements of at most
// WriteChunk names. It returns the terms started; a name missing from
// them is held by someone else, or has no row (EnsureRows). When the
// session itself has expired it takes nothing.
//
// A term becomes durable only once this process has its epoch: where a
// statement waiting on a lock does not notice its client giving up, the
// acquire runs in a transaction that commits after the epochs arrived.
//
// A chunk whose statement or transaction failed contributes no terms, even
// when its rows had already arrived: they are returned before the commit,
// which may then fail and take them back. Such a chunk may or may not have
// committed; a lease it did take is held by session with no term running,
// and the next Acquire for the session takes it again with a new epoch.
func (s *Store) Acquire(ctx context.Context, session, holder string, names []string) ([]Term, error) {
	var out []Term
	err := chunks(names, WriteChunk, func(part []string) error {
		return s.run(ctx, s.general, func(db *gorm.DB) error {
			if err := s.ensureIncarnation(db); err != nil {
				return err
			}
			var got []Term
			err := s.decideTx(db, func(tx *gorm.DB) (err error) {
				if s.dl().lockFirst() {
					if _, err := lockNames(tx, s.dl().sqlLockRows(s.tables, part)); err != nil {
						return err
					}
				}
				if s.dl().acquire() == acquireLockThenUpdate {
					got, err = s.acquireLockThenUpdate(tx, session, holder, part)
				} else {
					got, err = scanTerms(tx, s.dl().sqlAcquire(s.tables, session, holder, part))
				}
				return err
			})
			if err != nil {
				return err // got may hold rows of a rolled-back change
			}
			out = append(out, got...)
			return nil
		})
	})
	return out, err
}

func (s *Store) acquireLockThenUpdate(tx *gorm.DB, session, holder string, names []string) ([]Term, error) {
	locked, err := scanTerms(tx, s.dl().sqlAcquireLock(s.tables, session, holder, names))
	if err != nil || len(locked) == 0 {
		return nil, err
	}
	n, err := exec(tx, s.dl().sqlAcquireTerms(s.tables, session, holder, locked))
	if err != nil {
		return nil, err
	}
	// The rows are locked and every match changes its epoch, so the count
	// is exact with or without clientFoundRows.
	if n != int64(len(locked)) {
		return nil, fmt.Errorf("leasehold: acquire updated %d of %d locked leases", n, len(locked))
	}
	out := make([]Term, len(locked))
	for i, t := range locked {
		out[i] = Term{Name: t.Name, Epoch: t.Epoch + 1}
	}
	return out, nil
}

// decideTx runs fn in a transaction for statements that decide, from the
// sessions table, which lease rows to change (acquire, prune): under READ
// COMMITTED, so that each statement reads the sessions as of its own
// start, where the database locks rows (dialect.lockFirst).
func (s *Store) decideTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	if _, ok := db.Statement.ConnPool.(pinnedConn); ok {
		// The listening connection (PostgreSQL): gorm would only set a
		// savepoint on it, so the transaction is begun and ended here.
		return pinnedTx(db, s.listener.sql.sqlBeginDecide(), fn)
	}
	if !s.dl().lockFirst() {
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

// Release gives up the given terms of session, in statements of at most
// WriteChunk terms, and returns how many were still held. A term that is
// not the session's at that epoch any more is left untouched, so a stale
// release can never end a newer term.
func (s *Store) Release(ctx context.Context, session string, terms []Term) (int64, error) {
	var total int64
	err := chunks(terms, WriteChunk, func(part []Term) error {
		return s.run(ctx, s.renewal, func(db *gorm.DB) error {
			release := s.dl().sqlRelease(s.tables, session, part)
			notify, ok := s.dl().database.(notifier)
			if !ok {
				n, err := exec(db, release)
				total += n
				return err
			}
			got, err := queryAll(db, notify.sqlReleaseNotify(s.tables, release), func(rs *sql.Rows, n *int64) error {
				var empty string
				return rs.Scan(n, &empty)
			})
			if err == nil && len(got) == 1 {
				total += got[0]
			}
			return err
		})
	})
	if total > 0 {
		// Set only where the processes share a file (fileDatabase).
		if lw := s.local.Load(); lw != nil {
			names := make([]string, len(terms))
			for i, t := range terms {
				names[i] = t.Name
			}
			lw.send(names)
		}
	}
	return total, err
}

// RequestResign records a resign request for the current term of the
// lease name, in one transaction that locks the row first: it reads the
// row, hands it to check, which refuses the request by returning an error
// (a lease that is free, say), and otherwise records the request fenced
// by the term's session and epoch (sqlRequestResign) and bumps the notice
// counter of that session (sqlNotifySession). prefer is that of
// sqlRequestResign; check returns the window the preference lasts.
// It returns the row as read, and found false when the lease has no row.
// notified is false when the holder's session was gone by the time its
// notice was to be bumped: nothing is recorded then.
func (s *Store) RequestResign(ctx context.Context, name, prefer string,
	check func(Row) (window time.Duration, err error)) (row Row, found, notified bool, err error) {
	err = s.run(ctx, s.general, func(db *gorm.DB) error {
		return s.decideTx(db, func(tx *gorm.DB) error {
			lock := s.dl().sqlLockRows(s.tables, []string{name})
			if !s.dl().lockFirst() {
				// SQLite: take the write lock before the read, so the
				// writes that follow cannot find the read's snapshot stale.
				lock = s.dl().sqlWriteLock(s.tables)
			}
			if _, err := lockNames(tx, lock); err != nil {
				return err
			}
			rows, err := queryRows(tx, s.dl().sqlSelect(s.tables, []string{name}))
			if err != nil || len(rows) == 0 {
				return err
			}
			row, found = rows[0], true
			window, err := check(row)
			if err != nil {
				return err
			}
			if _, err := exec(tx, s.dl().sqlRequestResign(s.tables, row.Session, Term{Name: name, Epoch: row.Epoch}, prefer, window)); err != nil {
				return err
			}
			// notice + 1 always changes the row: the count is exact with
			// or without MySQL's clientFoundRows.
			n, err := exec(tx, s.dl().sqlNotifySession(s.tables, row.Session))
			if err != nil {
				return err
			}
			if notified = n == 1; !notified {
				return errNotNotified
			}
			return nil
		})
	})
	if errors.Is(err, errNotNotified) {
		err = nil
	}
	return row, found, notified, err
}

// errNotNotified rolls back a resign request whose session is gone.
var errNotNotified = errors.New("leasehold: the holder's session is gone")

// PendingResigns returns the terms, among the named leases held by
// session, for which a resign request is recorded, in statements of at
// most ReadChunk names.
func (s *Store) PendingResigns(ctx context.Context, session string, names []string) ([]Term, error) {
	var out []Term
	err := chunks(names, ReadChunk, func(part []string) error {
		return s.run(ctx, s.general, func(db *gorm.DB) error {
			terms, err := scanTerms(db, s.dl().sqlPendingResigns(s.tables, session, part))
			out = append(out, terms...)
			return err
		})
	})
	return out, err
}

// Get reads the named leases with the database clock, in statements of at
// most ReadChunk names. Names without a row are absent from the result.
// A read that finds the database failed over records that (adoptIfStale)
// and reads again, so the rows show the hold-off.
func (s *Store) Get(ctx context.Context, names []string) ([]Row, error) {
	return s.readAdopting(ctx, func() ([]Row, error) { return s.get(ctx, names) })
}

// readAdopting runs read, and once more if its rows show a failover that
// nobody had recorded, once this call has recorded it.
func (s *Store) readAdopting(ctx context.Context, read func() ([]Row, error)) ([]Row, error) {
	rows, err := read()
	if err != nil && !s.probed.Load() {
		// A read before the coordinator's start-up probe (an operator's
		// status command) may have failed on the incarnation alone.
		if unsupported, perr := s.ProbeFailover(ctx); perr == nil && unsupported != nil {
			rows, err = read()
		}
	}
	if err != nil {
		return nil, err
	}
	if again, err := s.adoptIfStale(ctx, rows); err != nil || !again {
		return rows, err
	}
	return read()
}

func (s *Store) get(ctx context.Context, names []string) ([]Row, error) {
	var out []Row
	err := chunks(names, ReadChunk, func(part []string) error {
		return s.run(ctx, s.general, func(db *gorm.DB) error {
			rows, err := queryRows(db, s.dl().sqlSelect(s.tables, part))
			out = append(out, rows...)
			return err
		})
	})
	return out, err
}

// List reads every lease whose name starts with prefix ("" for all),
// ordered by name. The match is byte for byte, also on SQLite. A failover
// is recorded as Get does.
func (s *Store) List(ctx context.Context, prefix string) ([]Row, error) {
	return s.readAdopting(ctx, func() ([]Row, error) { return s.list(ctx, prefix) })
}

func (s *Store) list(ctx context.Context, prefix string) ([]Row, error) {
	var lo, hi string
	if prefix != "" {
		var err error
		if lo, hi, err = prefixRange(prefix); err != nil {
			return nil, err
		}
	}
	var out []Row
	err := s.run(ctx, s.general, func(db *gorm.DB) (err error) {
		out, err = queryRows(db, s.dl().sqlList(s.tables, lo, hi))
		return err
	})
	return out, err
}

// Now reads the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now int64
	err := s.run(ctx, s.general, func(db *gorm.DB) error {
		st := s.dl().sqlNow()
		return scanRow(db, st, &now)
	})
	return usTime(now), err
}

// Fence reads the lease row inside the caller's transaction tx, locking it
// against a change of holder until tx ends, and returns it. The caller
// compares session, epoch and liveness.
func (s *Store) Fence(tx *gorm.DB, name string) (Row, bool, error) {
	rows, err := queryRows(tx, s.dl().sqlFence(s.tables, name))
	if err != nil || len(rows) == 0 {
		return Row{}, false, err
	}
	return rows[0], true, nil
}

func queryRows(db *gorm.DB, st stmt) ([]Row, error) {
	return queryAll(db, st, func(rs *sql.Rows, r *Row) error {
		var acquired, renewed, expires, preferUntil, now, hold int64
		if err := rs.Scan(&r.Name, &r.Holder, &r.Session, &r.Epoch, &acquired, &renewed, &expires, &r.Data,
			&r.ResignEpoch, &r.PreferredHolder, &preferUntil, &now, &hold, &r.EpochFloor); err != nil {
			return err
		}
		scanIncarnation(r, hold)
		r.AcquiredAt, r.RenewedAt, r.ExpiresAt, r.Now = usTime(acquired), usTime(renewed), usTime(expires), usTime(now)
		r.PreferredUntil = usTime(preferUntil)
		return nil
	})
}

// SetData writes data into a row this session holds at this epoch, while
// the session is live. It reports false when the term is over.
func (s *Store) SetData(ctx context.Context, session string, t Term, data string) (bool, error) {
	var n int64
	err := s.run(ctx, s.general, func(db *gorm.DB) (err error) {
		n, err = exec(db, s.dl().sqlSetData(s.tables, session, t, data))
		return err
	})
	if err != nil || n == 1 {
		return n == 1, err
	}
	// MySQL without clientFoundRows counts an unchanged row as 0: read back.
	rows, err := s.Get(ctx, []string{t.Name})
	if err != nil {
		return false, err
	}
	ok := len(rows) == 1 && rows[0].Session == session && rows[0].Epoch == t.Epoch && rows[0].Live() && rows[0].Data == data
	return ok, nil
}

// Publish moves an unheld row (a pool's generation row) from epoch from to
// from+1 (or above the incarnation's floor, incarnation.go) with new data,
// only if it is still at from: a compare-and-set. After a failover of the
// database it publishes nothing until the hold-off has passed.
func (s *Store) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	var n int64
	err := s.run(ctx, s.general, func(db *gorm.DB) (err error) {
		if err := s.ensureIncarnation(db); err != nil {
			return err
		}
		n, err = exec(db, s.dl().sqlPublish(s.tables, name, from, data))
		return err
	})
	return n == 1, err
}

// PruneDead deletes the rows whose name starts with prefix (byte for byte)
// that nobody holds or is about to hold: unheld for longer than grace, or
// held by a session expired (or gone) for longer than grace. It returns how
// many it deleted. Pools use it for the member rows of processes that left
// or died, whose names (by instance id) are never used again.
func (s *Store) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	lo, hi, err := prefixRange(prefix)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.run(ctx, s.general, func(db *gorm.DB) error {
		if !s.dl().lockFirst() {
			n, err = exec(db, s.dl().sqlPruneDead(s.tables, lo, hi, grace))
			return err
		}
		// Lock the rows that look dead, then delete those still dead on a
		// snapshot taken after the locks (dialect.lockFirst).
		return s.decideTx(db, func(tx *gorm.DB) (err error) {
			dead, err := lockNames(tx, s.dl().sqlLockDead(s.tables, lo, hi, grace))
			if err != nil || len(dead) == 0 {
				return err
			}
			n, err = exec(tx, s.dl().sqlPruneNames(s.tables, dead, grace))
			return err
		})
	})
	return n, err
}

// ----------------------------------------------------------------------
// Schema

// SchemaVersion returns the applied schema version, 0 when the version
// table does not exist.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.run(ctx, s.general, func(db *gorm.DB) error {
		// gorm's HasTable swallows errors, and on most dialects panics
		// when a callback of the application's fails its read (gorm's Row
		// then has no row to scan). One read first tells "absent" from
		// "unreachable" or "refused".
		var one int
		if err := scanRow(db, stmt{"SELECT 1", nil}, &one); err != nil {
			return err
		}
		if !db.Migrator().HasTable(s.tables.Migrations) {
			return nil
		}
		return scanRow(db, stmt{s.dl().sqlCurrentVersion(s.tables), nil}, &v)
	})
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
	return s.MigrateTo(ctx, lockTimeout, LatestVersion)
}

// MigrateTo is Migrate up to version target only, for tests that need a
// schema of an earlier version.
func (s *Store) MigrateTo(ctx context.Context, lockTimeout time.Duration, target int) (applied []int, err error) {
	// On the pool, never on the listening connection: the migration runs
	// its own transactions and locks.
	err = s.runOn(ctx, s.general, func(db *gorm.DB) error {
		return s.dl().withMigrationLock(db, s.tables, lockTimeout, func(tx *gorm.DB, stepTx func(func() error) error) error {
			if err := tx.Exec(s.dl().createMigrationsTable(s.tables)).Error; err != nil {
				return fmt.Errorf("create %s: %w", s.tables.Migrations, err)
			}
			var current int
			if err := scanRow(tx, stmt{s.dl().sqlCurrentVersion(s.tables), nil}, &current); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			for _, m := range migrations {
				if m.Version <= current || m.Version > target {
					continue
				}
				step := func() error { return s.applyStep(tx, m) }
				var err error
				if m.transactional {
					err = stepTx(step)
				} else {
					err = step()
				}
				if err != nil {
					return err
				}
				applied = append(applied, m.Version)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// applyStep runs one migration step and records its version, skipping the
// statements when the step's applied check finds them done already.
func (s *Store) applyStep(tx *gorm.DB, m Migration) error {
	done := false
	if m.applied != nil {
		if q := m.applied(s.dl(), s.tables); q != "" {
			var n int
			if err := scanRow(tx, stmt{q, nil}, &n); err != nil {
				return fmt.Errorf("migration %d (%s): check: %w", m.Version, m.Description, err)
			}
			done = n > 0
		}
	}
	if !done {
		for _, stmt := range m.statements(s.dl(), s.tables) {
			if err := tx.Exec(stmt).Error; err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Description, err)
			}
		}
	}
	if err := tx.Exec(s.dl().sqlRecordVersion(s.tables, m.Version), m.Description).Error; err != nil {
		return fmt.Errorf("record migration %d: %w", m.Version, err)
	}
	return nil
}
