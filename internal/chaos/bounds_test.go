package chaos

import (
	"testing"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/history"
)

// TestKillBound checks that the kill bound covers both recoveries it
// waits for, each by the library's own formula, and that the workers'
// poll interval is valid.
func TestKillBound(t *testing.T) {
	kill := Bounds()[history.FaultKill]
	join := coordination.RebalanceBound(PollInterval)
	if pool := coordination.CrashRebalanceBound(TTL, PollInterval); kill < pool+join+slack {
		t.Errorf("kill bound %v is below the pool's crash rebalance %v plus a join %v and slack %v", kill, pool, join, slack)
	}
	if lease := TTL + RetryInterval*3/2; kill < lease+join+slack {
		t.Errorf("kill bound %v is below the lease takeover %v plus a join %v and slack %v", kill, lease, join, slack)
	}
	if err := (coordination.PoolConfig{PollInterval: PollInterval}).Validate(); err != nil {
		t.Errorf("PollInterval: %v", err)
	}
}
