package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Health-based step-down. One goroutine, started by Run when
// Config.HealthCheck is set, calls the check every HealthInterval. The
// result drives two switches:
//
//   - until a first check passes, and after one failed check, the process
//     is unhealthy: it does not campaign, or stops
//     campaigning (acquireNames refuses, so the campaign loop, TryAcquire
//     and pool joins all stop), but keeps the terms it holds;
//   - after HealthFailures failed checks in a row it steps down: every term
//     it holds ends with ErrUnhealthy and is released once its work has
//     returned. Each further failed check ends any term taken meanwhile
//     (an acquire already under way when the checks began to fail).
//
// A passing check makes it healthy again at once. The loop logs one line
// per transition (unhealthy, stepping down, healthy again), never one per
// check.
//
// The state is the loop's, kept under c.mu: unhealthy and healthKnown
// for the campaign, and, for Renewal and the leasehold.health.unhealthy
// gauge, healthChanged (when unhealthy last changed, or Run started) and
// healthErr (the last check's error).

// errUnhealthyNow is what an acquire returns until a health check passed,
// and while the last one failed.
var errUnhealthyNow = fmt.Errorf("%w: no health check has passed yet, or the last one failed; this process does not campaign until one passes",
	ErrUnhealthy)

// healthStartLocked notes the start of Run: with a HealthCheck the
// process is unhealthy from then until a first check passes. c.mu must be
// held.
func (c *Coordinator) healthStartLocked() {
	if c.cfg.HealthCheck != nil {
		c.healthChanged = time.Now()
	}
}

// isUnhealthy reports whether no health check has passed yet, or the last
// one failed.
func (c *Coordinator) isUnhealthy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unhealthy
}

// healthLoop runs the health checks until ctx is done. It returns at once
// without a HealthCheck.
func (c *Coordinator) healthLoop(ctx context.Context) {
	check := c.cfg.HealthCheck
	if check == nil {
		return
	}
	var running chan error // a check that overran and has not returned yet
	defer func() {
		if running == nil {
			return
		}
		select {
		case err := <-running:
			c.log.Debug("the health check that overran has returned", zap.Error(err))
		case <-time.After(c.cfg.ShutdownTimeout):
			c.log.Error("a health check is still running after its context was cancelled; Run does not wait for it any longer",
				zap.Duration("waited", c.cfg.ShutdownTimeout))
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		var err error
		running, err = c.runHealthCheck(ctx, check, running)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
		} else {
			failures++
		}
		c.healthResult(err, failures)
		timer.Reset(max(c.cfg.HealthInterval-time.Since(start), 0))
	}
}

// runHealthCheck runs one check, bounded by HealthInterval. running is a
// check that overran earlier: while it has not returned, no other starts,
// and the tick fails. It returns the check still running, if this one
// overran, and the result.
func (c *Coordinator) runHealthCheck(ctx context.Context, check func(context.Context) error, running chan error) (chan error, error) {
	if running != nil {
		select {
		case err := <-running: // its overrun counted as a failure already
			c.log.Debug("the health check that overran has returned", zap.Error(err))
		default:
			return running, fmt.Errorf("the health check started earlier, which overran HealthInterval (%v), is still running", c.cfg.HealthInterval)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.HealthInterval)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- c.callHealthCheck(cctx, check)
	}()
	select {
	case err := <-done:
		return nil, err
	case <-cctx.Done():
		select {
		case err := <-done: // returned just as its time ran out
			if err == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("the health check took longer than HealthInterval (%v)", c.cfg.HealthInterval)
			}
			return nil, err
		default:
		}
		return done, fmt.Errorf("the health check did not return within HealthInterval (%v)", c.cfg.HealthInterval)
	}
}

// callHealthCheck calls check under the panic policy of all user
// callbacks (term.go): a panic becomes a *PanicError with its stack,
// reported like a panic of work (logged with the stack, EventError), and
// is the check's failure.
func (c *Coordinator) callHealthCheck(ctx context.Context, check func(context.Context) error) error {
	err := protect(func() error { return check(ctx) })
	var pe *PanicError
	if errors.As(err, &pe) {
		err = fmt.Errorf("the health check panicked: %w", err)
		c.reportFailure(c.log, "health check", err, 0, Event{})
	}
	return err
}

// healthResult acts on the result of a check, the failures-th failed one
// in a row (0 after a pass).
func (c *Coordinator) healthResult(err error, failures int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	known := c.healthKnown
	c.healthKnown = true
	c.healthErr = err
	if err == nil {
		if c.unhealthy {
			c.unhealthy = false
			c.healthChanged = time.Now()
			if known {
				c.log.Info("health check passed; campaigning again")
			}
			c.poke(c.campaignWake)
		}
		return
	}
	if !c.unhealthy {
		c.healthChanged = time.Now()
	}
	if !c.unhealthy || !known {
		c.unhealthy = true
		c.log.Warn("health check failed; not campaigning until one passes", zap.Error(err),
			zap.Int("failures", failures), zap.Int("step_down_after", c.cfg.HealthFailures))
	}
	if failures < c.cfg.HealthFailures {
		return
	}
	cause := fmt.Errorf("%w: %d health checks in a row failed, the last with: %w", ErrUnhealthy, failures, err)
	if failures == c.cfg.HealthFailures {
		c.log.Warn("stepping down: health checks keep failing", zap.Int("failures", failures), zap.Int("leases", len(c.held)),
			zap.Error(err))
		c.events.emit(Event{Kind: EventError, Err: cause})
	}
	for _, l := range c.held {
		c.loseLocked(l, cause, lossUnhealthy)
	}
}
