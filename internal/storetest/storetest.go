package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// Store is what the suite exercises: the statements of the session, lease
// and pool rows and of the keyed locks' rows, as *store.Store and its
// owners Sessions and LockRows offer them, in four parts.
type Store interface {
	Sessions
	Leases
	Data
	Floored
}

// Sessions is the session rows' part of a store.
type Sessions interface {
	CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error
	RenewSession(ctx context.Context, id string, ttl time.Duration) (ok bool, notice int64, err error)
	ReadSession(ctx context.Context, id string) (store.Session, bool, error)
	EndSession(ctx context.Context, id string, pruneAfter time.Duration) error
}

// Leases is the lease rows' part of a store: creating, taking, giving
// back and reading them, and resign requests.
type Leases interface {
	EnsureRows(ctx context.Context, names []string) error
	Acquire(ctx context.Context, session, holder string, names []string) ([]store.Term, error)
	Release(ctx context.Context, session string, terms []store.Term) (int64, error)
	RequestResign(ctx context.Context, name, prefer string,
		check func(store.Row) (time.Duration, error)) (row store.Row, found, notified bool, err error)
	PendingResigns(ctx context.Context, session string, names []string) ([]store.Term, error)
	Get(ctx context.Context, names []string) ([]store.Row, error)
	List(ctx context.Context, prefix string) ([]store.Row, error)
}

// Data is the rows' data and pool generations' part of a store.
type Data interface {
	SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error)
	Publish(ctx context.Context, name string, from int64, data string) (bool, error)
	PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error)
}

// Floored is the keyed locks' rows' part of a store.
type Floored interface {
	EnsureFloored(ctx context.Context, rows []store.Floored) error
	ReleaseFloored(ctx context.Context, session string, terms []store.FlooredTerm) (int64, error)
	PruneFloored(ctx context.Context, prefix string, floor func(name string) string, grace time.Duration, limit int) (int64, error)
}

// Target is one implementation of the store the suite runs on.
type Target struct {
	// Open returns a new, empty store for one case.
	Open func(t *testing.T) Store
	// Bubble runs one case: nil runs it as it is; the in-process store
	// passes synctest.Test, so the case runs on fake time.
	Bubble func(t *testing.T, f func(t *testing.T))
}

// The TTLs of the cases' sessions: ShortTTL for those a case waits to
// expire, LongTTL for those that must stay live however slow the machine.
// A case still uses a ShortTTL session before it expires (it acquires
// with it, or checks that another session cannot take its lease), a few
// statements after opening it: on a three-node Galera cluster on a busy
// two-core machine those were seen to take more than 1.5 s.
const (
	ShortTTL = 4 * time.Second
	LongTTL  = 10 * time.Minute
)

// waitBound is how long a case waits for an expiry by the store's clock
// before it fails: many times ShortTTL, for a loaded machine.
const waitBound = 30 * time.Second

// Case is one case of the suite.
type Case struct {
	Name string
	Fn   func(t *testing.T, s Store)
}

// Cases returns the cases of the suite.
func Cases() []Case { return cases }

// Run runs every case of the suite on tg, each as a parallel subtest with
// a store of its own.
func Run(t *testing.T, tg Target) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			run := func(t *testing.T) { c.Fn(t, tg.Open(t)) }
			if tg.Bubble != nil {
				tg.Bubble(t, run)
				return
			}
			run(t)
		})
	}
}
