package health

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// Config tunes Liveness and Readiness. The zero value is valid and gives
// the documented defaults; both check it, and an error names the field
// and its value.
type Config struct {
	// Failures is how many consecutive failed renewals Liveness needs
	// before it looks at the trust headroom. Must not be negative.
	// Defaults to 2.
	Failures int
	// Headroom is the trust left (until the session's trust deadline)
	// below which failing renewals fail Liveness. Must not be negative.
	// Defaults to a quarter of the coordinator's TTL.
	Headroom time.Duration
	// RequireHealthy makes Readiness also answer 503 while the
	// coordinator's health checks (coordination.Config.HealthCheck) keep
	// it from campaigning. Without a HealthCheck it changes nothing.
	RequireHealthy bool
}

// defaultFailures is Config.Failures' default.
const defaultFailures = 2

// options are the settings of a check, defaults filled in.
type options struct {
	failures int
	headroom time.Duration
	healthy  bool
}

// check checks cfg and fills in its defaults for the coordinator c.
func (cfg Config) check(c *coordination.Coordinator) (options, error) {
	switch {
	case cfg.Failures < 0:
		return options{}, fmt.Errorf("%w: health: Failures (%d) must not be negative", coordination.ErrInvalidConfig, cfg.Failures)
	case cfg.Headroom < 0:
		return options{}, fmt.Errorf("%w: health: Headroom (%v) must not be negative", coordination.ErrInvalidConfig, cfg.Headroom)
	}
	o := options{failures: cmp.Or(cfg.Failures, defaultFailures), headroom: cfg.Headroom, healthy: cfg.RequireHealthy}
	if c != nil {
		o.headroom = cmp.Or(o.headroom, c.Config().TTL/4)
	}
	return o, nil
}

// Liveness returns a handler that answers 503 while the renewals of c keep
// failing and the leases it holds are close to their trust deadline (see
// the package doc), and 200 otherwise. The handler does no I/O. A nil c
// gives a handler that always answers 503.
func Liveness(c *coordination.Coordinator, cfg Config) (http.Handler, error) {
	o, err := cfg.check(c)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return unavailable("no coordinator"), nil
	}
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

// Readiness returns a handler that answers 200 while c runs (Ready is
// closed and Done is not) and 503 otherwise; with RequireHealthy, also 503
// while c's health checks keep it from campaigning. It does no I/O. A nil
// c gives a handler that always answers 503.
func Readiness(c *coordination.Coordinator, cfg Config) (http.Handler, error) {
	o, err := cfg.check(c)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return unavailable("no coordinator"), nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		respond(w, readiness(c.Renewal(), time.Now(), o))
	}), nil
}

// readiness returns why the state st, at now, fails the readiness check,
// or "" when it passes. The reason never carries the health check's error
// text, which is the application's.
func readiness(st coordination.RenewalState, now time.Time, o options) string {
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
// otherwise, for routing leader-only traffic. It is no readiness probe: a
// follower is never ready, so a rolling update would stall. It does no
// I/O. A nil e gives a handler that always answers 503.
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
