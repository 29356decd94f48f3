package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/term"
)

// ErrPanicked is wrapped by every *PanicError.
var ErrPanicked = term.ErrPanicked

// PanicError is what a panic in leader work (Election.Run) or pool work
// (Pool.Run) becomes: the panic is recovered, reported as an EventError
// and logged with its stack, and the work is called again under the same
// term after a backoff. It wraps ErrPanicked, and the panic value too when
// that is an error. The workers package uses the same type and policy.
type PanicError = term.PanicError

// maxWorkBackoff caps the doubling wait before failed leader or pool work
// is called again under the same term.
const maxWorkBackoff = 30 * time.Second

// EndOfTerm reports whether err is what work returns when its term ends
// (a cancelled context, a lost, released, resigned or fenced term, a step
// down for failed health checks, a stopped coordinator) rather than a
// failure worth reporting. A panic is never the end of a term.
func EndOfTerm(err error) bool {
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

// workPolicy is the policy of Election.Run and Pool.Run for one term: a
// failure is logged, with the stack for a panic, and emitted as EventError
// for the term's lease; the work is called again after RetryInterval,
// doubling up to maxWorkBackoff. what names the work in messages.
func (c *Coordinator) workPolicy(what, lease string, epoch int64) term.Policy {
	log := c.log.With(zap.String("lease", lease), zap.Int64("epoch", epoch))
	return term.Policy{
		Backoff: term.NewBackoff(c.cfg.RetryInterval, max(maxWorkBackoff, c.cfg.RetryInterval)),
		Report: func(err error, retryIn time.Duration) {
			err = fmt.Errorf("%s for %q epoch %d: %w", what, lease, epoch, err)
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
			c.events.emit(Event{Kind: EventError, Lease: lease, Epoch: epoch, Err: err})
		},
		EndOfTerm: EndOfTerm,
	}
}
