// Package testlink gives the tests that need a real database, which live
// in a module of their own (tests/, so that the library's module requires
// no database driver), what packages coordination and workers keep to
// themselves, without making it public API. The packages set the
// functions when they are initialised; nothing else calls them.
package testlink

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

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

// LeaseStore is every method a coordinator calls on its store: that of a
// database (internal/store's Store and its owners) and the in-process
// store (internal/memstore) have them all. A test that injects faults
// wraps one. Package coordination holds it equal to the store it runs
// on, at compile time.
type LeaseStore interface {
	CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error
	RenewSession(ctx context.Context, id string, ttl time.Duration) (ok bool, notice int64, err error)
	Rebind(ctx context.Context, id string) (terms []store.Term, ok bool, err error)
	ReadSession(ctx context.Context, id string) (store.Session, bool, error)
	EndSession(ctx context.Context, id string, pruneAfter time.Duration) error
	SerializesWriters() bool
	Release(ctx context.Context, session string, terms []store.Term) (int64, error)
	Fence(tx *gorm.DB, name string) (store.Row, bool, error)
	FenceGeneration(tx *gorm.DB, name string) (store.Row, bool, error)
	RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error)
	Get(ctx context.Context, names []string) ([]store.Row, error)
	SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error)
	SetDataIn(tx *gorm.DB, session string, t store.Term, data string) (bool, error)
	EnsureRows(ctx context.Context, names []string) error
	AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) (failed []string, err error)
	List(ctx context.Context, prefix string) ([]store.Row, error)
	Publish(ctx context.Context, name string, from int64, data string) (bool, error)
	PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error)
	RequestResign(ctx context.Context, name, prefer string, check func(store.Row) (time.Duration, error)) (row store.Row, found, notified bool, err error)
	EnsureFloored(ctx context.Context, rows []store.Floored) error
	ReleaseFloored(ctx context.Context, session string, terms []store.FlooredTerm) (int64, error)
	PruneFloored(ctx context.Context, prefix string, floor func(name string) string, grace time.Duration, limit int) (int64, error)
	PendingResigns(ctx context.Context, session string, names []string) ([]store.Term, error)
	Dialect() string
	Migrate(ctx context.Context, lockTimeout time.Duration) ([]int, error)
	CheckSchema(ctx context.Context) error
	ProbeFailover(ctx context.Context) (unsupported, err error)
	Wakeups() wake.Database
}
