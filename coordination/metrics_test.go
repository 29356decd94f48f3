package coordination

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/memstore"
)

// TestMetricsOffByDefault: without a MeterProvider nothing is set up and
// the recording helpers cost nothing.
func TestMetricsOffByDefault(t *testing.T) {
	c := newCoordinator(memstore.New(), testIdentity(t, "node-a"), Config{}.withDefaults())
	if c.Config().MeterProvider == nil {
		t.Fatalf("Config().MeterProvider is nil, want the no-op provider")
	}
	m := c.metrics
	if m.on || m.leaseAttrs("x") != nil || m.poolAttrs("x") != nil {
		t.Fatalf("metrics on without a provider")
	}
	allocs := testing.AllocsPerRun(100, func() {
		m.renewal(time.Millisecond, errInjected)
		m.headroom(time.Second)
		m.acquireRoundTrip(time.Millisecond)
		m.handoff(time.Second)
		m.acquired()
		m.lost(lossSessionGone)
		m.released()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run with metrics off, want 0", allocs)
	}
}
