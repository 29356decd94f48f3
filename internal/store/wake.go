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

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/leasehold/leasehold/internal/wake"
)

// The store's side of the wake-ups (package internal/wake):
//   - PostgreSQL: releases notify at commit, and a transport listens on a
//     connection the store lends it (Listen), which also carries the
//     store's general statements, so listening costs no extra connection;
//   - SQLite: File names the database file for the sockets next to it;
//   - every database: session rows that hold no lease advertise the peer
//     wake-ups of their process (wake.Directory).

// wakeChannel is the tables' notification channel, and what the SQLite
// wake-up directory is named after: the lease table's name.
func wakeChannel(t Tables) string { return t.Leases }

// probeChannel returns a new channel for the probes of one listening
// connection.
func probeChannel() string {
	return "leasehold_probe_" + strings.ReplaceAll(uuid.NewString(), "-", "")
}

// Wakeups returns the store's side of the wake-ups, for the transports.
func (s *Store) Wakeups() wake.Database { return storeWake{s} }

// storeWake is the store's wake.Database.
type storeWake struct{ s *Store }

var (
	_ wake.Database  = storeWake{}
	_ wake.Directory = storeWake{}
)

// Means says how the processes on the store's database wake each other.
func (w storeWake) Means() wake.Means { return w.s.sql.dl().wakes }

// Channel is the tables' channel (wakeChannel).
func (w storeWake) Channel() string { return wakeChannel(w.s.tables) }

// File reads the path of the database file; "" for a database in memory
// or one that is not in a file.
func (w storeWake) File(ctx context.Context) (string, error) {
	q := w.s.sql.dl().databaseFile
	if q == "" {
		return "", nil
	}
	var files []string
	err := w.s.conns.run(ctx, w.s.conns.general, func(db *gorm.DB) (err error) {
		files, err = queryAll(db, stmt{q: q}, func(rs *sql.Rows, f *string) error { return rs.Scan(f) })
		return err
	})
	if err != nil || len(files) != 1 {
		return "", err
	}
	return files[0], nil
}

// Notify wakes the processes listening for names through the database;
// elsewhere it does nothing. Releases notify by themselves.
func (w storeWake) Notify(ctx context.Context, names []string) error {
	st := w.s.sql.dl().sqlNotify(wakeChannel(w.s.tables), wake.Payload(names))
	if st.q == "" {
		return nil
	}
	return w.s.conns.run(ctx, w.s.conns.general, func(db *gorm.DB) error { return execStep(db, st) })
}

// OnRelease sets what a release that freed any lease calls with the
// names released, and what SetData calls with its wake-up's name.
func (w storeWake) OnRelease(fn func(names []string)) { w.s.released.fn = fn }

// Advertise creates the advertising row id of holder, live for ttl.
func (w storeWake) Advertise(ctx context.Context, id, holder string, a wake.Advert, ttl time.Duration) error {
	return w.s.conns.run(ctx, w.s.conns.general, func(db *gorm.DB) error {
		_, err := exec(db, w.s.sql.dl().sessions().sqlCreateSessionAdvertised(w.s.tables, id, holder, ttl, a.Addrs, a.Key))
		return err
	})
}

// Readvertise extends the advertising row id; false when it had expired.
func (w storeWake) Readvertise(ctx context.Context, id string, ttl time.Duration) (ok bool, err error) {
	err = w.s.conns.run(ctx, w.s.conns.general, func(db *gorm.DB) (err error) {
		ok, _, err = w.s.sessions.renew(db, id, ttl)
		return err
	})
	return ok, err
}

// Withdraw deletes the advertising row id.
func (w storeWake) Withdraw(ctx context.Context, id string) error {
	return w.s.conns.run(ctx, w.s.conns.general, func(db *gorm.DB) error {
		_, err := exec(db, w.s.sql.dl().sessions().sqlEndSession(w.s.tables, id))
		return err
	})
}

// Peers reads the peer wake-up adverts of the sessions live, or expired
// less than grace ago.
func (w storeWake) Peers(ctx context.Context, grace time.Duration) ([]wake.Advert, error) {
	var out []wake.Advert
	err := w.s.conns.run(ctx, w.s.conns.general, func(db *gorm.DB) (err error) {
		out, err = queryAll(db, w.s.sql.dl().sessions().sqlPeers(w.s.tables, grace), func(rs *sql.Rows, a *wake.Advert) error {
			return rs.Scan(&a.Addrs, &a.Key)
		})
		return err
	})
	return out, err
}

// Listen lends the transport a connection to listen on (wake.Conn), with
// every general slot: the general statements run on it while it is shared
// (lentConn.Share).
func (w storeWake) Listen(ctx context.Context, fn func(c wake.Conn) error) error {
	g, l := w.s.conns, w.s.conns.lend
	if l == nil {
		return wake.ErrNoWakeups
	}
	if err := l.poolAllows(); err != nil {
		return err
	}
	n := g.maxConns - 1
	if err := g.takeGeneral(ctx, n); err != nil {
		return err
	}
	defer g.general.giveN(n)
	db := g.db.WithContext(ctx).Clauses(dbresolver.Write).Session(&gorm.Session{})
	return pinned(db, func(conn *gorm.DB) error {
		raw := conn.Statement.ConnPool.(pinnedConn).Conn
		// Never back to the pool with LISTEN on it.
		defer func() { _ = raw.Raw(func(any) error { return driver.ErrBadConn }) }()
		// The tables' channel only once a probe arrived (Listening).
		probe := probeChannel()
		if err := conn.Exec(pgListen(probe)).Error; err != nil {
			return fmt.Errorf("LISTEN: %w", err)
		}
		c := &lentConn{l: l, conn: conn, raw: raw, probe: probe}
		defer c.unshare()
		return fn(c)
	})
}

// lending runs the general statements of a PostgreSQL store on the
// connection lent to a transport while it is shared, one at a time,
// interrupting the transport's wait; on the pool otherwise.
type lending struct {
	g      *gate
	tables Tables
	// clock reads the database clock (Listening).
	clock stmt

	mu   sync.Mutex
	idle *sync.Cond // signalled when users drops to 0
	// conn is the shared connection, nil while none is; alive tells
	// whether it still works.
	conn  *gorm.DB
	alive func() bool
	users int                // statements that use or wait for conn
	stop  context.CancelFunc // ends the transport's wait in progress
	// up is cancelled when conn is set, and replaced when it is cleared:
	// a statement waiting for a pool slot then goes to conn.
	up    context.Context
	setUp context.CancelFunc
	turn  chan struct{} // buffered 1: one statement at a time on conn
}

func newLending(g *gate, t Tables, clock stmt) *lending {
	l := &lending{g: g, tables: t, clock: clock, turn: make(chan struct{}, 1)}
	l.idle = sync.NewCond(&l.mu)
	l.up, l.setUp = context.WithCancel(context.Background())
	return l
}

// poolAllows returns an error wrapping ErrNoWakeups when the caller's pool
// allows fewer than two open connections: listening holds one.
func (l *lending) poolAllows() error {
	sqlDB, err := l.g.db.DB()
	if err != nil {
		return nil // not a *sql.DB pool: nothing to check
	}
	if m := sqlDB.Stats().MaxOpenConnections; m > 0 && m < 2 {
		return fmt.Errorf("%w: the pool allows %d open connection (SetMaxOpenConns); listening would hold it and leave none for the renewals",
			wake.ErrNoWakeups, m)
	}
	return nil
}

// run runs a general statement: on the shared connection while there is
// one, on the pool otherwise.
func (l *lending) run(ctx context.Context, fn func(db *gorm.DB) error) error {
	for {
		l.mu.Lock()
		if conn, alive := l.conn, l.alive; conn != nil {
			l.users++
			if l.stop != nil {
				l.stop()
			}
			l.mu.Unlock()
			err, dead := l.runOn(ctx, conn, alive, fn)
			if !dead {
				return err
			}
			continue // the shared connection broke before fn ran: the pool
		}
		up := l.up
		l.mu.Unlock()
		// Not shared: take a pool slot, unless the shared connection is
		// there first (the transport takes every slot while it listens).
		err, switched := l.runOnPoolUnless(ctx, up, fn)
		if !switched {
			return err
		}
	}
}

// runOn runs fn on the shared connection conn, counted in users by the
// caller. If conn broke before fn's turn (alive), it runs nothing and
// reports dead: conn is no longer shared, and the caller goes to the pool.
func (l *lending) runOn(ctx context.Context, conn *gorm.DB, alive func() bool, fn func(db *gorm.DB) error) (err error, dead bool) {
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
		return ctx.Err(), false
	}
	defer func() { <-l.turn }()
	if alive != nil && !alive() {
		l.broke(conn)
		return nil, true
	}
	return fn(conn.WithContext(ctx).Session(&gorm.Session{})), false
}

// broke stops sharing conn, which broke; the transport's next wait fails
// and ends its Listen, which frees the slots.
func (l *lending) broke(conn *gorm.DB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != conn {
		return
	}
	l.unshareLocked()
}

// unshareLocked sends the statements that come next to the pool. The
// caller holds l.mu.
func (l *lending) unshareLocked() {
	l.conn, l.alive = nil, nil
	l.up, l.setUp = context.WithCancel(context.Background())
}

// runOnPoolUnless runs fn on the pool within a general slot, unless up is
// done first: then it reports switched and runs nothing.
func (l *lending) runOnPoolUnless(ctx, up context.Context, fn func(db *gorm.DB) error) (err error, switched bool) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(up, cancel)
	defer stop()
	if err := l.g.general.take(actx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err(), false
		}
		return nil, true
	}
	defer l.g.general.give()
	cancel() // no longer needed; fn runs under ctx
	return fn(l.g.session(ctx)), false
}

// lentConn is the connection lent to a transport (wake.Conn).
type lentConn struct {
	l      *lending
	conn   *gorm.DB
	raw    *sql.Conn
	probe  string // the channel of its probes (probeChannel)
	shared bool   // set by Share, read by unshare: the transport's goroutine
}

var _ wake.Conn = (*lentConn)(nil)

// Raw is the connection.
func (c *lentConn) Raw() *sql.Conn { return c.raw }

// Notify sends payload to the connection's probe channel, from the
// renewal's slot.
func (c *lentConn) Notify(ctx context.Context, payload string) error {
	g := c.l.g
	st := pgNotify(c.probe, payload)
	if err := g.runOn(ctx, g.renewal, func(db *gorm.DB) error {
		_, err := exec(db, st)
		return err
	}); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// Share makes the general statements run on the connection.
func (c *lentConn) Share(alive func() bool) {
	c.shared = true
	c.l.mu.Lock()
	c.l.conn, c.l.alive = c.conn, alive
	c.l.setUp()
	c.l.mu.Unlock()
}

// unshare ends Share, once the statements on the connection have ended.
func (c *lentConn) unshare() {
	if !c.shared {
		return
	}
	l := c.l
	l.mu.Lock()
	l.unshareLocked()
	for l.users > 0 {
		l.idle.Wait()
	}
	l.mu.Unlock()
}

// Idle waits until no statement uses or wants the connection, and returns
// the context of one wait, which the next statement cancels.
func (c *lentConn) Idle(ctx context.Context, deadline time.Time) (context.Context, func()) {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.users > 0 {
		l.idle.Wait()
	}
	var wctx context.Context
	var cancel context.CancelFunc
	if deadline.IsZero() {
		wctx, cancel = context.WithCancel(ctx)
	} else {
		wctx, cancel = context.WithDeadline(ctx, deadline)
	}
	l.stop = cancel
	return wctx, func() {
		cancel()
		l.mu.Lock()
		l.stop = nil
		l.mu.Unlock()
	}
}

// Listening subscribes the connection to the tables' channel instead of
// its probe channel, now that a probe showed its LISTEN holds. It then
// has the pool open a connection for the renewal's slot, off the critical
// path of a handoff; a failure there is left for later.
func (c *lentConn) Listening(ctx context.Context) error {
	l := c.l
	l.mu.Lock()
	if l.conn != c.conn {
		l.mu.Unlock()
		return errListeningClosed
	}
	alive := l.alive
	l.users++
	l.mu.Unlock()
	err, dead := l.runOn(ctx, c.conn, alive, func(db *gorm.DB) error {
		if err := db.Exec(pgListen(wakeChannel(l.tables))).Error; err != nil {
			return fmt.Errorf("LISTEN: %w", err)
		}
		if err := db.Exec(pgUnlisten(c.probe)).Error; err != nil {
			return fmt.Errorf("UNLISTEN: %w", err)
		}
		return nil
	})
	switch {
	case dead:
		return errListeningClosed
	case err != nil:
		return err
	}
	g := l.g
	_ = g.runOn(ctx, g.renewal, func(db *gorm.DB) error {
		_, err := queryAll(db, l.clock, func(rs *sql.Rows, v *int64) error { return rs.Scan(v) })
		return err
	})
	return nil
}

// errListeningClosed is Listening's error when the listening connection
// broke before it could subscribe it to the tables' channel.
var errListeningClosed = errors.New("leasehold: the listening connection closed")
