package coordination

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// The state is the health gate's, under its own lock: unhealthy and
// known for the campaigner, and, for Renewal and the
// leasehold.health.unhealthy gauge, changed (when unhealthy last changed,
// or Run started) and err (the last check's error).

// errUnhealthyNow is what an acquire returns until a health check passed,
// and while the last one failed.
var errUnhealthyNow = fmt.Errorf("%w: no health check has passed yet, or the last one failed; this process does not campaign until one passes",
	ErrUnhealthy)

// healthGate owns the health state: whether this process may campaign,
// and when it steps down. The campaigner and the pool members ask it
// (unhealthyNow); a step-down ends the terms held (termSet.stepDown).
type healthGate struct {
	*shared
	terms  *termSet
	passed func() // wakes the campaign loop when a check passes again

	mu        sync.Mutex
	unhealthy bool      // no health check passed yet, or the last one failed: no campaigning
	known     bool      // a health check has returned
	changed   time.Time // when unhealthy last changed, or when Run started
	err       error     // the last check's error, nil after a pass
}

func newHealthGate(sh *shared, t *termSet) *healthGate {
	return &healthGate{shared: sh, terms: t, unhealthy: sh.cfg.HealthCheck != nil}
}

// start notes the start of Run: with a HealthCheck the process is
// unhealthy from then until a first check passes.
func (h *healthGate) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg.HealthCheck != nil {
		h.changed = time.Now()
	}
}

// unhealthyNow reports whether no health check has passed yet, or the
// last one failed.
func (h *healthGate) unhealthyNow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unhealthy
}

// state fills in what Renewal reports of the health checks.
func (h *healthGate) state(st *RenewalState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st.Unhealthy, st.HealthChanged, st.HealthError = h.unhealthy, h.changed, h.err
}

// healthLoop runs the health checks until ctx is done. It returns at once
// without a HealthCheck.
func (h *healthGate) loop(ctx context.Context) {
	check := h.cfg.HealthCheck
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
			h.log.Debug("the health check that overran has returned", zap.Error(err))
		case <-time.After(h.cfg.ShutdownTimeout):
			h.log.Error("a health check is still running after its context was cancelled; Run does not wait for it any longer",
				zap.Duration("waited", h.cfg.ShutdownTimeout))
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
		running, err = h.runCheck(ctx, check, running)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
		} else {
			failures++
		}
		h.result(err, failures)
		timer.Reset(max(h.cfg.HealthInterval-time.Since(start), 0))
	}
}

// runCheck runs one check, bounded by HealthInterval. running is a
// check that overran earlier: while it has not returned, no other starts,
// and the tick fails. It returns the check still running, if this one
// overran, and the result.
func (h *healthGate) runCheck(ctx context.Context, check func(context.Context) error, running chan error) (chan error, error) {
	if running != nil {
		select {
		case err := <-running: // its overrun counted as a failure already
			h.log.Debug("the health check that overran has returned", zap.Error(err))
		default:
			return running, fmt.Errorf("the health check started earlier, which overran HealthInterval (%v), is still running", h.cfg.HealthInterval)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.HealthInterval)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- h.callHealthCheck(cctx, check)
	}()
	select {
	case err := <-done:
		return nil, err
	case <-cctx.Done():
		select {
		case err := <-done: // returned just as its time ran out
			if err == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("the health check took longer than HealthInterval (%v)", h.cfg.HealthInterval)
			}
			return nil, err
		default:
		}
		return done, fmt.Errorf("the health check did not return within HealthInterval (%v)", h.cfg.HealthInterval)
	}
}

// callHealthCheck calls check under the panic policy of all user
// callbacks (term.go): a panic becomes a *PanicError with its stack,
// reported like a panic of work (logged with the stack, EventError), and
// is the check's failure.
func (h *healthGate) callHealthCheck(ctx context.Context, check func(context.Context) error) error {
	err := protect(func() error { return check(ctx) })
	var pe *PanicError
	if errors.As(err, &pe) {
		err = fmt.Errorf("the health check panicked: %w", err)
		h.reportFailure(h.log, "health check", err, 0, Event{})
	}
	return err
}

// result acts on the result of a check, the failures-th failed one in a
// row (0 after a pass).
func (h *healthGate) result(err error, failures int) {
	h.mu.Lock()
	known := h.known
	h.known = true
	h.err = err
	if err == nil {
		passed := h.unhealthy
		if passed {
			h.unhealthy = false
			h.changed = time.Now()
			if known {
				h.log.Info("health check passed; campaigning again")
			}
		}
		h.mu.Unlock()
		if passed {
			h.passed()
		}
		return
	}
	if !h.unhealthy {
		h.changed = time.Now()
	}
	if !h.unhealthy || !known {
		h.unhealthy = true
		h.log.Warn("health check failed; not campaigning until one passes", zap.Error(err),
			zap.Int("failures", failures), zap.Int("step_down_after", h.cfg.HealthFailures))
	}
	h.mu.Unlock()
	if failures < h.cfg.HealthFailures {
		return
	}
	cause := fmt.Errorf("%w: %d health checks in a row failed, the last with: %w", ErrUnhealthy, failures, err)
	h.terms.stepDown(cause, err, failures, failures == h.cfg.HealthFailures)
}
