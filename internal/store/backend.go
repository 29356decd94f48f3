package store

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/wake"
)

// Backend is every statement a coordinator runs: a Store's on a database
// (with its owners, Sessions, Schema, Failover and LockRows), or the
// in-process database's of the test kit (internal/memstore).
type Backend interface {
	CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error
	RenewSession(ctx context.Context, id string, ttl time.Duration) (ok bool, notice int64, err error)
	Rebind(ctx context.Context, id string) (terms []Term, ok bool, err error)
	ReadSession(ctx context.Context, id string) (Session, bool, error)
	EndSession(ctx context.Context, id string, pruneAfter time.Duration) error
	ListSessions(ctx context.Context) ([]SessionRow, error)
	SerializesWriters() bool
	RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error)

	EnsureRows(ctx context.Context, names []string) error
	AcquireEach(ctx context.Context, session, holder string, names []string, took func([]Term)) (failed []string, err error)
	Release(ctx context.Context, session string, terms []Term) (int64, error)
	Get(ctx context.Context, names []string) ([]Row, error)
	List(ctx context.Context, prefix string) ([]Row, error)
	Fence(tx *gorm.DB, name string) (Row, bool, error)
	FenceGeneration(tx *gorm.DB, name string) (Row, bool, error)
	SetData(ctx context.Context, session string, t Term, data, wake string) (bool, error)
	SetDataIn(tx *gorm.DB, session string, t Term, data string) (bool, error)
	Publish(ctx context.Context, name string, from int64, data string) (bool, error)
	PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error)
	RequestResign(ctx context.Context, name, prefer string, check func(Row) (time.Duration, error)) (row Row, found, notified bool, err error)
	PendingResigns(ctx context.Context, session string, names []string) ([]Term, error)

	EnsureFloored(ctx context.Context, rows []Floored) error
	ReleaseFloored(ctx context.Context, session string, terms []FlooredTerm) (int64, error)
	PruneFloored(ctx context.Context, prefix string, floor func(name string) string, grace time.Duration, limit int) (int64, error)

	Dialect() string
	Migrate(ctx context.Context, lockTimeout time.Duration) ([]int, error)
	CheckSchema(ctx context.Context) error
	ProbeFailover(ctx context.Context) (unsupported, err error)
	CheckBusyTimeout(ctx context.Context) (advice, err error)
	Wakeups() wake.Database
}

// Embedded is a gorm dialector that brings its own Backend instead of SQL:
// the in-process database of the test kit (package leaseholdtest). Open
// returns it for a handle opened on one.
type Embedded interface {
	gorm.Dialector
	Backend() Backend
}

// owners is a Store with the owners it is made of, which together offer
// every method of Backend.
type owners struct {
	*Store
	*Sessions
	*Schema
	*Failover
	*LockRows
}

// Open returns the Backend of the database behind db: a Store with its
// owners, or the Backend of an Embedded dialector.
func Open(db *gorm.DB, o Options) (Backend, error) {
	if db != nil {
		if e, ok := db.Dialector.(Embedded); ok {
			return e.Backend(), nil
		}
	}
	st, err := New(db, o)
	if err != nil {
		return nil, err
	}
	return owners{Store: st, Sessions: st.Sessions(), Schema: st.Schema(), Failover: st.Failover(), LockRows: st.LockRows()}, nil
}
