package coordination

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/backoff"
	"github.com/leasehold/leasehold/internal/ctxtime"
)

// The work of a term (Election.Run, Semaphore.Run, Pool.Run, and the
// workers on them) runs under one policy (runWork): under a context that
// ends with the term; a panic becomes a *PanicError; while the term is
// valid, an error or a panic is reported and the work is called again
// after a backoff, and a nil return ends the term's work; once the term is
// over, what the work returns is reported only when it is a panic or an
// error other than the term's end (endOfTerm).

// ErrPanicked is wrapped by every *PanicError.
var ErrPanicked = errors.New("leasehold: work function panicked")

// PanicError is what a panic in a user callback becomes (the work of
// Election.Run, Semaphore.Run, Pool.Run and the workers package, and the
// health check): recovered, logged with its stack and reported as a
// failure of the work (RunOptions) or of the check.
type PanicError struct {
	// Value is what the function passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// formats it.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%s: %v", ErrPanicked.Error(), e.Value)
}

// Unwrap makes errors.Is(err, ErrPanicked) true, and errors.Is and
// errors.As see the panic value when it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrPanicked, err}
	}
	return []error{ErrPanicked}
}

// protect calls fn and turns a panic into a *PanicError.
func protect(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// maxWorkBackoff caps the doubling wait before failed leader or pool work
// is called again under the same term, unless RunOptions says otherwise.
const maxWorkBackoff = 30 * time.Second

// workBackoff counts consecutive failures of one work function and says
// how long to wait before calling it again, by the one retry policy.
type workBackoff struct {
	policy   backoff.Policy
	failures int
}

// newBackoff returns a backoff that waits at least base after a failure,
// doubling per consecutive failure up to max.
func newBackoff(base, max time.Duration) *workBackoff {
	return &workBackoff{policy: backoff.Policy{Interval: base, Max: max}}
}

// failed records a failure of a run that lasted ran and returns the wait
// before the next call. A run longer than the cap was healthy for a while,
// so the count starts over.
func (b *workBackoff) failed(ran time.Duration) time.Duration {
	if ran > b.policy.Max {
		b.failures = 0
	}
	b.failures++
	return b.policy.Wait(b.failures)
}

// succeeded records a run that finished its work: the count starts over.
func (b *workBackoff) succeeded() { b.failures = 0 }

// workPolicy is how runWork retries and reports.
type workPolicy struct {
	// backoff is shared by the terms of one Run, so that a function that
	// fails at once in every new term still backs off.
	backoff *workBackoff
	// report is told of an error or panic; retryIn is 0 when the term is
	// over.
	report func(err error, retryIn time.Duration)
	// endOfTerm reports whether an error returned after the term ended is
	// just that end; nil reports every error.
	endOfTerm func(error) bool
}

// runWork calls fn with work until the term ends, by the policy above.
// valid is the term's synchronous trust check, asked before every call, so
// a process resumed after a pause past its trust deadline calls nothing
// under the stale term; work must end when the term does. It reports
// whether fn finished the term's work: returned nil while the term was
// valid.
func runWork(work context.Context, valid func() bool, fn func(context.Context) error, p workPolicy) (finished bool) {
	live := func() bool { return valid() && work.Err() == nil }
	for live() {
		started := time.Now()
		err := protect(func() error { return fn(work) })
		ran := time.Since(started)
		switch {
		case err == nil && live():
			p.backoff.succeeded()
			return true
		case err == nil:
			return false
		case !live():
			if p.reportable(err) {
				p.report(err, 0)
			}
			return false
		}
		d := p.backoff.failed(ran)
		p.report(err, d)
		if !ctxtime.Sleep(work, d) {
			return false
		}
	}
	return false
}

func (p workPolicy) reportable(err error) bool {
	var pe *PanicError
	return errors.As(err, &pe) || p.endOfTerm == nil || !p.endOfTerm(err)
}

// endOfTerm reports whether err is what work returns when its term ends
// (a cancelled context, a lost, released, resigned or fenced term, a step
// down for failed health checks, a stopped coordinator) rather than a
// failure worth reporting. A panic is never the end of a term.
func endOfTerm(err error) bool {
	var pe *PanicError
	if errors.As(err, &pe) {
		return false
	}
	for _, target := range []error{
		context.Canceled, context.DeadlineExceeded, ErrLeaseLost, ErrClosed, ErrReleased, ErrFenced, ErrResigned, ErrUnhealthy,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// reportFailure is the default report of a failed user callback: an error
// log line, with the stack for a panic and the wait before the next call,
// and ev as an EventError carrying err. what names the callback in the
// message ("leader work", "pool work", "health check").
func (s *shared) reportFailure(log *zap.Logger, what string, err error, retryIn time.Duration, ev Event) {
	msg, fields := what+" returned an error", []zap.Field{zap.Error(err)}
	var pe *PanicError
	if errors.As(err, &pe) {
		msg = what + " panicked; recovered"
		fields = append(fields, zap.ByteString("stack", pe.Stack))
	}
	if retryIn > 0 {
		fields = append(fields, zap.Duration("retry_in", retryIn))
	}
	log.Error(msg, fields...)
	ev.Kind, ev.Err = EventError, err
	s.events.emit(ev)
}
