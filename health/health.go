package health

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// DefaultFailures is how many consecutive failed renewals Liveness needs
// by default before it looks at the trust headroom.
const DefaultFailures = 2

// ErrInvalidOption is wrapped by the error Liveness returns for an option
// whose value is out of range; the error names the option and the value.
var ErrInvalidOption = errors.New("leasehold: invalid health option")

// A LivenessOption tunes Liveness. Only this package makes them:
// WithFailures and WithHeadroom.
type LivenessOption interface {
	applyLiveness(*options) error
}

// options are Liveness's settings; a zero field takes its default.
type options struct {
	failures int
	headroom time.Duration
}

// WithFailures sets how many consecutive failed renewals the liveness
// check needs before it can fail. n must be at least 1; Liveness rejects
// any other value with an error wrapping ErrInvalidOption. Without it,
// DefaultFailures.
func WithFailures(n int) LivenessOption { return failuresOption(n) }

type failuresOption int

func (n failuresOption) applyLiveness(o *options) error {
	if n < 1 {
		return fmt.Errorf("%w: WithFailures(%d): want at least 1 failed renewal", ErrInvalidOption, int(n))
	}
	o.failures = int(n)
	return nil
}

// WithHeadroom sets the trust headroom (the time left until the session's
// trust deadline) below which failing renewals fail the liveness check. d
// must be positive; Liveness rejects any other value with an error
// wrapping ErrInvalidOption. Without it, a quarter of the coordinator's
// TTL.
func WithHeadroom(d time.Duration) LivenessOption { return headroomOption(d) }

type headroomOption time.Duration

func (d headroomOption) applyLiveness(o *options) error {
	if d <= 0 {
		return fmt.Errorf("%w: WithHeadroom(%v): want a positive duration", ErrInvalidOption, time.Duration(d))
	}
	o.headroom = time.Duration(d)
	return nil
}

// Liveness returns a handler that answers 503 while the renewals of c keep
// failing and the leases it holds are close to their trust deadline (see
// the package doc), and 200 otherwise. The handler does no I/O.
//
// It returns an error wrapping ErrInvalidOption, naming each option with
// its value, when an option's value is out of range; nil options are
// ignored. A nil c gives a handler that always answers 503.
func Liveness(c *coordination.Coordinator, opts ...LivenessOption) (http.Handler, error) {
	var o options
	var errs []error
	for _, opt := range opts {
		if opt != nil {
			errs = append(errs, opt.applyLiveness(&o))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c == nil {
		return unavailable("no coordinator"), nil
	}
	o.failures = cmp.Or(o.failures, DefaultFailures)
	o.headroom = cmp.Or(o.headroom, c.Config().TTL/4)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		respond(w, liveness(c.Renewal(), time.Now(), o))
	}), nil
}

// liveness returns why the state st, at now, fails the liveness check, or
// "" when it passes.
func liveness(st coordination.RenewalState, now time.Time, o options) string {
	if st.Held == 0 || st.Failures < o.failures || st.TrustDeadline.IsZero() {
		return ""
	}
	left := st.TrustDeadline.Sub(now)
	if left >= o.headroom {
		return ""
	}
	since := "no renewal has succeeded yet"
	if !st.LastSuccess.IsZero() {
		since = fmt.Sprintf("the last success was %v ago", now.Sub(st.LastSuccess).Round(time.Millisecond))
	}
	return fmt.Sprintf("renewals failing: %d in a row (%s); %d leases held with %v of trust left, under %v",
		st.Failures, since, st.Held, left.Round(time.Millisecond), o.headroom)
}

// A ReadinessOption tunes Readiness. Only this package makes them:
// RequireHealthy.
type ReadinessOption interface {
	applyReadiness(*readinessOptions)
}

type readinessOptions struct {
	healthy bool // require that the health checks let the process campaign
}

// RequireHealthy makes Readiness also answer 503 while the coordinator's
// health checks (coordination.Config.HealthCheck) keep it from
// campaigning: no check has passed yet, or the last one failed. Without a
// HealthCheck it changes nothing.
func RequireHealthy() ReadinessOption { return requireHealthy{} }

type requireHealthy struct{}

func (requireHealthy) applyReadiness(o *readinessOptions) { o.healthy = true }

// Readiness returns a handler that answers 200 while c runs (Ready is
// closed and Done is not) and 503 otherwise; with RequireHealthy, also 503
// while c's health checks keep it from campaigning. It does no I/O. A nil
// c gives a handler that always answers 503.
func Readiness(c *coordination.Coordinator, opts ...ReadinessOption) http.Handler {
	if c == nil {
		return unavailable("no coordinator")
	}
	var o readinessOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyReadiness(&o)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		respond(w, readiness(c.Renewal(), time.Now(), o))
	})
}

// readiness returns why the state st, at now, fails the readiness check,
// or "" when it passes. The reason never carries the health check's error
// text, which is the application's.
func readiness(st coordination.RenewalState, now time.Time, o readinessOptions) string {
	if !st.Running {
		return "coordinator not running"
	}
	if !o.healthy || !st.Unhealthy {
		return ""
	}
	why := "no health check has passed yet"
	if st.HealthError != nil {
		why = "the last health check failed"
	}
	since := ""
	if !st.HealthChanged.IsZero() {
		since = fmt.Sprintf(" for %v", now.Sub(st.HealthChanged).Round(time.Millisecond))
	}
	return fmt.Sprintf("unhealthy%s: %s; not campaigning until one passes", since, why)
}

// ReadyWhenLeading returns a handler that answers 200 while this process
// leads e (Election.IsLeader: it holds the lease and trusts it now) and 503
// otherwise. It does no I/O. A nil e gives a handler that always answers
// 503.
func ReadyWhenLeading(e *coordination.Election) http.Handler {
	if e == nil {
		return unavailable("no election")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		why := ""
		if !e.IsLeader() {
			why = "not leading " + e.Key()
		}
		respond(w, why)
	})
}

// unavailable returns a handler that always answers 503 with why.
func unavailable(why string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { respond(w, why) })
}

// respond writes "ok" and 200 when why is empty, and why and 503
// otherwise.
func respond(w http.ResponseWriter, why string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if why == "" {
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintln(w, "ok")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = fmt.Fprintln(w, why)
}
