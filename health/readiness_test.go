package health

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/testdb"
)

// errSecret is a health check's error whose text must never reach a
// probe's answer.
var errSecret = errors.New("cannot reach 10.1.2.3:5432 as admin")

func TestReadinessRule(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require := readinessOptions{healthy: true}
	failing := coordination.RenewalState{Running: true, Unhealthy: true, HealthChanged: now.Add(-12 * time.Second), HealthError: errSecret}
	tests := []struct {
		name string
		st   coordination.RenewalState
		o    readinessOptions
		want string // "" for ready, else a part of the reason
	}{
		{"running", coordination.RenewalState{Running: true}, readinessOptions{}, ""},
		{"not running", coordination.RenewalState{}, readinessOptions{}, "coordinator not running"},
		{"unhealthy, health not required", failing, readinessOptions{}, ""},
		{"healthy, health required", coordination.RenewalState{Running: true, HealthChanged: now.Add(-time.Second)}, require, ""},
		{"running without a health check, health required", coordination.RenewalState{Running: true}, require, ""},
		{"last check failed", failing, require, "unhealthy for 12s: the last health check failed"},
		{"no check returned yet", with(failing, func(s *coordination.RenewalState) { s.HealthError = nil }), require,
			"unhealthy for 12s: no health check has passed yet"},
		{"not running and unhealthy", with(failing, func(s *coordination.RenewalState) { s.Running = false }), require, "coordinator not running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why := readiness(tc.st, now, tc.o)
			if (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) {
				t.Fatalf("readiness(%+v) = %q, want %q", tc.st, why, tc.want)
			}
			if strings.Contains(why, "10.1.2.3") || strings.Contains(why, "admin") {
				t.Fatalf("the reason %q carries the check's error text", why)
			}
		})
	}
}

// TestReadinessRequiresHealthy: with RequireHealthy, readiness fails while
// the last health check failed, or none has passed yet, and passes once
// one does; without it, readiness ignores the checks.
func TestReadinessRequiresHealthy(t *testing.T) {
	db := testdb.Target{Name: "sqlite-pure", Dialect: "sqlite"}.Open(t)
	id, err := identity.New("node-a", "test")
	if err != nil {
		t.Fatal(err)
	}
	var healthy atomic.Bool
	c, err := coordination.New(db, id, coordination.Config{
		TTL: 3 * time.Second, RetryInterval: 100 * time.Millisecond, Logger: zaptest.NewLogger(t),
		HealthInterval: 50 * time.Millisecond,
		HealthCheck: func(context.Context) error {
			if healthy.Load() {
				return nil
			}
			return errSecret
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ready, readyHealthy := Readiness(c), Readiness(c, RequireHealthy())
	expect(t, "readiness requiring health before Run", readyHealthy, http.StatusServiceUnavailable, "coordinator not running")

	run(t, c)
	expect(t, "readiness while running, checks failing", ready, http.StatusOK, "ok")
	body := awaitStatus(t, "readiness requiring health, checks failing", readyHealthy, http.StatusServiceUnavailable, "the last health check failed")
	if strings.Contains(body, "10.1.2.3") || strings.Contains(body, "admin") {
		t.Fatalf("the 503 body %q carries the check's error text", body)
	}

	healthy.Store(true)
	awaitStatus(t, "readiness requiring health, checks passing", readyHealthy, http.StatusOK, "ok")

	healthy.Store(false)
	awaitStatus(t, "readiness requiring health, checks failing again", readyHealthy, http.StatusServiceUnavailable, "the last health check failed")
	expect(t, "readiness, checks failing again", ready, http.StatusOK, "ok")
}

// awaitStatus polls h until it answers code with a body that has body,
// for at most wait, and returns that body.
func awaitStatus(t *testing.T, what string, h http.Handler, code int, body string) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		gotCode, gotBody := get(t, h)
		if gotCode == code && strings.Contains(gotBody, body) {
			return gotBody
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %q after %v, want %d and a body with %q", what, gotCode, gotBody, wait, code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
