package bench

import (
	"testing"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/memstore"
)

// TestDefaults checks the defaults the handoff and schedules sections
// state their targets for against what coordination.New fills in for the
// zero Config.
func TestDefaults(t *testing.T) {
	db, err := memstore.New().Conn().Open()
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.New("bench-defaults", Cluster)
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Config(); got.TTL != defaultTTL || got.RetryInterval != defaultRetryInterval {
		t.Errorf("coordination's defaults: TTL %v, RetryInterval %v; the benchmark states TTL %v, RetryInterval %v",
			got.TTL, got.RetryInterval, defaultTTL, defaultRetryInterval)
	}
}
