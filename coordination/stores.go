package coordination

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination/internal/membership"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

// What the coordinator needs from the database, cut by consumer: each
// owner of state holds the slice it uses; store.Backend implements all.

// sessionStore is the session keeper's: the session row, its renewal and
// the check of its terms after a failover of the database.
type sessionStore interface {
	CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error
	RenewSession(ctx context.Context, id string, ttl time.Duration) (ok bool, notice int64, err error)
	Rebind(ctx context.Context, id string) (terms []store.Term, ok bool, err error)
	ReadSession(ctx context.Context, id string) (store.Session, bool, error)
	EndSession(ctx context.Context, id string, pruneAfter time.Duration) error
	SerializesWriters() bool
	Release(ctx context.Context, session string, terms []store.Term) (int64, error)
}

// fenceStore is the fencing check's, inside the caller's transaction: of
// a lease row, and of a pool's generation row.
type fenceStore interface {
	Fence(tx *gorm.DB, name string) (store.Row, bool, error)
	FenceGeneration(tx *gorm.DB, name string) (store.Row, bool, error)
	SerializesWriters() bool
	RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error)
}

// dataStore is the lease data's: a row's data with the database clock, and
// its term-checked writes, alone or in the caller's fenced transaction.
type dataStore interface {
	Get(ctx context.Context, names []string) ([]store.Row, error)
	SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error)
	SetDataIn(tx *gorm.DB, session string, t store.Term, data string) (bool, error)
}

// leaseOps is the campaigner's and the releaser's: reading, creating,
// taking and giving back lease rows.
type leaseOps interface {
	EnsureRows(ctx context.Context, names []string) error
	AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) (failed []string, err error)
	Release(ctx context.Context, session string, terms []store.Term) (int64, error)
	Get(ctx context.Context, names []string) ([]store.Row, error)
	List(ctx context.Context, prefix string) ([]store.Row, error)
}

// flooredStore is the keyed locks': rows deleted when nobody holds them,
// whose epochs continue from a floor row.
type flooredStore interface {
	EnsureFloored(ctx context.Context, rows []store.Floored) error
	ReleaseFloored(ctx context.Context, session string, terms []store.FlooredTerm) (int64, error)
	PruneFloored(ctx context.Context, prefix string, floor func(name string) string, grace time.Duration, limit int) (int64, error)
}

// flooredOps is leaseOps as the campaigner and the releaser use it: lock
// rows are created and released by the floored statements, which keep
// their epochs rising across a delete, every other row by the plain ones.
type flooredOps struct {
	leaseOps
	floored flooredStore
}

// EnsureRows creates the named rows that do not exist yet: lock rows at
// their floor's epoch, the others at 0.
func (f flooredOps) EnsureRows(ctx context.Context, names []string) error {
	var plain []string
	var rows []store.Floored
	for _, n := range names {
		if floor, ok := lockFloor(n); ok {
			rows = append(rows, store.Floored{Name: n, Floor: floor})
		} else {
			plain = append(plain, n)
		}
	}
	if len(plain) > 0 {
		if err := f.leaseOps.EnsureRows(ctx, plain); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		return f.floored.EnsureFloored(ctx, rows)
	}
	return nil
}

// Release gives up the given terms of session: the rows of lock terms
// are deleted, the others kept, unheld.
func (f flooredOps) Release(ctx context.Context, session string, terms []store.Term) (int64, error) {
	var plain []store.Term
	var locks []store.FlooredTerm
	for _, t := range terms {
		if floor, ok := lockFloor(t.Name); ok {
			locks = append(locks, store.FlooredTerm{Term: t, Floor: floor})
		} else {
			plain = append(plain, t)
		}
	}
	var n int64
	if len(plain) > 0 {
		got, err := f.leaseOps.Release(ctx, session, plain)
		if n += got; err != nil {
			return n, err
		}
	}
	if len(locks) > 0 {
		got, err := f.floored.ReleaseFloored(ctx, session, locks)
		n += got
		return n, err
	}
	return n, nil
}

// poolOps is the pool membership protocol's, beside the lease operations
// its membership rides on: the interface the protocol's package declares.
type poolOps = membership.Store

// poolStore is a pool's: the protocol's slice, and the fencing check of
// the pool's generation row.
type poolStore interface {
	poolOps
	FenceGeneration(tx *gorm.DB, name string) (store.Row, bool, error)
}

// resignStore is the resign reader's: the requests for this process's
// terms (the request itself is the Admin's, adminStore).
type resignStore interface {
	PendingResigns(ctx context.Context, session string, names []string) ([]store.Term, error)
}

// schemaStore is start-up's: the schema, and whether failovers of the
// database can be detected.
type schemaStore interface {
	Dialect() string
	Migrate(ctx context.Context, lockTimeout time.Duration) ([]int, error)
	CheckSchema(ctx context.Context) error
	ProbeFailover(ctx context.Context) (unsupported, err error)
	CheckBusyTimeout(ctx context.Context) (advice, err error)
}

// wakeStore is the wake-ups': the store's side of them, and the dialect
// the listen loop names when there is none.
type wakeStore interface {
	Dialect() string
	Wakeups() wake.Database
}

// leaseStore is every slice at once, which New hands out to the owners.
type leaseStore = store.Backend

// The store offers every slice.
var (
	_ sessionStore = leaseStore(nil)
	_ fenceStore   = leaseStore(nil)
	_ dataStore    = leaseStore(nil)
	_ leaseOps     = leaseStore(nil)
	_ flooredStore = leaseStore(nil)
	_ poolStore    = leaseStore(nil)
	_ resignStore  = leaseStore(nil)
	_ schemaStore  = leaseStore(nil)
	_ wakeStore    = leaseStore(nil)
	_ adminStore   = leaseStore(nil)
)
