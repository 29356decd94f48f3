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

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/coordination"
)

// New returns the transport to set as coordination.Config.Notifications:
// it reads notifications off pgx's connections.
func New() coordination.NotificationTransport { return transport{} }

// transport reads notifications through pgx.
type transport struct{}

// errNotPGX is returned when the driver under gorm is not pgx.
var errNotPGX = errors.New("leasehold: listening needs the pgx driver (gorm.io/driver/postgres)")

// WaitForNotification waits on conn for the next notification and returns
// its payload. With ctx done, pgx returns one it holds, or an error,
// without reading the connection.
func (transport) WaitForNotification(ctx context.Context, conn *sql.Conn) (payload string, err error) {
	err = withPGX(conn, func(c *pgx.Conn) error {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		payload = n.Payload
		return nil
	})
	return payload, err
}

// ConnClosed reports whether pgx has closed the connection behind conn.
func (transport) ConnClosed(conn *sql.Conn) bool {
	closed := true
	_ = withPGX(conn, func(c *pgx.Conn) error {
		closed = c.IsClosed()
		return nil
	})
	return closed
}

// withPGX runs fn with the pgx connection behind conn.
func withPGX(conn *sql.Conn, fn func(c *pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(interface{ Conn() *pgx.Conn })
		if !ok {
			return errNotPGX
		}
		return fn(c.Conn())
	})
}
