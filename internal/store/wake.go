package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"
)

// Wake-ups
//
// A release, and a change to a pool's rows, is announced to the other
// processes on the same tables, so that a follower attempts at once
// instead of at its next poll. An announcement carries the names of the
// leases concerned, or nothing when they do not fit, which means "any".
// It is a hint: whoever is woken reads the rows and decides from them, as
// on a poll, so a lost, late, duplicated or spurious wake-up only changes
// when a read happens, never what it decides.
//
//   - PostgreSQL (notifier): the release statement calls pg_notify, which
//     the server delivers at commit; each process listens on one
//     connection (pgListener), which it also uses for its general
//     statements, so that listening costs no connection beyond the bound.
//   - SQLite (fileDatabase): processes sharing a database file are on one
//     host; each binds a datagram socket in a directory next to the file
//     (or in the temporary directory when that path is too long), and a
//     release sends its names to every socket there (localWake).
//   - MySQL, MariaDB and SQL Server (neither): followers poll.

// notifier is a database whose releases wake the other processes through
// the database itself: PostgreSQL's LISTEN/NOTIFY.
type notifier interface {
	// sqlReleaseNotify is release, the statement of sqlRelease, in one
	// statement that also notifies the listeners of the tables with the
	// names of the leases it freed, at commit. It returns one row: the
	// count and an empty string.
	sqlReleaseNotify(t Tables, release stmt) stmt
	// sqlNotify notifies the listeners of the tables.
	sqlNotify(t Tables, payload string) stmt
	// sqlListen subscribes the connection to the tables' notifications.
	sqlListen(t Tables) string
	// sqlBeginDecide begins the transaction of a decision (Store.decideTx)
	// by a statement, on the listening connection.
	sqlBeginDecide() string
}

// ErrNoWakeups is returned by Listen where there is no way to wake the
// other processes: MySQL, MariaDB, SQL Server, an SQLite database in
// memory, and PostgreSQL with MaxConnections 1. Followers poll there.
var ErrNoWakeups = errors.New("leasehold: no release notifications on this database; followers poll")

// maxWakePayload bounds the names one wake-up carries, in bytes: a
// PostgreSQL notification's payload must be shorter than 8000 bytes. A
// longer list is sent as an empty payload, which wakes for anything.
const maxWakePayload = 7900

// wakePayload joins names for a wake-up; "" when they do not fit.
func wakePayload(names []string) string {
	n := 0
	for _, s := range names {
		n += len(s) + 1
	}
	if n-1 > maxWakePayload {
		return ""
	}
	return strings.Join(names, "\n")
}

// parseWake splits a payload back into names; nil means any.
func parseWake(payload string) []string {
	if payload == "" {
		return nil
	}
	return strings.Split(payload, "\n")
}

// wakeChannel is the PostgreSQL notification channel of the tables, and
// the name the SQLite wake-up directory is derived from: the lease
// table's name, so that two table prefixes never wake each other.
func wakeChannel(t Tables) string { return t.Leases }

// WakeFunc receives a wake-up: the names of the leases whose rows changed,
// nil when any may have.
type WakeFunc func(names []string)

// WakeState is told when listening starts to work (nil) and when it stops
// or cannot start (the reason).
type WakeState func(err error)

// Listen delivers the wake-ups of other processes (and of this one) to
// wake until ctx is done, and then returns nil. Each time listening starts
// or starts again, wake(nil) is called, since wake-ups may have been
// missed meanwhile; state reports every start and stop. When listening
// fails it retries after retry, doubling up to a minute. It returns
// ErrNoWakeups at once where there is no way to listen.
func (s *Store) Listen(ctx context.Context, retry time.Duration, wake WakeFunc, state WakeState) error {
	var listen func(ctx context.Context, wake WakeFunc, up func()) error
	file, isFile := s.dl().database.(fileDatabase)
	switch {
	case s.listener != nil:
		if err := s.listener.poolAllows(); err != nil {
			return err
		}
		listen = s.listener.listen
	case isFile:
		lw, err := s.localWaker(ctx, file)
		if err != nil {
			return err
		}
		listen = lw.listen
	default:
		return ErrNoWakeups
	}
	for failures := 0; ; {
		err := listen(ctx, wake, func() {
			failures = 0
			state(nil)
			wake(nil)
		})
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = errors.New("leasehold: listening ended")
		}
		state(err)
		failures++
		wait := min(retry<<min(failures-1, 16), time.Minute)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Notify wakes the processes listening on the tables for names. Releases
// notify by themselves; pools call it after changing their rows. Where
// there is no way to wake others it does nothing.
func (s *Store) Notify(ctx context.Context, names []string) error {
	if n, ok := s.dl().database.(notifier); ok {
		return s.run(ctx, s.general, func(db *gorm.DB) error {
			st := n.sqlNotify(s.tables, wakePayload(names))
			return db.Exec(st.q, st.args...).Error
		})
	}
	// Set only where the processes share a file (fileDatabase).
	if lw := s.local.Load(); lw != nil {
		lw.send(names)
	}
	return nil
}

// pgListener is the one listening connection of a PostgreSQL store. While
// it listens, it holds every general connection slot, and the general
// statements run on its connection, one at a time, interrupting its wait
// for notifications: so a process uses at most its renewal connection and
// this one. While it does not listen, they use the pool as usual.
type pgListener struct {
	s   *Store
	sql notifier // the statements of the wake-up

	mu   sync.Mutex
	idle *sync.Cond // signalled when users drops to 0
	// conn is the listening connection's handle, nil while not listening.
	conn  *gorm.DB
	users int                // statements that use or wait for conn
	stop  context.CancelFunc // ends the wait for notifications in progress
	// up is cancelled (by setUp) when conn is set, and replaced when it
	// is cleared: a statement waiting for a pool slot, which the listener
	// may hold, goes to conn instead once it is there.
	up    context.Context
	setUp context.CancelFunc
	turn  chan struct{} // buffered 1: one statement at a time on conn
}

func newPGListener(s *Store, sql notifier) *pgListener {
	l := &pgListener{s: s, sql: sql, turn: make(chan struct{}, 1)}
	l.idle = sync.NewCond(&l.mu)
	l.up, l.setUp = context.WithCancel(context.Background())
	return l
}

// poolAllows returns an error wrapping ErrNoWakeups when the caller's pool
// is capped below two open connections: the listening connection is taken
// from it for as long as listening runs, and the session's renewal must
// still find one.
func (l *pgListener) poolAllows() error {
	sqlDB, err := l.s.db.DB()
	if err != nil {
		return nil // not a *sql.DB pool: nothing to check
	}
	if m := sqlDB.Stats().MaxOpenConnections; m > 0 && m < 2 {
		return fmt.Errorf("%w: the pool allows %d open connection (SetMaxOpenConns); listening would hold it and leave none for the renewals",
			ErrNoWakeups, m)
	}
	return nil
}

// warmRenewal makes sure the pool holds a connection for the renewal's
// slot, once listening works. The listening connection is the one the
// pool had; without this, a follower woken by a release would open a
// connection (on PostgreSQL a new server process: milliseconds) to start
// its session, on the critical path of the handoff. A failure only
// leaves that for later.
func (l *pgListener) warmRenewal(ctx context.Context) {
	_ = l.s.runOn(ctx, l.s.renewal, func(db *gorm.DB) error {
		st := l.s.dl().sqlNow()
		_, err := queryAll(db, st, func(rs *sql.Rows, v *int64) error { return rs.Scan(v) })
		return err
	})
}

// errNotPGX is returned when the driver under gorm is not pgx.
var errNotPGX = errors.New("leasehold: listening needs the pgx driver (gorm.io/driver/postgres)")

// listenProbeTimeout bounds the wait for the probe notification a new
// listening connection sends itself.
const listenProbeTimeout = 30 * time.Second

// probePayload is the payload of the probe; it names no lease.
const probePayload = "|leasehold-probe|"

// run runs a general statement: on the listening connection while there
// is one, on the pool otherwise.
func (l *pgListener) run(ctx context.Context, fn func(db *gorm.DB) error) error {
	for {
		l.mu.Lock()
		if conn := l.conn; conn != nil {
			l.users++
			if l.stop != nil {
				l.stop()
			}
			l.mu.Unlock()
			return l.runOn(ctx, conn, fn)
		}
		up := l.up
		l.mu.Unlock()
		// Not listening: take a pool slot, unless the listening connection
		// is there first (the listener takes every slot while it listens).
		err, switched := l.runOnPoolUnless(ctx, up, fn)
		if !switched {
			return err
		}
	}
}

// runOn runs fn on the listening connection conn; the caller counted
// itself in users.
func (l *pgListener) runOn(ctx context.Context, conn *gorm.DB, fn func(db *gorm.DB) error) error {
	defer func() {
		l.mu.Lock()
		l.users--
		if l.users == 0 {
			l.idle.Broadcast()
		}
		l.mu.Unlock()
	}()
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.turn }()
	return fn(conn.WithContext(ctx).Session(&gorm.Session{}))
}

// runOnPoolUnless runs fn on the pool within a general slot, unless up is
// done first: then it reports switched and runs nothing.
func (l *pgListener) runOnPoolUnless(ctx, up context.Context, fn func(db *gorm.DB) error) (err error, switched bool) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(up, cancel)
	defer stop()
	if err := l.s.general.Acquire(actx, 1); err != nil {
		if ctx.Err() != nil {
			return ctx.Err(), false
		}
		return nil, true
	}
	defer l.s.general.Release(1)
	cancel() // no longer needed; fn runs under ctx
	return fn(l.s.session(ctx)), false
}

// listen runs one listening connection until ctx is done or the
// connection fails; up is called once it listens.
func (l *pgListener) listen(ctx context.Context, wake WakeFunc, up func()) error {
	// Every general slot: the statements on the pool end first, and the
	// listening connection stands for all of them while it is there.
	slots := int64(l.s.maxConns - 1)
	if err := l.s.general.Acquire(ctx, slots); err != nil {
		return err
	}
	defer l.s.general.Release(slots)
	db := l.s.db.WithContext(ctx).Clauses(dbresolver.Write).Session(&gorm.Session{})
	return pinned(db, func(conn *gorm.DB) error {
		raw := conn.Statement.ConnPool.(pinnedConn).Conn
		// The connection never goes back to the pool with LISTEN on it:
		// the pool's next user would collect notifications it never reads.
		defer func() { _ = raw.Raw(func(any) error { return driver.ErrBadConn }) }()
		if err := l.subscribe(conn); err != nil {
			return err
		}
		l.mu.Lock()
		l.conn = conn
		l.setUp()
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			l.conn = nil
			l.up, l.setUp = context.WithCancel(context.Background())
			for l.users > 0 {
				l.idle.Wait()
			}
			l.mu.Unlock()
		}()
		return l.serve(ctx, raw, wake, func() {
			l.warmRenewal(ctx)
			up()
		})
	})
}

// subscribe sends LISTEN, and a notification to the connection itself:
// serve waits for it before it reports listening. Behind a pooler that
// does not keep one server connection per client (PgBouncer in
// transaction mode) it never arrives, and listening is given up.
func (l *pgListener) subscribe(conn *gorm.DB) error {
	if err := conn.Exec(l.sql.sqlListen(l.s.tables)).Error; err != nil {
		return fmt.Errorf("LISTEN: %w", err)
	}
	st := l.sql.sqlNotify(l.s.tables, probePayload)
	if err := conn.Exec(st.q, st.args...).Error; err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// serve waits for notifications and hands them to wake, stepping aside
// whenever a statement wants the connection, until ctx is done or the
// connection fails. It calls up once the probe sent by subscribe has
// arrived, and fails when it has not within listenProbeTimeout.
func (l *pgListener) serve(ctx context.Context, raw *sql.Conn, wake WakeFunc, up func()) error {
	probeBy := time.Now().Add(listenProbeTimeout)
	probed := false
	for {
		l.mu.Lock()
		for l.users > 0 {
			l.idle.Wait()
		}
		deadline := time.Time{}
		if !probed {
			deadline = probeBy
		}
		wctx, cancel := waitContext(ctx, deadline)
		l.stop = cancel
		l.mu.Unlock()
		payload, err := waitNotification(wctx, raw)
		timedOut := errors.Is(wctx.Err(), context.DeadlineExceeded)
		cancel()
		l.mu.Lock()
		l.stop = nil
		l.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && timedOut:
			return fmt.Errorf("no notification arrived within %v of LISTEN (a pooler in transaction mode?)", listenProbeTimeout)
		case err != nil && wctx.Err() != nil:
			// A statement interrupted the wait: go on unless the
			// connection broke meanwhile.
			if err := connAlive(raw); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			// Any notification shows that they arrive.
			if !probed {
				probed = true
				up()
			}
			if payload != probePayload {
				wake(parseWake(payload))
			}
		}
	}
}

// waitContext is ctx, cancellable, and with deadline unless it is zero.
func waitContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline)
}

// withPGX runs fn with the pgx connection behind raw.
func withPGX(raw *sql.Conn, fn func(c *pgx.Conn) error) error {
	return raw.Raw(func(dc any) error {
		c, ok := dc.(interface{ Conn() *pgx.Conn })
		if !ok {
			return errNotPGX
		}
		return fn(c.Conn())
	})
}

// waitNotification waits on raw for the next notification and returns
// its payload.
func waitNotification(ctx context.Context, raw *sql.Conn) (payload string, err error) {
	err = withPGX(raw, func(c *pgx.Conn) error {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		payload = n.Payload
		return nil
	})
	return payload, err
}

// connAlive returns an error when the pgx connection behind raw is
// closed.
func connAlive(raw *sql.Conn) error {
	return withPGX(raw, func(c *pgx.Conn) error {
		if c.IsClosed() {
			return errors.New("leasehold: the listening connection closed")
		}
		return nil
	})
}
