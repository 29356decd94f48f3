package health

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// errSecret is a health check's error whose text must never reach a
// probe's answer.
var errSecret = errors.New("cannot reach 10.1.2.3:5432 as admin")

func TestReadinessRule(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require := options{healthy: true}
	failing := coordination.RenewalState{Running: true, Unhealthy: true, HealthChanged: now.Add(-12 * time.Second), HealthError: errSecret}
	tests := []struct {
		name string
		st   coordination.RenewalState
		o    options
		want string // "" for ready, else a part of the reason
	}{
		{"running", coordination.RenewalState{Running: true}, options{}, ""},
		{"not running", coordination.RenewalState{}, options{}, "coordinator not running"},
		{"unhealthy, health not required", failing, options{}, ""},
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
