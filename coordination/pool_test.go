package coordination

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

func TestRebalanceBounds(t *testing.T) {
	if got, want := rebalanceBound(time.Second), 1250*time.Millisecond; got != want {
		t.Errorf("rebalanceBound(1s) = %v, want %v", got, want)
	}
	if got, want := crashRebalanceBound(5*time.Second, time.Second), 5*time.Second+250*time.Millisecond+membership.ExpiryMargin; got != want {
		t.Errorf("crashRebalanceBound(5s, 1s) = %v, want %v", got, want)
	}
	// The measured case: TTL 5s, poll 1s must settle within TTL + one poll.
	if b := crashRebalanceBound(5*time.Second, time.Second); b > 6*time.Second {
		t.Errorf("crashRebalanceBound(5s, 1s) = %v, over TTL + one poll", b)
	}
}
