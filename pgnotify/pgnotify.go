// Package pgnotify delivers leasehold's wake-ups on PostgreSQL through
// LISTEN/NOTIFY, on the pgx driver that gorm.io/driver/postgres uses,
// instead of the peer wake-ups over UDP that a coordinator uses without
// it: for processes that cannot reach each other over UDP.
//
// Set it in the coordinator's configuration:
//
//	coord, err := coordination.New(db, id, coordination.Config{
//		Notifications: pgnotify.New(),
//	})
//
// A process with it still sends the peer wake-ups, and one without it
// still notifies, so processes with and without it on the same tables
// wake each other. It is a package of its own so that only programs that
// choose it link pgx. On other databases it is ignored.
//
// Each process listens on one connection of its pool, which also carries
// the coordinator's reads and acquires while it listens, so listening
// costs no connection beyond coordination.Config.MaxConnections (which
// must be 2 or more for it). A new listening connection is sent a
// notification from another connection of the pool, and reports listening
// only once that arrives: behind a pooler that breaks LISTEN (PgBouncer in
// transaction mode) listening is given up for good with one warning, and
// the process polls; leave Notifications unset there. It is not tried
// again: each LISTEN would stay on a server connection the pooler hands to
// other clients.
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
// listening connection sends itself.
const listenProbeTimeout = 30 * time.Second

// probePayload is the payload of the probe; it names no lease.
const probePayload = "|leasehold-probe|"

// Listen runs one listening connection until ctx is done or the
// connection fails; up is called once notifications arrive on it.
func (t *listener) Listen(ctx context.Context, deliver func(names []string), up func()) error {
	return t.db.Listen(ctx, func(c wake.Conn) error {
		// A notification to the connection from another one of the pool:
		// serve waits for it before it reports listening. Behind a pooler
		// that does not keep one server connection per client (PgBouncer
		// in transaction mode) it never arrives, and listening is given
		// up. (One the connection sent itself would come back with the
		// NOTIFY's own answer there, as the server it ran on was the one
		// that had run the LISTEN.)
		if err := c.Notify(ctx, probePayload); err != nil {
			return err
		}
		raw := c.Raw()
		c.Share(func() bool { return connAlive(raw) == nil })
		return serve(ctx, c, func() error { return c.Notify(ctx, probePayload) }, deliver, func() error {
			if err := c.Listening(ctx); err != nil {
				return err
			}
			up()
			return nil
		})
	})
}

// Notify wakes the processes listening on the tables for names, through
// the database.
func (t *listener) Notify(ctx context.Context, names []string) error {
	return t.db.Notify(ctx, names)
}

// serve waits for notifications and hands them to deliver, stepping aside
// whenever a statement wants the connection, until ctx is done or the
// connection fails. It calls up once a notification (the probe sent by
// Listen, or any other) has arrived while the connection was idle, and
// fails when none has within listenProbeTimeout.
//
// A notification the driver read with the answer of a statement run on
// the connection shows nothing: behind a transaction pooler the statement
// ran on whichever server connection was free, and the notification came
// from that one's LISTEN, or its NOTIFY, not from this connection's. One
// read while no statement runs can only come from the connection's own
// server session, which a transaction pooler does not keep for an idle
// client. Such notifications are delivered all the same; the probe, when
// it came so, is sent again.
func serve(ctx context.Context, c wake.Conn, probe func() error, deliver func(names []string), up func() error) error {
	raw := c.Raw()
	probeBy := time.Now().Add(listenProbeTimeout)
	probed := false
	for {
		deadline := time.Time{}
		if !probed {
			deadline = probeBy
		}
		wctx, stop := c.Idle(ctx, deadline)
		for _, payload := range buffered(raw) {
			switch {
			case payload != probePayload:
				deliver(wake.Names(payload))
			case !probed:
				if err := probe(); err != nil {
					stop()
					return err
				}
			}
		}
		payload, err := waitNotification(wctx, raw)
		timedOut := errors.Is(wctx.Err(), context.DeadlineExceeded)
		stop()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && timedOut:
			// Final: behind a transaction pooler every LISTEN stays on the
			// server connection it ran on, which the pooler then hands
			// to other clients, notifications and all (PgBouncer warns
			// "got packet 'A' from server when not linked"). Trying again
			// only leaves more of them.
			return wake.Final(fmt.Errorf("no notification arrived within %v of LISTEN (a pooler in transaction mode?); "+
				"not trying again: this process polls; leave coordination.Config.Notifications unset for peer wake-ups", listenProbeTimeout))
		case err != nil && wctx.Err() != nil:
			// A statement interrupted the wait: go on unless the
			// connection broke meanwhile.
			if err := connAlive(raw); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			// Any notification read while no statement ran shows that
			// they arrive.
			if !probed {
				probed = true
				if err := up(); err != nil {
					return err
				}
			}
			if payload != probePayload {
				deliver(wake.Names(payload))
			}
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

// buffered returns the payloads of the notifications the driver has read
// on raw already, with the answers of statements, without waiting.
func buffered(raw *sql.Conn) []string {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var out []string
	_ = withPGX(raw, func(c *pgx.Conn) error {
		for {
			// With a done context it returns what it holds, or nothing
			// and an error, without reading the connection.
			n, _ := c.WaitForNotification(done)
			if n == nil {
				return nil
			}
			out = append(out, n.Payload)
		}
	})
	return out
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
