package coordination

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// Wake-ups make a graceful handoff immediate. A release, and a change to
// a pool's rows, is announced to the other processes on the same tables
// (PostgreSQL: NOTIFY, sent by the release statement itself and received
// on one listening connection per process, within MaxConnections;
// SQLite: datagram sockets next to the database file). A process woken
// for a lease it campaigns for attempts it at once (acquireWoken), one
// woken for a lease it only observes runs a campaign round, and one woken
// for a pool it runs reads the pool at once. Nothing else changes: the
// acquire statement, or the round's read, decides as on a poll, so a lost
// or spurious wake-up only moves an attempt, and polling every
// RetryInterval (a pool's PollInterval) goes on regardless.

// listenLoop listens for wake-ups until ctx is done.
func (c *Coordinator) listenLoop(ctx context.Context) {
	if c.cfg.DisableNotifications {
		return
	}
	failed := false
	err := c.store.Listen(ctx, c.cfg.RetryInterval, c.wakeFor, func(err error) {
		defer c.poke(c.listenChanged)
		if err == nil {
			c.listening.Store(true)
			c.log.Info("listening for release notifications: followers take over a released lease at once")
			failed = false
			return
		}
		c.listening.Store(false)
		if failed {
			c.log.Debug("release notifications still unavailable", zap.Error(err))
			return
		}
		failed = true
		c.log.Warn("release notifications unavailable; followers poll every RetryInterval until they work again",
			zap.Duration("retry_interval", c.cfg.RetryInterval), zap.Error(err))
	})
	c.listening.Store(false)
	if errors.Is(err, store.ErrNoWakeups) {
		c.log.Info("no release notifications; followers poll every RetryInterval",
			zap.String("dialect", c.store.Dialect()), zap.Duration("retry_interval", c.cfg.RetryInterval), zap.Error(err))
	} else if err != nil {
		c.log.Warn("release notifications unavailable; followers poll every RetryInterval", zap.Error(err))
	}
	c.poke(c.listenChanged)
}

// wakeFor hands a wake-up to the loops concerned: the campaign loop
// attempts the named leases it campaigns for at once, and runs a round
// for those only observed; each pool whose rows are named reads them;
// every loop runs a full round when names is nil.
func (c *Coordinator) wakeFor(names []string) {
	if c.dropWakes.Load() {
		return
	}
	c.mu.Lock()
	round, woken := names == nil, false
	var pools []*Pool
	if names == nil {
		for _, p := range c.pools {
			pools = append(pools, p)
		}
	}
	for _, n := range names {
		switch {
		case c.campaigns[n] != nil:
			// Attempted at once, without a read (acquireWoken).
			c.woken[n] = struct{}{}
			woken = true
		case c.observed[n] != nil:
			round = true // its observers get the read
		}
		if key, ok := poolKeyOf(n); ok {
			if p := c.pools[key]; p != nil {
				pools = append(pools, p)
			}
		}
	}
	if woken {
		c.wokenAt = time.Now()
	}
	c.mu.Unlock()
	if woken {
		c.poke(c.wokenWake)
	}
	if round {
		c.poke(c.campaignWake)
	}
	for _, p := range pools {
		c.poke(p.wake)
	}
}

// notify announces a change to the named rows (a pool's) to the other
// processes. It is a hint: a failure is only logged.
func (c *Coordinator) notify(ctx context.Context, names ...string) {
	if c.cfg.DisableNotifications {
		return
	}
	if err := c.store.Notify(ctx, names); err != nil && ctx.Err() == nil {
		c.log.Debug("could not send a wake-up; the others notice at their next poll", zap.Strings("leases", names), zap.Error(err))
	}
}
