// Package term runs the work of one term: the function a process calls
// while it holds a lease (Election.Run, a singleton worker) or a pool
// assignment (Pool.Run, a partitioned worker). Every caller in leasehold
// runs its work through Run, so they share one panic policy:
//
//   - the function runs under a context that ends with the term;
//   - a panic is recovered and becomes a *PanicError with the value and
//     the stack;
//   - while the term is still valid, an error or a panic is reported and
//     the function is called again under the same term after a backoff
//     that doubles with each consecutive failure;
//   - a nil return while the term is valid means the work of this term is
//     done;
//   - whatever the function returns once its term is over is the end of
//     the term, reported only when it is a panic or an error other than
//     the term's end.
package term

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/leasehold/leasehold/internal/ctxtime"
)

// ErrPanicked is wrapped by every *PanicError.
var ErrPanicked = errors.New("leasehold: work function panicked")

// PanicError is what a work function's panic becomes. It wraps
// ErrPanicked, and the panic value too when that is an error.
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

// Protect calls fn and turns a panic into a *PanicError.
func Protect(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// Backoff counts consecutive failures of one work function and says how
// long to wait before calling it again.
type Backoff struct {
	base, max time.Duration
	failures  int
}

// NewBackoff returns a backoff that waits base after a failure, doubling
// per consecutive failure up to max.
func NewBackoff(base, max time.Duration) *Backoff {
	return &Backoff{base: base, max: max}
}

// Failed records a failure of a run that lasted ran and returns the wait
// before the next call. A run longer than max was healthy for a while, so
// the count starts over.
func (b *Backoff) Failed(ran time.Duration) time.Duration {
	if ran > b.max {
		b.failures = 0
	}
	b.failures++
	d := b.base
	for i := 1; i < b.failures && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}

// Succeeded records a run that finished its work: the count starts over.
func (b *Backoff) Succeeded() { b.failures = 0 }

// Policy is how Run retries and reports.
type Policy struct {
	// Backoff says how long to wait before calling the function again
	// after a failure. It is shared by the terms of one worker, so that a
	// function that fails at once in every new term still backs off.
	Backoff *Backoff
	// Report is told of an error or panic. retryIn is the wait before the
	// function is called again, or 0 when the term is over.
	Report func(err error, retryIn time.Duration)
	// EndOfTerm reports whether an error returned after the term ended is
	// just that end (a cancelled context, a lost lease) rather than a
	// failure worth reporting. A *PanicError is always reported. Nil means
	// every error is reported.
	EndOfTerm func(error) bool
}

// Run calls fn with work until the term ends, following the package's
// panic policy. valid is the term's synchronous trust check; it is asked
// before every call, so a process resumed after a pause past its trust
// deadline calls nothing under the stale term. work must end when the
// term does. Run reports whether fn finished the term's work: returned nil
// while the term was still valid.
func Run(work context.Context, valid func() bool, fn func(context.Context) error, p Policy) (finished bool) {
	live := func() bool { return valid() && work.Err() == nil }
	for live() {
		started := time.Now()
		err := Protect(func() error { return fn(work) })
		ran := time.Since(started)
		switch {
		case err == nil && live():
			p.Backoff.Succeeded()
			return true
		case err == nil:
			return false
		case !live():
			if p.reportable(err) {
				p.Report(err, 0)
			}
			return false
		}
		d := p.Backoff.Failed(ran)
		p.Report(err, d)
		if !ctxtime.Sleep(work, d) {
			return false
		}
	}
	return false
}

func (p Policy) reportable(err error) bool {
	var pe *PanicError
	return errors.As(err, &pe) || p.EndOfTerm == nil || !p.EndOfTerm(err)
}
