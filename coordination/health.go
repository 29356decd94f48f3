package coordination

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Health-based step-down (Config.HealthCheck): the loop starts each check
// in a goroutine of its own, bounded by HealthInterval, and logs one line
// per transition between healthy and unhealthy.

// errUnhealthyNow is what an acquire returns until a health check passed,
// and while the last one failed.
var errUnhealthyNow = fmt.Errorf("%w: no health check has passed yet, or the last one failed; this process does not campaign until one passes",
	ErrUnhealthy)

// healthView is the health state as other goroutines read it: the loop
// writes a new snapshot at each change.
type healthView struct {
	p atomic.Pointer[healthSnapshot]
}

type healthSnapshot struct {
	unhealthy bool
	changed   time.Time
	err       error
}

func (v *healthView) init(unhealthy bool) { v.p.Store(&healthSnapshot{unhealthy: unhealthy}) }

// unhealthy reports whether no health check has passed yet, or the last
// one failed.
func (v *healthView) unhealthy() bool { return v.p.Load().unhealthy }

// state fills in what Renewal reports of the health checks.
func (v *healthView) state(st *RenewalState) {
	h := v.p.Load()
	st.Unhealthy, st.HealthChanged, st.HealthError = h.unhealthy, h.changed, h.err
}

// healthState is the loop's state of the health checks.
type healthState struct {
	check     func(context.Context) error
	unhealthy bool
	known     bool // a check has returned
	changed   time.Time
	err       error
	failures  int

	tick    alarm     // the next check
	overrun alarm     // the running check's HealthInterval
	began   time.Time // when the running or last check began
	running chan error
	overran bool // the running check overran and was counted as failed
}

func (h *healthState) init(cfg Config) {
	h.check = cfg.HealthCheck
	h.unhealthy = cfg.HealthCheck != nil
}

// begin notes the start of Run: unhealthy from then until a check passes.
func (h *healthState) begin(st *termState) {
	if h.check != nil {
		h.changed = time.Now()
		st.publishHealth()
	}
}

// start starts the checks once Run is ready.
func (h *healthState) start() {
	if h.check != nil {
		h.tick.arm(0)
	}
}

// stop waits for a running check, at most ShutdownTimeout.
func (h *healthState) stop(t *termSet) {
	if h.running == nil {
		return
	}
	select {
	case err := <-h.running:
		t.log.Debug("the health check still running at shutdown has returned", zap.Error(err))
	case <-time.After(t.cfg.ShutdownTimeout):
		t.log.Error("a health check is still running after its context was cancelled; Run does not wait for it any longer",
			zap.Duration("waited", t.cfg.ShutdownTimeout))
	}
}

func (st *termState) publishHealth() {
	h := &st.healthSt
	st.t.health.p.Store(&healthSnapshot{unhealthy: h.unhealthy, changed: h.changed, err: h.err})
}

// healthTick starts a check, unless one that overran is still running:
// then the tick fails.
func (st *termState) healthTick() {
	h, t := &st.healthSt, st.t
	h.began = time.Now()
	if h.running != nil {
		st.healthResult(fmt.Errorf("the health check started earlier, which overran HealthInterval (%v), is still running", t.cfg.HealthInterval))
		return
	}
	done := make(chan error, 1)
	h.running, h.overran = done, false
	h.overrun.arm(t.cfg.HealthInterval)
	ctx := st.ctx
	go func() {
		cctx, cancel := context.WithTimeout(ctx, t.cfg.HealthInterval)
		err := t.callHealthCheck(cctx, h.check)
		if err == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("the health check took longer than HealthInterval (%v)", t.cfg.HealthInterval)
		}
		cancel()
		done <- err
		t.call(func(st *termState) { st.healthDone(done) })
	}()
}

// healthDone takes the result of the check that returned on done.
func (st *termState) healthDone(done chan error) {
	h := &st.healthSt
	if h.running != done {
		return
	}
	err := <-done
	h.running = nil
	if h.overran {
		st.t.log.Debug("the health check that overran has returned", zap.Error(err))
		return
	}
	h.overrun.disarm()
	st.healthResult(err)
}

// healthOverran fails the tick of a check still running at HealthInterval.
func (st *termState) healthOverran() {
	h := &st.healthSt
	if h.running == nil {
		return
	}
	h.overran = true
	st.healthResult(fmt.Errorf("the health check did not return within HealthInterval (%v)", st.t.cfg.HealthInterval))
}

// callHealthCheck calls check; a panic becomes a *PanicError, reported
// like a panic of work, and is the check's failure.
func (t *termSet) callHealthCheck(ctx context.Context, check func(context.Context) error) error {
	err := protect(func() error { return check(ctx) })
	var pe *PanicError
	if errors.As(err, &pe) {
		err = fmt.Errorf("the health check panicked: %w", err)
		t.reportFailure(t.log, "health check", err, 0, Event{})
	}
	return err
}

// healthResult acts on the result of a check, and schedules the next.
func (st *termState) healthResult(err error) {
	h, t := &st.healthSt, st.t
	if st.ctx.Err() != nil {
		return
	}
	h.tick.arm(max(t.cfg.HealthInterval-time.Since(h.began), 0))
	known := h.known
	h.known, h.err = true, err
	defer st.publishHealth()
	if err == nil {
		h.failures = 0
		if h.unhealthy {
			h.unhealthy, h.changed = false, time.Now()
			if known {
				t.log.Info("health check passed; campaigning again")
			}
			st.wakeRound()
		}
		return
	}
	h.failures++
	if !h.unhealthy {
		h.changed = time.Now()
	}
	if !h.unhealthy || !known {
		h.unhealthy = true
		t.log.Warn("health check failed; not campaigning until one passes", zap.Error(err),
			zap.Int("failures", h.failures), zap.Int("step_down_after", t.cfg.HealthFailures))
	}
	if h.failures < t.cfg.HealthFailures {
		return
	}
	cause := fmt.Errorf("%w: %d health checks in a row failed, the last with: %w", ErrUnhealthy, h.failures, err)
	if h.failures == t.cfg.HealthFailures {
		t.log.Warn("stepping down: health checks keep failing", zap.Int("failures", h.failures), zap.Int("leases", len(st.held)),
			zap.Error(err))
		t.events.emit(Event{Kind: EventError, Err: cause})
	}
	for _, tm := range st.held {
		st.lose(tm, cause, lossUnhealthy)
	}
}
