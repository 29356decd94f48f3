package coordination

import (
	"context"
	"errors"
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
	c.mu.Unlock()
	c.terms.start(context.WithoutCancel(ctx))
	c.health.start()
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
	wg.Go(func() { c.campaigner.loop(ctx) })
	wg.Go(func() { c.resigns.loop(ctx) })
	wg.Go(func() { c.health.loop(ctx) })
	wg.Go(func() { c.wakes.listenLoop(ctx) })
	abandoned := c.keeper.renewLoop(ctx, c.beginShutdown)
	wg.Wait()
	c.keeper.end(abandoned)
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
			err = probeFailover(opCtx, c.store, c.log)
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
	if c.closingNow() {
		c.mu.Unlock()
		return
	}
	close(c.closing)
	c.mu.Unlock()
	c.campaigner.closeAll()
	c.terms.cancelAll()
}
