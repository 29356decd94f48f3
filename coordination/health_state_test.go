package coordination

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/internal/memstore"
)

// TestHealthStateFromReady: from the moment Renewal reports Running, a
// process with a HealthCheck has the time it became unhealthy (the start
// of Run), not only once its health loop has begun.
func TestHealthStateFromReady(t *testing.T) {
	for i := range 20 {
		h := &health{}
		cfg := Config{Logger: zaptest.NewLogger(t), HealthCheck: h.check}.withDefaults()
		c := newCoordinator(memstore.New(), testIdentity(t, "node-a"), cfg)
		before := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = c.Run(ctx) }()
		deadline := time.Now().Add(wait)
		st := c.Renewal()
		for !st.Running && time.Now().Before(deadline) {
			st = c.Renewal()
		}
		cancel()
		select {
		case <-c.Done():
		case <-time.After(wait):
			t.Fatalf("Run did not return within %v", wait)
		}
		if !st.Running || !st.Unhealthy || st.HealthChanged.Before(before) {
			t.Fatalf("run %d: first Renewal while running = %+v, want unhealthy since the start of Run (%v)", i, st, before)
		}
	}
}
