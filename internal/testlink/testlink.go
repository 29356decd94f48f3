// Package testlink gives the tests that need a real database, which live
// in a module of their own (tests/, so that the library's module requires
// no database driver), what packages coordination and workers keep to
// themselves, without making it public API. The packages set the
// functions when they are initialised; nothing else calls them.
package testlink

import "time"

// Worker is one worker of a host, as its tests see it.
type Worker struct {
	Name string
	// Done is closed when the worker's goroutine has returned.
	Done <-chan struct{}
}

var (
	// Workers returns the workers of the *workers.Host h, in the order
	// they were given to NewHost.
	Workers func(h any) []Worker

	// WorkerPoolKey returns the key of the coordination pool of the
	// partitioned or sticky worker w (a workers.Worker) of the
	// *workers.Host h.
	WorkerPoolKey func(h, w any) string

	// EncodeSchedule returns the lease data that holds the
	// workers.ScheduleState s: the inverse of workers.DecodeScheduleState.
	EncodeSchedule func(s any) string
)

// Package coordination's, for a *coordination.Coordinator c and a
// *coordination.Lease l.
var (
	// OnRenew installs f as the hook called after every renewal attempt
	// of c, with the number of leases it covered, the number it found
	// lost and its error.
	OnRenew func(c any, f func(terms, lost int, err error))
	// OnRound installs f as the hook called after every campaign round of
	// c, with the number of names it read.
	OnRound func(c any, f func(names int))
	// OnWoken installs f as the hook called after every attempt of c of
	// leases named by a wake-up, with the number it attempted.
	OnWoken func(c any, f func(attempted int))
	// DropWakes makes c drop every wake-up it receives, or stop dropping.
	DropWakes func(c any, drop bool)
	// WakeFor delivers a wake-up for names to c, as its transport does.
	WakeFor func(c any, names []string)
	// Listening reports whether wake-ups arrive at c; ListenChanged
	// receives a value (buffered 1) at each change of that.
	Listening     func(c any) bool
	ListenChanged func(c any) <-chan struct{}
	// Transport returns c's wake-up transport (a wake.Transport), nil
	// where there is none.
	Transport func(c any) any
	// Store returns the store c runs on: a value with the methods of
	// internal/store's Store, Sessions, Schema, Failover and LockRows
	// where c runs on a database.
	Store func(c any) any
	// SessionID returns the id of the session l rides on.
	SessionID func(l any) string
	// AssignmentMember returns the membership lease (a
	// *coordination.Lease) of the member a coordination.Assignment a was
	// given to.
	AssignmentMember func(a any) any
	// EndOfTerm reports whether err is the cause of a term's end rather
	// than the leader work's failure.
	EndOfTerm func(err error) bool
	// ErrLostInFailover is the cause of a term the new primary of a
	// failed-over database does not show.
	ErrLostInFailover error
	// ConfigDefaults returns the coordination.Config cfg with its
	// defaults, as New sets them.
	ConfigDefaults func(cfg any) any
	// LeaseName returns the key of the lease of name in scope (a
	// coordination.Scope) and cluster, or why it is not one.
	LeaseName func(scope any, cluster, name string) (string, error)
	// PoolRowsFor returns the names of the rows of the pool with key.
	PoolRowsFor func(key string) PoolRows
	// Metrics returns the recorders of a renewal and of the trust
	// headroom, on instruments of mp (a metric.MeterProvider).
	Metrics func(mp any) (renewal func(d time.Duration, err error), headroom func(d time.Duration), err error)
)

// PoolRows names the rows of one pool.
type PoolRows struct {
	Prefix     string // every row of the pool starts with it, and no other row does
	Generation string // the generation row
	Members    string // every member row starts with it
	// Member returns the row of the member with the given id; Wake the
	// name of a wake-up for it.
	Member, Wake func(id string) string
}

// Constants of package coordination, set with the functions.
var (
	// DeadMemberGrace is how many TTLs a pool member's row outlives its
	// expiry before a live member prunes it.
	DeadMemberGrace int
	// LockRowPrefix starts the name of every keyed lock's row.
	LockRowPrefix string
	// KeySep separates the parts of a row's name.
	KeySep string
	// LockFloors is the number of floor rows of a lock namespace.
	LockFloors int
)
