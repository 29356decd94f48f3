package coordination

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/backoff"
	"github.com/leasehold/leasehold/internal/store"
)

// migrateTimeout bounds one migration attempt on start, lock wait included.
const migrateTimeout = 30 * time.Second

// Run migrates the schema (unless disabled), then serves elections and
// renews the session of the held leases until ctx is cancelled. It blocks,
// so it composes with errgroup. A database that is unreachable at start or
// later never makes it fail: it retries, and recovers when the database
// returns. It returns an error only for a schema it must not fix
// (ErrSchemaMissing with DisableAutoMigrate), a transaction pooler the
// driver's prepared statements do not survive (ErrInvalidConfig, naming
// the DSN setting that fixes it), or a second call (ErrClosed).
//
// On cancellation, Run cancels every lease context with ErrClosed, stops
// campaigning and keeps renewing until the work under each lease has
// returned and released it, for at most ShutdownTimeout; then it ends the
// session and returns nil.
func (c *Coordinator) Run(ctx context.Context) error {
	if !c.state.CompareAndSwap(int32(stateIdle), int32(stateRunning)) {
		return errAlreadyRunning
	}
	c.keeper.parent = context.WithoutCancel(ctx)
	unregister := c.registerMetrics()
	var loops sync.WaitGroup
	loops.Go(func() { c.terms.loop(ctx, c.ready) })
	<-c.terms.started
	defer func() {
		close(c.terms.stop)
		loops.Wait()
		unregister()
		c.state.Store(int32(stateStopped))
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

	renewing, stopRenewing := context.WithCancel(context.WithoutCancel(ctx))
	keeperDone := make(chan struct{})
	go func() {
		defer close(keeperDone)
		c.keeper.run(renewing)
	}()
	loops.Go(func() { c.wakes.listenLoop(ctx) })

	<-ctx.Done()
	c.beginShutdown()
	abandoned := false
	drain := time.NewTimer(c.cfg.ShutdownTimeout)
	select {
	case <-c.terms.drained:
	case <-drain.C:
		c.terms.call(func(st *termState) { abandoned = st.abandon() })
	}
	drain.Stop()
	stopRenewing()
	<-keeperDone
	c.keeper.end(abandoned)
	c.log.Info("coordinator stopped")
	return nil
}

// prepare brings the schema in place, retrying while the database is
// unreachable.
func (c *Coordinator) prepare(ctx context.Context) error {
	retry := backoff.Retry{Policy: backoff.Policy{Interval: c.cfg.RetryInterval, Max: min(c.cfg.TTL, maxWorkBackoff)}}
	for {
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
			err = probeDatabase(opCtx, c.store, c.log)
		}
		cancel()
		if err == nil {
			if n, lasted := retry.Succeeded(); n > 0 {
				c.log.Info("database ready", zap.Int("failures", n), zap.Duration("after", lasted))
			}
			return nil
		}
		switch {
		case errors.Is(err, store.ErrSchemaMissing):
			c.log.Error("coordination schema missing", zap.Error(err))
			return err
		case errors.Is(err, store.ErrPoolerMode):
			err = fmt.Errorf("%w: %w", ErrInvalidConfig, err)
			c.log.Error("the database connection does not suit the pooler in front of it", zap.Error(err))
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		wait, first := retry.Failed()
		log := c.log.Debug
		if first {
			log = c.log.Warn
		}
		log("database not ready; retrying", zap.Error(err), zap.Duration("retry_in", wait))
		c.events.emit(Event{Kind: EventError, Err: err})
		if !sleepCtx(ctx, wait) {
			return nil
		}
	}
}

// beginShutdown stops campaigning and observing, and cancels every lease
// context.
func (c *Coordinator) beginShutdown() {
	select {
	case <-c.closing:
		return
	default:
	}
	close(c.closing)
	c.terms.call(func(st *termState) { st.shutdown() })
}
