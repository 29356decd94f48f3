// Package wake carries wake-ups between the processes on one set of
// coordination tables.
//
// A release, and a change to a pool's rows, is announced to the other
// processes, so that a follower attempts at once instead of at its next
// poll. An announcement carries the names of the leases concerned, or
// nothing when they do not fit, which means "any". It is a hint: whoever
// is woken reads the rows and decides from them, as on a poll, so a lost,
// late, duplicated or spurious wake-up only changes when a read happens,
// never what it decides.
//
// A Transport carries them. There are three:
//
//   - through the database (PostgreSQL's LISTEN/NOTIFY): NewListener,
//     this package, which a program on PostgreSQL may choose in
//     coordination.Config with a Driver that reads the notifications off
//     the driver's connection (package pgnotify, the only package that
//     links pgx). The release statement itself notifies, at commit
//     (internal/store); the transport listens on a connection the store
//     lends it (Database.Listen, Conn);
//   - through datagram sockets next to an SQLite file (Socket, this
//     package): the processes sharing a file run on one host;
//   - over UDP between the processes, whatever the database (Peer, this
//     package): each advertises an address and a key in its session rows
//     (Directory), and a release sends an authenticated datagram to the
//     others. It is the transport of every database but SQLite. On
//     PostgreSQL a process sends through both of the others and listens
//     on one (coordination/wake.go), so that processes with and without
//     pgnotify wake each other.
//
// A Transport's Listen returns when listening ends; retrying it, with a
// backoff, is the caller's (coordination/wake.go).
package wake

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// Transport carries wake-ups between the processes on one set of tables.
type Transport interface {
	// Listen delivers the wake-ups of other processes (and of this one)
	// to deliver until ctx is done, and then returns nil; up is called
	// once listening works. It returns the error that ended listening
	// otherwise: one wrapping ErrNoWakeups where there is no way to listen,
	// one marked Final where trying again cannot help, any other to be
	// retried.
	Listen(ctx context.Context, deliver func(names []string), up func()) error
	// Notify wakes the processes listening on the tables for names (nil
	// means any). Where it cannot reach them it does nothing.
	Notify(ctx context.Context, names []string) error
}

// ErrNoWakeups is returned by Listen where there is no way to wake the
// other processes: an SQLite database in memory, and PostgreSQL's LISTEN
// with MaxConnections 1. Followers poll there.
var ErrNoWakeups = errors.New("leasehold: no release notifications on this database; followers poll")

// finalError marks an error after which listening is not tried again.
type finalError struct{ err error }

func (e finalError) Error() string { return e.err.Error() }
func (e finalError) Unwrap() error { return e.err }

// Final marks err as one after which listening is not tried again.
func Final(err error) error { return finalError{err} }

// IsFinal reports whether err was marked by Final.
func IsFinal(err error) bool {
	var f finalError
	return errors.As(err, &f)
}

// Means is how the processes on a database can wake each other.
type Means int

const (
	// None means not through the database nor a shared file: they wake
	// each other over the network (Peer), or followers poll.
	None Means = iota
	// Through means through the database itself (PostgreSQL's NOTIFY):
	// the releases announce themselves, and listening needs a Transport
	// that talks to the driver (pgnotify).
	Through
	// Sockets means datagram sockets next to the database file, which the
	// processes share on one host (SQLite): Socket.
	Sockets
)

// Database is the store's side of the wake-ups (internal/store): what its
// database can do, and what the transports use of it.
type Database interface {
	// Means says how the processes on the database wake each other.
	Means() Means
	// Channel names the wake-ups of the tables, so that two table
	// prefixes never wake each other: the lease table's name.
	Channel() string
	// File reads the path of the database's file (SQLite), "" for a
	// database in memory.
	File(ctx context.Context) (string, error)
	// Notify announces names through the database (PostgreSQL's NOTIFY),
	// as one of the store's general statements.
	Notify(ctx context.Context, names []string) error
	// Listen runs fn with a connection of the caller's pool that listens
	// (LISTEN) to its own probe channel, and to the tables' notifications
	// once Conn.Listening has been called, and returns fn's error. The
	// connection is the transport's until fn returns; it never goes back
	// to the pool. It returns an error wrapping ErrNoWakeups where the
	// store cannot spare a connection for listening.
	Listen(ctx context.Context, fn func(c Conn) error) error
	// OnRelease sets fn to be called with the names of the leases a
	// release freed (except those that wake nobody), and with the name of
	// the wake-up an acknowledgement of a pool member carries, for the
	// transports the statement does not notify by itself (Socket, Peer).
	// It is set before the first release.
	OnRelease(fn func(names []string))
}

// Conn is the connection a transport listens on, lent to it by the store
// (Database.Listen). So that listening costs no connection beyond the
// store's bound, it stands for all of the store's general connection
// slots once shared: the store's general statements then run on it, one
// at a time, each interrupting the transport's wait.
type Conn interface {
	// Raw is the connection, for the driver's own wait for
	// notifications.
	Raw() *sql.Conn
	// Notify sends a notification with payload to the connection's own
	// probe channel (see Listening) from another connection of the pool,
	// never the connection itself:
	// through a pooler that gives each transaction whichever server
	// connection is free (PgBouncer in transaction mode), a notification
	// a connection sends itself comes back with its own statement's
	// answer whether its LISTEN holds or not, while one from elsewhere
	// reaches it only where its LISTEN is kept on the server. Only before
	// Share.
	Notify(ctx context.Context, payload string) error
	// Share lends the connection to the store's general statements, from
	// now until Listen's fn returns; then the store waits for the
	// statements on it to end. alive reports, without a round trip,
	// whether the connection can still carry a statement: a statement
	// that gives up mid-query makes the driver close it, and the store
	// then sends the statements queued behind it to the pool.
	Share(alive func() bool)
	// Idle waits until no statement uses or wants the connection and
	// returns a context for one wait on it, done when ctx is, at deadline
	// unless it is zero, or as soon as a statement wants the connection.
	// stop is called once the wait has returned.
	Idle(ctx context.Context, deadline time.Time) (wctx context.Context, stop func())
	// Listening tells the store that notifications arrive on the
	// connection, before the transport reports that it listens.
	//
	// It subscribes the connection to the tables' notifications, which
	// until then listened to a channel of its own that only Notify sends
	// to, and returns an error when that fails: behind a transaction
	// pooler the first LISTEN stays on a server connection that other
	// clients are given, and it must not be one that every release
	// notifies.
	Listening(ctx context.Context) error
}

// MaxPayload bounds the names one wake-up carries, in bytes: a
// PostgreSQL notification's payload must be shorter than 8000 bytes. A
// longer list is sent as an empty payload, which wakes for anything.
const MaxPayload = 7900

// Payload joins names for a wake-up; "" when they do not fit.
func Payload(names []string) string {
	n := 0
	for _, s := range names {
		n += len(s) + 1
	}
	if n-1 > MaxPayload {
		return ""
	}
	return strings.Join(names, "\n")
}

// Names splits a payload back into names; nil means any.
func Names(payload string) []string {
	if payload == "" {
		return nil
	}
	return strings.Split(payload, "\n")
}
