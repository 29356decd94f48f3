package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// term is what a term loop's work runs under: a lease (Election.Run,
// Semaphore.Run) or an assignment (Pool.Run).
type term interface {
	*Lease | Assignment
}

// RunOptions tunes the term loop of Election.Run and Semaphore.Run (T is
// *Lease) and Pool.Run (T is Assignment). A nil *RunOptions, and the zero
// value, give the defaults; a negative duration, or a MaxBackoff below
// Backoff, makes Run fail with ErrInvalidConfig. The callbacks run one at
// a time, on the goroutine that calls the work, and must return promptly;
// a panic in one is not recovered.
type RunOptions[T term] struct {
	// Backoff is the least wait before failed work (an error or a panic
	// while its term was valid) is called again under the same term, plus
	// up to half of it at random; it doubles per consecutive failure of the
	// Run, up to MaxBackoff, and starts over after a call longer than
	// MaxBackoff or one that finished its work. Election.Run and
	// Semaphore.Run also wait it before campaigning again after a finished
	// term. Defaults to RetryInterval, and that wait to RetryInterval plus
	// up to half of it.
	Backoff time.Duration

	// MaxBackoff caps the doubling of Backoff. Defaults to 30s, or Backoff
	// when that is longer.
	MaxBackoff time.Duration

	// RetryBusy makes Run report each attempt refused with ErrBusy as a
	// failure, and try again after the backoff, rather than return it.
	RetryBusy bool

	// OnTermStart is called when a term starts, before the work is first
	// called under it; for Pool.Run each partition is a term of its own.
	OnTermStart func(term T)

	// OnTermEnd is called once the work has returned for the last time
	// under a term. For Election.Run the lease is released by then, and
	// cause is ErrReleased when the work finished, ErrClosed when Run's
	// context was cancelled, and otherwise the lease context's. For Pool.Run
	// it is nil when the work finished, otherwise the assignment context's.
	OnTermEnd func(term T, cause error)

	// OnError, when set, replaces the default report (a log line, with the
	// stack for a panic, and an EventError) of each failure: of the work,
	// with retryIn the wait before the next call (0 once the term is over),
	// or, with RetryBusy, of a refused attempt, with term the zero T.
	OnError func(term T, err error, retryIn time.Duration)
}

// termLoop is the state of one Run: its options and the backoff its terms
// share.
type termLoop[T term] struct {
	c        *shared
	what     string // names the work in messages: "leader work", "pool work"
	opts     RunOptions[T]
	backoff  *workBackoff
	finished time.Duration // the wait after finished work; 0: RetryInterval with jitter
}

// newTermLoop checks opts, nil for the defaults, and returns the term loop
// of one Run. Errors wrap ErrInvalidConfig and name the field.
func newTermLoop[T term](c *shared, what string, opts *RunOptions[T]) (*termLoop[T], error) {
	var o RunOptions[T]
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Backoff < 0:
		return nil, fmt.Errorf("%w: RunOptions.Backoff (%v) must not be negative", ErrInvalidConfig, o.Backoff)
	case o.MaxBackoff < 0:
		return nil, fmt.Errorf("%w: RunOptions.MaxBackoff (%v) must not be negative", ErrInvalidConfig, o.MaxBackoff)
	case o.MaxBackoff != 0 && o.MaxBackoff < o.Backoff:
		return nil, fmt.Errorf("%w: RunOptions.MaxBackoff (%v) must be at least Backoff (%v)", ErrInvalidConfig, o.MaxBackoff, o.Backoff)
	}
	base := o.Backoff
	if base == 0 {
		base = c.cfg.RetryInterval
	}
	maxWait := o.MaxBackoff
	if maxWait == 0 {
		maxWait = max(maxWorkBackoff, base)
	}
	return &termLoop[T]{c: c, what: what, opts: o, backoff: newBackoff(base, maxWait), finished: o.Backoff}, nil
}

// newBackoff returns a backoff of its own with the loop's settings, for
// work that backs off apart from the loop's other work (a partition).
func (r *termLoop[T]) newBackoff() *workBackoff {
	return newBackoff(r.backoff.policy.Interval, r.backoff.policy.Max)
}

// afterFinished returns the wait before campaigning again after the work
// finished a term.
func (r *termLoop[T]) afterFinished() time.Duration {
	if r.finished > 0 {
		return r.finished
	}
	return jitter(r.c.cfg.RetryInterval)
}

// work runs fn for the term t (lease and epoch name it in reports) by the
// work policy, calling OnTermStart first. It reports whether fn finished
// the term's work.
func (r *termLoop[T]) work(ctx context.Context, t T, valid func() bool, lease string, epoch int64,
	fn func(context.Context) error) bool {
	return r.workWith(ctx, r.backoff, t, valid, fn, func(err error) error {
		return fmt.Errorf("%s for %q epoch %d: %w", r.what, lease, epoch, err)
	}, r.c.log.With(zap.String("lease", lease), zap.Int64("epoch", epoch)), Event{Key: lease, Epoch: epoch})
}

// workWith is work with the backoff b, reporting a failure, unless
// OnError takes it, wrapped by wrap, to log and as an EventError like ev.
func (r *termLoop[T]) workWith(ctx context.Context, b *workBackoff, t T, valid func() bool, fn func(context.Context) error,
	wrap func(error) error, log *zap.Logger, ev Event) bool {
	if r.opts.OnTermStart != nil {
		r.opts.OnTermStart(t)
	}
	return runWork(ctx, valid, fn, workPolicy{
		backoff: b,
		report: func(err error, retryIn time.Duration) {
			if r.opts.OnError != nil {
				r.opts.OnError(t, err, retryIn)
				return
			}
			r.c.reportFailure(log, r.what, wrap(err), retryIn, ev)
		},
		endOfTerm: endOfTerm,
	})
}

// enter makes the pool key busy in this process (enter) for one Run,
// waiting while it is busy with RetryBusy. It returns nil once entered, or
// the error to return: ErrBusy without RetryBusy, ErrClosed once the
// coordinator stopped, and errStopped when ctx ended.
func (r *termLoop[T]) enter(ctx context.Context, key string, enter func() error) error {
	for {
		err := enter()
		if err == nil || !r.opts.RetryBusy {
			return err
		}
		select {
		case <-r.c.closing:
			return ErrClosed
		default:
		}
		if !sleepCtx(ctx, r.busy(key, err)) {
			return errStopped
		}
	}
}

// errStopped is termLoop.enter's report that Run's context ended first.
var errStopped = errors.New("coordination: stopped while waiting for a busy pool")

// busy reports a refused attempt of a Run with RetryBusy (key names what
// it attempted), and returns the wait before the next one.
func (r *termLoop[T]) busy(key string, err error) time.Duration {
	d := r.backoff.failed(0)
	if r.opts.OnError != nil {
		var zero T
		r.opts.OnError(zero, err, d)
		return d
	}
	r.c.reportFailure(r.c.log.With(zap.String("lease", key)), r.what, err, d, Event{Key: key})
	return d
}

// end calls OnTermEnd, if set.
func (r *termLoop[T]) end(t T, cause error) {
	if r.opts.OnTermEnd != nil {
		r.opts.OnTermEnd(t, cause)
	}
}

// termCause says why the term of l ended, before Release overwrites the
// lease context's cause. ctx is Run's.
func termCause(ctx context.Context, l *Lease, finished bool) error {
	if finished {
		return ErrReleased
	}
	if cause := context.Cause(l.Context()); cause != nil {
		return cause
	}
	if ctx.Err() != nil {
		return ErrClosed
	}
	// Valid turned false before the deadline timer cancelled the context.
	return fmt.Errorf("%w: trust deadline passed", ErrLeaseLost)
}
