package health

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

func TestLivenessRule(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := options{failures: defaultFailures, headroom: 3 * time.Second}
	failing := coordination.RenewalState{
		Running: true, Held: 2, TrustDeadline: now.Add(time.Second), Failures: 5,
		LastSuccess: now.Add(-9 * time.Second),
	}
	tests := []struct {
		name string
		st   coordination.RenewalState
		fail bool
	}{
		{"failing near the deadline", failing, true},
		{"deadline already passed", with(failing, func(s *coordination.RenewalState) { s.TrustDeadline = now.Add(-time.Second) }), true},
		{"no success yet", with(failing, func(s *coordination.RenewalState) { s.LastSuccess = time.Time{} }), true},
		{"idle follower", coordination.RenewalState{Running: true}, false},
		{"follower after a loss, renewals failed", with(failing, func(s *coordination.RenewalState) { s.Held, s.TrustDeadline = 0, time.Time{} }), false},
		{"one failure", with(failing, func(s *coordination.RenewalState) { s.Failures = 1 }), false},
		{"failing with headroom", with(failing, func(s *coordination.RenewalState) { s.TrustDeadline = now.Add(3 * time.Second) }), false},
		{"healthy holder", coordination.RenewalState{Running: true, Held: 1, TrustDeadline: now.Add(time.Second)}, false},
		{"not running", coordination.RenewalState{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why := liveness(tc.st, now, o)
			if (why != "") != tc.fail {
				t.Fatalf("liveness(%+v) = %q, want failing %v", tc.st, why, tc.fail)
			}
		})
	}
	why := liveness(failing, now, o)
	for _, s := range []string{"5 in a row", "2 leases", "1s of trust left", "under 3s", "9s ago"} {
		if !strings.Contains(why, s) {
			t.Errorf("reason %q lacks %q", why, s)
		}
	}
}

func with(st coordination.RenewalState, f func(*coordination.RenewalState)) coordination.RenewalState {
	f(&st)
	return st
}

// TestConfigApplied: a valid Config sets the rule's values, and its zero
// fields take their defaults; a negative one is refused, naming it.
func TestConfigApplied(t *testing.T) {
	o, err := Config{Failures: 4, Headroom: 5 * time.Second, RequireHealthy: true}.check(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.failures != 4 || o.headroom != 5*time.Second || !o.healthy {
		t.Fatalf("config not applied: %+v", o)
	}
	if o, _ := (Config{}).check(nil); o.failures != defaultFailures {
		t.Fatalf("zero Failures: %d, want %d", o.failures, defaultFailures)
	}
	for _, cfg := range []Config{{Failures: -1}, {Headroom: -time.Second}} {
		if _, err := cfg.check(nil); !errors.Is(err, coordination.ErrInvalidConfig) {
			t.Errorf("check(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
