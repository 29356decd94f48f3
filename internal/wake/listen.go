package wake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Driver reads PostgreSQL's notifications off a connection of the
// driver's (coordination.NotificationTransport; package pgnotify for pgx).
type Driver interface {
	// WaitForNotification returns the payload of the next notification
	// on conn, or the error that ended the wait. With ctx already done it
	// returns one the driver has received, without reading conn, or an
	// error.
	WaitForNotification(ctx context.Context, conn *sql.Conn) (payload string, err error)
	// ConnClosed reports, without a round trip, whether the driver has
	// closed conn.
	ConnClosed(conn *sql.Conn) bool
}

// listenProbeTimeout bounds the wait for the probe notification a new
// listening connection is sent.
const listenProbeTimeout = 30 * time.Second

// probePayload is the payload of the probe; it names no lease.
const probePayload = "|leasehold-probe|"

// NewListener returns the transport that listens through the database
// (Means Through) with drv, on a connection db lends it, and announces
// through db.
func NewListener(db Database, drv Driver) Transport { return &listener{db: db, drv: drv} }

// listener listens on the connection the store lends it.
type listener struct {
	db  Database
	drv Driver
}

// Listen runs one listening connection until ctx is done or the
// connection fails; up is called once notifications arrive on it.
func (t *listener) Listen(ctx context.Context, deliver func(names []string), up func()) error {
	return t.db.Listen(ctx, func(c Conn) error {
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
		c.Share(func() bool { return !t.drv.ConnClosed(raw) })
		return t.serve(ctx, c, func() error { return c.Notify(ctx, probePayload) }, deliver, func() error {
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
func (t *listener) serve(ctx context.Context, c Conn, probe func() error, deliver func(names []string), up func() error) error {
	raw := c.Raw()
	probeBy := time.Now().Add(listenProbeTimeout)
	probed := false
	for {
		deadline := time.Time{}
		if !probed {
			deadline = probeBy
		}
		wctx, stop := c.Idle(ctx, deadline)
		for _, payload := range t.buffered(raw) {
			switch {
			case payload != probePayload:
				deliver(Names(payload))
			case !probed:
				if err := probe(); err != nil {
					stop()
					return err
				}
			}
		}
		payload, err := t.drv.WaitForNotification(wctx, raw)
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
			return Final(fmt.Errorf("no notification arrived within %v of LISTEN (a pooler in transaction mode?); "+
				"not trying again: this process polls; leave coordination.Config.Notifications unset for peer wake-ups", listenProbeTimeout))
		case err != nil && wctx.Err() != nil:
			// A statement interrupted the wait: go on unless the
			// connection broke meanwhile.
			if t.drv.ConnClosed(raw) {
				return errors.New("leasehold: the listening connection closed")
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
				deliver(Names(payload))
			}
		}
	}
}

// buffered returns the payloads of the notifications the driver read
// with the answers of statements run on raw, without reading it.
func (t *listener) buffered(raw *sql.Conn) []string {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var out []string
	for {
		payload, err := t.drv.WaitForNotification(done, raw)
		if err != nil {
			return out
		}
		out = append(out, payload)
	}
}
