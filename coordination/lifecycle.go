package coordination

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// migrateTimeout bounds one migration attempt on start, lock wait included.
const migrateTimeout = 30 * time.Second

// Run migrates the schema (unless disabled), then serves elections and
// renews the session of the held leases until ctx is cancelled. It blocks,
// so it composes with errgroup.
//
// A database that is unreachable at start or later never makes Run fail:
// it logs, retries with backoff and recovers when the database returns.
// Run returns an error only for a schema it must not fix (ErrSchemaMissing
// with DisableAutoMigrate) or when called twice.
//
// On cancellation, Run cancels every lease context, stops campaigning and
// keeps renewing until the work under each lease has returned and released
// it, for at most ShutdownTimeout. The releases of all leases go out
// together, in as few statements as their number allows. Then Run ends the
// session and returns nil.
func (c *Coordinator) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.state != stateIdle {
		c.mu.Unlock()
		return ErrAlreadyRunning
	}
	c.state = stateRunning
	c.leaseParent = context.WithoutCancel(ctx)
	c.healthStartLocked()
	c.mu.Unlock()
	unregister := c.registerMetrics()
	defer func() {
		unregister()
		c.mu.Lock()
		c.state = stateStopped
		c.mu.Unlock()
		c.events.close()
		close(c.done)
	}()

	if err := c.prepare(ctx); err != nil {
		c.beginShutdown()
		return err
	}
	if ctx.Err() != nil {
		c.beginShutdown()
		return nil
	}
	c.log.Info("coordinator running", zap.String("dialect", c.store.Dialect()),
		zap.Duration("ttl", c.cfg.TTL), zap.Duration("renew_interval", c.cfg.RenewInterval),
		zap.Duration("retry_interval", c.cfg.RetryInterval), zap.Duration("margin", c.cfg.Margin),
		zap.Int("max_connections", c.cfg.MaxConnections))
	close(c.ready)

	var wg sync.WaitGroup
	wg.Go(func() { c.campaignLoop(ctx) })
	wg.Go(func() { c.resignLoop(ctx) })
	wg.Go(func() { c.healthLoop(ctx) })
	wg.Go(func() { c.listenLoop(ctx) })
	abandoned := c.renewLoop(ctx)
	wg.Wait()
	c.endSession(abandoned)
	c.log.Info("coordinator stopped")
	return nil
}

// prepare brings the schema in place, retrying while the database is
// unreachable.
func (c *Coordinator) prepare(ctx context.Context) error {
	for failures := 1; ; failures++ {
		opCtx, cancel := context.WithTimeout(ctx, migrateTimeout)
		var err error
		if c.cfg.DisableAutoMigrate {
			err = c.store.CheckSchema(opCtx)
		} else {
			var applied []int
			applied, err = c.store.Migrate(opCtx, migrateTimeout)
			if len(applied) > 0 {
				c.log.Info("migrated coordination schema", zap.Ints("versions", applied))
			}
		}
		if err == nil {
			err = c.probeFailover(opCtx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, store.ErrSchemaMissing) {
			c.log.Error("coordination schema missing", zap.Error(err))
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := c.cfg.backoff(failures)
		c.log.Warn("database not ready; retrying", zap.Error(err), zap.Duration("retry_in", wait))
		c.events.emit(Event{Kind: EventError, Err: err})
		if !sleepCtx(ctx, wait) {
			return nil
		}
	}
}

// beginShutdown stops campaigning and observing, and cancels every lease
// context.
func (c *Coordinator) beginShutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closingNow() {
		return
	}
	close(c.closing)
	clear(c.campaigns)
	for _, e := range c.observed {
		for _, o := range e.observers {
			o.closeLocked()
		}
		e.observers = nil
	}
	clear(c.observed)
	for _, l := range c.held {
		l.cancel(ErrClosed)
	}
}

// heldCount counts the leases still to be renewed or being released:
// the drain ends when it reaches zero.
func (c *Coordinator) heldCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held) + c.releasing
}

// abandon gives up on terms whose work did not return within the
// shutdown timeout. They are not released: the work may still be acting.
// It reports whether there were any.
func (c *Coordinator) abandon() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	abandoned := len(c.held) > 0
	for _, l := range c.held {
		err := fmt.Errorf("%w: leader work did not return within ShutdownTimeout (%v); the lease is not released and expires after TTL (%v)",
			ErrClosed, c.cfg.ShutdownTimeout, c.cfg.TTL)
		c.log.Error("leader work still running at shutdown timeout", zap.String("lease", l.name),
			zap.Int64("epoch", l.epoch), zap.Error(err))
		l.state = stateLost
		delete(c.held, l.name)
		c.metrics.lost(lossShutdownTimeout)
		c.events.emit(Event{Kind: EventLost, Lease: l.name, Holder: c.holder, Epoch: l.epoch, Err: err})
	}
	return abandoned
}

// endSession deletes the session row once Run is done with it, so that it
// does not linger until it expires. A session under which work was
// abandoned is left to expire after TTL instead: deleting it would free
// leases that work may still act under.
func (c *Coordinator) endSession(abandoned bool) {
	c.mu.Lock()
	s := c.sess
	c.sess = nil
	if s != nil {
		s.lose()
	}
	c.mu.Unlock()
	if s == nil || abandoned {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
	defer cancel()
	if err := c.store.EndSession(ctx, s.id, c.cfg.sessionPrune()); err != nil {
		c.log.Warn("could not delete the session row; it expires after TTL", zap.String("session", s.id), zap.Error(err))
	}
}
