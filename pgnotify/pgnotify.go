// Package pgnotify makes a graceful handoff on PostgreSQL immediate: it
// receives leasehold's release notifications (LISTEN/NOTIFY) through the
// pgx driver that gorm.io/driver/postgres uses.
//
// Set it in the coordinator's configuration, directly or through
// workers.Config.Coordination:
//
//	coord, err := coordination.New(db, id, coordination.Config{
//		Notifications: pgnotify.New(),
//	})
//
// Without it, followers on PostgreSQL poll every RetryInterval, and the
// coordinator says so once when it starts. It is a package of its own so
// that only programs that choose it link pgx: a program on MySQL, MariaDB,
// SQLite or SQL Server that imports coordination or workers does not. On
// those databases it is ignored (SQLite's processes wake each other
// through sockets next to the database file without it).
//
// Each process listens on one connection of its pool, which also carries
// the coordinator's reads and acquires while it listens, so listening
// costs no connection beyond coordination.Config.MaxConnections (which
// must be 2 or more for it). A new listening connection is sent a
// notification from another connection of the pool, and reports listening
// only once that arrives, within 2 s, before the connection carries any
// other statement: behind a pooler that breaks LISTEN (PgBouncer in
// transaction mode) listening is given up with one warning and retried,
// and the followers poll meanwhile.
package pgnotify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/wake"
)

// Transport receives release notifications through PostgreSQL's
// LISTEN/NOTIFY on the pgx driver. Its zero value is ready to use; New
// returns one.
type Transport struct{}

// New returns the transport to set as coordination.Config.Notifications.
func New() Transport { return Transport{} }

// Open returns the transport on the store's side of the wake-ups db. The
// coordinator calls it; a program has no use for it.
func (Transport) Open(db wake.Database) wake.Transport { return &listener{db: db} }

// listener listens on the connection the store lends it.
type listener struct {
	db wake.Database
}

// errNotPGX is returned when the driver under gorm is not pgx.
var errNotPGX = errors.New("leasehold: listening needs the pgx driver (gorm.io/driver/postgres)")

// listenProbeTimeout bounds the wait for the probe notification a new
// listening connection is sent, before the connection is shared: the
// store's general statements (reads, acquires) wait meanwhile, and behind
// a pooler that breaks LISTEN they wait this long at each attempt to
// listen (retried with backoff up to a minute). On the server the probe
// takes milliseconds; a server too slow for the bound only makes the
// attempt fail and be retried.
const listenProbeTimeout = 2 * time.Second

// probePayload is the payload of the probe; it names no lease.
const probePayload = "|leasehold-probe|"

// Listen runs one listening connection until ctx is done or the
// connection fails; up is called once notifications arrive on it.
//
// Before the connection carries any statement of the store's, it is sent
// a notification from another connection of the pool, and listening goes
// on only if that arrives within listenProbeTimeout. Through a pooler that
// gives each transaction whichever server connection is free (PgBouncer
// in transaction mode), an idle client has no server connection of its
// own, so nothing can reach it: the LISTEN held only for its own
// statement. Nothing else is proof there: a notification the connection
// sent itself comes back with the NOTIFY's own answer from the server
// that had run its LISTEN, and once the connection is shared, a
// notification may come with the answer to any statement, from whichever
// server that ran on.
func (t *listener) Listen(ctx context.Context, deliver func(names []string), up func()) error {
	return t.db.Listen(ctx, func(c wake.Conn) error {
		if err := c.Notify(ctx, probePayload); err != nil {
			return err
		}
		raw := c.Raw()
		if err := waitProbe(ctx, raw, deliver); err != nil || ctx.Err() != nil {
			return err
		}
		c.Share(func() bool { return connAlive(raw) == nil })
		c.Listening(ctx)
		up()
		return serve(ctx, c, deliver)
	})
}

// Notify wakes the processes listening on the tables for names, through
// the database.
func (t *listener) Notify(ctx context.Context, names []string) error {
	return t.db.Notify(ctx, names)
}

// waitProbe waits on raw, not shared yet, for a notification, at most
// listenProbeTimeout, and hands it to deliver unless it is the probe.
func waitProbe(ctx context.Context, raw *sql.Conn, deliver func(names []string)) error {
	wctx, cancel := context.WithTimeout(ctx, listenProbeTimeout)
	defer cancel()
	payload, err := waitNotification(wctx, raw)
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil && errors.Is(wctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no notification arrived within %v of LISTEN (a pooler in transaction mode?)", listenProbeTimeout)
	case err != nil:
		return err
	}
	if payload != probePayload {
		deliver(wake.Names(payload))
	}
	return nil
}

// serve waits for notifications and hands them to deliver, stepping aside
// whenever a statement wants the connection, until ctx is done or the
// connection fails.
func serve(ctx context.Context, c wake.Conn, deliver func(names []string)) error {
	raw := c.Raw()
	for {
		wctx, stop := c.Idle(ctx, time.Time{})
		payload, err := waitNotification(wctx, raw)
		stop()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && wctx.Err() != nil:
			// A statement interrupted the wait: go on unless the
			// connection broke meanwhile.
			if err := connAlive(raw); err != nil {
				return err
			}
		case err != nil:
			return err
		case payload != probePayload:
			deliver(wake.Names(payload))
		}
	}
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
