package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// term is what a term loop's work runs under: a lease (Election.Run), an
// assignment (Pool.Run) or a partition (Pool.RunPartitions).
type term interface {
	*Lease | Assignment | Partition
}

// RunOptions tunes the term loop of Election.Run (T is *Lease) and
// Pool.Run (T is Assignment): how failed work is retried, and callbacks
// at the start and the end of each term and at each failure. The zero
// value gives the defaults; Run takes at most one.
//
// The callbacks run one at a time, on the goroutine that calls the work,
// and must return promptly. They are the caller's glue (logs, events,
// status), not work: a panic in one is not recovered.
type RunOptions[T term] struct {
	// Backoff is the wait after the work returned an error or panicked
	// while its term was valid, before it is called again under the same
	// term. It doubles with each consecutive failure, up to MaxBackoff,
	// and starts over after a call that lasted longer than MaxBackoff or
	// one that finished its work. Failures are counted per Run, across
	// its terms, so that work that fails at once in every new term still
	// backs off. For Election.Run it is also the wait before campaigning
	// again after the work finished a term. Defaults to the coordinator's
	// RetryInterval; the wait before campaigning again is then
	// RetryInterval plus up to half of it at random.
	Backoff time.Duration

	// MaxBackoff caps the doubling of Backoff. Must be at least Backoff.
	// Defaults to 30s, or Backoff when that is longer.
	MaxBackoff time.Duration

	// RetryBusy makes Run wait while the election or the pool is busy in
	// this process (a Campaign, TryAcquire, unreleased Lease or other Run
	// of it), instead of returning an error wrapping ErrBusy: each refused
	// attempt is reported as a failure and tried again after the backoff.
	RetryBusy bool

	// OnTermStart is called when a term starts, before the work is first
	// called under it: with the lease for Election.Run, with the
	// assignment for Pool.Run, and with the partition for
	// Pool.RunPartitions, where each partition this member starts working
	// on is a term of its own.
	OnTermStart func(term T)

	// OnTermEnd is called once the work has returned for the last time
	// under a term. For Election.Run the lease has been released by then,
	// and cause says why the term ended: ErrReleased when the work
	// finished (returned nil while the term was valid), the cause of the
	// lease's context when the term ended (ErrLeaseLost, ErrResigned,
	// ErrUnhealthy, ErrClosed, ...), and ErrClosed when Run's context was
	// cancelled. For Pool.Run cause is nil when the work finished its share
	// of the generation (the index idles until the next one), and
	// otherwise the cause of the assignment's context.
	OnTermEnd func(term T, cause error)

	// OnError, when set, is told of each failure instead of the default
	// report, which logs it (with the stack for a panic) and emits
	// EventError: an error or a panic of the work, with retryIn the wait
	// before the next call (0 when the term is over), or, with RetryBusy,
	// a refused attempt, with term the zero T.
	OnError func(term T, err error, retryIn time.Duration)
}

// termLoop is the state of one Election.Run or Pool.Run: its options, with
// the defaults filled in, and the backoff its terms share.
type termLoop[T term] struct {
	c        *shared
	what     string // names the work in messages: "leader work", "pool work"
	opts     RunOptions[T]
	backoff  *workBackoff
	finished time.Duration // the wait after finished work; 0: RetryInterval with jitter
}

// newTermLoop checks opts, at most one, and returns the term loop of one Run.
// Errors wrap ErrInvalidConfig and name the field and its value.
func newTermLoop[T term](c *shared, what string, opts []RunOptions[T]) (*termLoop[T], error) {
	var o RunOptions[T]
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		return nil, fmt.Errorf("%w: %s: Run takes at most one RunOptions, got %d", ErrInvalidConfig, what, len(opts))
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

// work runs fn for the term t (named lease and epoch in reports) under
// the panic policy (term.go), calling OnTermStart first. It reports
// whether fn finished the term's work.
func (r *termLoop[T]) work(ctx context.Context, t T, valid func() bool, lease string, epoch int64, pool string,
	fn func(context.Context) error) bool {
	return r.workWith(ctx, r.backoff, t, valid, fn, func(err error) error {
		return fmt.Errorf("%s for %q epoch %d: %w", r.what, lease, epoch, err)
	}, r.c.log.With(zap.String("lease", lease), zap.Int64("epoch", epoch)), Event{Lease: lease, Pool: pool, Epoch: epoch})
}

// workWith is work with the backoff b, and the default report of a
// failure: wrapped by wrap, logged to log and emitted as an EventError
// like ev.
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

// enter makes the pool key busy in this process (enter) for one Run or
// RunPartitions, waiting while it is busy with RetryBusy. It returns nil
// once entered, or the error to return: ErrBusy without RetryBusy,
// ErrClosed once the coordinator stopped, and errStopped when ctx ended.
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
		if !sleepCtx(ctx, r.busy(key, key, err)) {
			return errStopped
		}
	}
}

// errStopped is termLoop.enter's report that Run's context ended first.
var errStopped = errors.New("coordination: stopped while waiting for a busy pool")

// busy reports a refused attempt of a Run with RetryBusy, and returns the
// wait before the next one. key is the election's lease or the pool's
// key.
func (r *termLoop[T]) busy(key, pool string, err error) time.Duration {
	d := r.backoff.failed(0)
	if r.opts.OnError != nil {
		var zero T
		r.opts.OnError(zero, err, d)
		return d
	}
	r.c.reportFailure(r.c.log.With(zap.String("lease", key)), r.what, err, d, Event{Lease: key, Pool: pool})
	return d
}

// end calls OnTermEnd, if set.
func (r *termLoop[T]) end(t T, cause error) {
	if r.opts.OnTermEnd != nil {
		r.opts.OnTermEnd(t, cause)
	}
}

// termCause says why the term of l ended, before Release overwrites the
// lease context's cause. ctx is Run's; finished reports whether the work
// finished its work for the term.
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
