package membership

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasehold/leasehold/internal/backoff"
)

// retryPolicy is the backoff of failed steps: the poll plus up to half of
// it, however many failed before, so an outage costs the database no more
// statements than polling does, and a member steps again within a poll
// and a half of the database's return.
func retryPolicy(cfg Config) backoff.Policy {
	return backoff.Policy{Interval: cfg.Poll}
}

// outage follows the failed steps of a member: the wait after each, and
// one warning an outage rather than one a failure.
type outage struct {
	retry backoff.Retry
	log   *zap.Logger
	// wait is the wait after the step under way once a statement of it
	// failed, zero before; until is when the step after the last one may
	// start if that one failed, zero otherwise.
	wait  time.Duration
	until time.Time
}

func newOutage(cfg Config) outage {
	return outage{retry: backoff.Retry{Policy: retryPolicy(cfg)}, log: cfg.Log}
}

// failed records the failure err of a statement of the step under way; a
// step's first counts one failed step. The first failure of an outage is
// logged at Warn, the others at Debug.
func (o *outage) failed(err error) {
	level := zapcore.DebugLevel
	if o.wait == 0 {
		wait, first := o.retry.Failed()
		o.wait = wait
		if first {
			level = zapcore.WarnLevel
		}
	}
	o.log.Log(level, "pool step failed; retrying", zap.Error(err), zap.Duration("retry_in", o.wait))
}

// stepEnded records the end, at now, of a step: after a failed one, the
// next may start once its wait has passed (until); one that succeeded
// having sent statements (tried) ends the outage, with one line.
func (o *outage) stepEnded(now time.Time, tried bool) {
	o.until = time.Time{}
	switch {
	case o.wait > 0:
		o.until, o.wait = now.Add(o.wait), 0
	case tried:
		if n, lasted := o.retry.Succeeded(); n > 0 {
			o.log.Info("pool step recovered", zap.Int("failures", n), zap.Duration("outage", lasted))
		}
	}
}
