package memstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// ErrCut is what every statement of a cut connection returns.
var ErrCut = errors.New("memstore: connection cut")

// Conn is one process's connection to the store: every method of the
// Store, through faults of this connection alone. Cut makes its
// statements fail, as a lost connection; Stall holds them until resumed,
// as a process stopped (SIGSTOP) or a network that stopped answering.
// Other connections to the same Store are not affected. It is safe for
// concurrent use.
type Conn struct {
	*Store
	*faults
}

// faults are the faults of one connection: Cut, Restore and Stall, which
// Conn offers, and the check every statement makes before it runs.
type faults struct {
	mu    sync.Mutex
	err   error         // set while cut
	stall chan struct{} // closed when a stall ends; nil when none
}

// Conn returns a new connection to m, with no fault.
func (m *Store) Conn() *Conn { return &Conn{Store: m, faults: &faults{}} }

// Cut makes every statement of c that begins from now on fail with ErrCut
// until Restore. A statement stalled (Stall) fails once it resumes.
func (c *faults) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = ErrCut
}

// Restore ends a Cut.
func (c *faults) Restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = nil
}

// Stall holds every statement of c that begins from now on until resume
// is called (or the statement's context ends); then they, and later ones,
// run. resume may be called more than once.
func (c *faults) Stall() (resume func()) {
	gate := make(chan struct{})
	c.mu.Lock()
	c.stall = gate
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.stall == gate {
				c.stall = nil
			}
			c.mu.Unlock()
			close(gate)
		})
	}
}

// enter waits out a stall and reports a cut: every statement of c calls
// it before it runs.
func (c *faults) enter(ctx context.Context) error {
	c.mu.Lock()
	gate := c.stall
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// txContext is the context of the caller's transaction.
func txContext(tx *gorm.DB) context.Context {
	if tx != nil && tx.Statement != nil && tx.Statement.Context != nil {
		return tx.Statement.Context
	}
	return context.Background()
}

// CreateSession is Store.CreateSession through the connection's faults.
func (c *Conn) CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	return c.Store.CreateSession(ctx, id, holder, ttl)
}

// ProbeFailover is Store.ProbeFailover through the connection's faults.
func (c *Conn) ProbeFailover(ctx context.Context) (unsupported, err error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.Store.ProbeFailover(ctx)
}

// Rebind is Store.Rebind through the connection's faults.
func (c *Conn) Rebind(ctx context.Context, id string) ([]store.Term, bool, error) {
	if err := c.enter(ctx); err != nil {
		return nil, false, err
	}
	return c.Store.Rebind(ctx, id)
}

// RenewSession is Store.RenewSession through the connection's faults.
func (c *Conn) RenewSession(ctx context.Context, id string, ttl time.Duration) (bool, int64, error) {
	if err := c.enter(ctx); err != nil {
		return false, 0, err
	}
	return c.Store.RenewSession(ctx, id, ttl)
}

// RequestResign is Store.RequestResign through the connection's faults.
func (c *Conn) RequestResign(ctx context.Context, name, prefer string,
	check func(store.Row) (time.Duration, error)) (store.Row, bool, bool, error) {
	if err := c.enter(ctx); err != nil {
		return store.Row{}, false, false, err
	}
	return c.Store.RequestResign(ctx, name, prefer, check)
}

// PendingResigns is Store.PendingResigns through the connection's faults.
func (c *Conn) PendingResigns(ctx context.Context, session string, names []string) ([]store.Term, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.Store.PendingResigns(ctx, session, names)
}

// RenewSessionIn is Store.RenewSessionIn through the connection's faults.
func (c *Conn) RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (bool, int64, error) {
	if err := c.enter(txContext(tx)); err != nil {
		return false, 0, err
	}
	return c.Store.RenewSessionIn(tx, id, ttl)
}

// ReadSession is Store.ReadSession through the connection's faults.
func (c *Conn) ReadSession(ctx context.Context, id string) (store.Session, bool, error) {
	if err := c.enter(ctx); err != nil {
		return store.Session{}, false, err
	}
	return c.Store.ReadSession(ctx, id)
}

// EndSession is Store.EndSession through the connection's faults.
func (c *Conn) EndSession(ctx context.Context, id string, pruneAfter time.Duration) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	return c.Store.EndSession(ctx, id, pruneAfter)
}

// EnsureRows is Store.EnsureRows through the connection's faults.
func (c *Conn) EnsureRows(ctx context.Context, names []string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	return c.Store.EnsureRows(ctx, names)
}

// Acquire is Store.Acquire through the connection's faults.
func (c *Conn) Acquire(ctx context.Context, session, holder string, names []string) ([]store.Term, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.Store.Acquire(ctx, session, holder, names)
}

// AcquireEach is Store.AcquireEach through the connection's faults.
func (c *Conn) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) ([]string, error) {
	if err := c.enter(ctx); err != nil {
		return names, err
	}
	return c.Store.AcquireEach(ctx, session, holder, names, took)
}

// Release is Store.Release through the connection's faults.
func (c *Conn) Release(ctx context.Context, session string, terms []store.Term) (int64, error) {
	if err := c.enter(ctx); err != nil {
		return 0, err
	}
	return c.Store.Release(ctx, session, terms)
}

// Get is Store.Get through the connection's faults.
func (c *Conn) Get(ctx context.Context, names []string) ([]store.Row, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.Store.Get(ctx, names)
}

// List is Store.List through the connection's faults.
func (c *Conn) List(ctx context.Context, prefix string) ([]store.Row, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.Store.List(ctx, prefix)
}

// Fence is Store.Fence through the connection's faults.
func (c *Conn) Fence(tx *gorm.DB, name string) (store.Row, bool, error) {
	if err := c.enter(txContext(tx)); err != nil {
		return store.Row{}, false, err
	}
	return c.Store.Fence(tx, name)
}

// FenceGeneration is Store.FenceGeneration through the connection's
// faults.
func (c *Conn) FenceGeneration(tx *gorm.DB, name string) (store.Row, bool, error) {
	if err := c.enter(txContext(tx)); err != nil {
		return store.Row{}, false, err
	}
	return c.Store.FenceGeneration(tx, name)
}

// SetData is Store.SetData through the connection's faults.
func (c *Conn) SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error) {
	if err := c.enter(ctx); err != nil {
		return false, err
	}
	return c.Store.SetData(ctx, session, t, data, wake)
}

// Publish is Store.Publish through the connection's faults.
func (c *Conn) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	if err := c.enter(ctx); err != nil {
		return false, err
	}
	return c.Store.Publish(ctx, name, from, data)
}

// PruneDead is Store.PruneDead through the connection's faults.
func (c *Conn) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	if err := c.enter(ctx); err != nil {
		return 0, err
	}
	return c.Store.PruneDead(ctx, prefix, grace)
}

// Migrate is Store.Migrate through the connection's faults.
func (c *Conn) Migrate(ctx context.Context, lockTimeout time.Duration) ([]int, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.Store.Migrate(ctx, lockTimeout)
}

// CheckSchema is Store.CheckSchema through the connection's faults.
func (c *Conn) CheckSchema(ctx context.Context) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	return c.Store.CheckSchema(ctx)
}
