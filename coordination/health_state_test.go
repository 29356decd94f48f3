package coordination

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
)

// TestHealthState: Coordinator.Renewal and the leasehold.health.unhealthy
// gauge show whether the health checks let the process campaign, since
// when, and the last check's error.
func TestHealthState(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		h := &health{}
		mp, probe := newMeterProbe(t)
		cfg := Config{HealthCheck: h.check, HealthInterval: 10 * time.Second, HealthFailures: 3, MeterProvider: mp}
		if st := newCoordinator(memstore.New(), testIdentity(t, "node-a"), cfg.withDefaults()).Renewal(); !st.Unhealthy ||
			!st.HealthChanged.IsZero() || st.HealthError != nil {
			t.Fatalf("Renewal before Run = %+v, want unhealthy (no check has passed), no change time, no error", st)
		}

		start := time.Now()
		c, stop := bubbleCoordinator(t, memstore.New(), cfg)
		defer stop()
		synctest.Wait() // the first check, at once: it fails
		expectHealth(t, c, probe, "after a first failed check", true, start, 0, errSick)

		h.healthy.Store(true)
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		expectHealth(t, c, probe, "after a passing check", false, start, 10*time.Second, nil)

		time.Sleep(10 * time.Second)
		synctest.Wait()
		expectHealth(t, c, probe, "after a second passing check", false, start, 10*time.Second, nil)

		h.healthy.Store(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		expectHealth(t, c, probe, "after a failed check", true, start, 30*time.Second, errSick)

		time.Sleep(10 * time.Second)
		synctest.Wait()
		expectHealth(t, c, probe, "after two failed checks", true, start, 30*time.Second, errSick)
	})
}

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

// TestHealthStateWithoutCheck: without a HealthCheck the process is never
// unhealthy and the gauge is not observed.
func TestHealthStateWithoutCheck(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		mp, probe := newMeterProbe(t)
		c, stop := bubbleCoordinator(t, memstore.New(), Config{MeterProvider: mp})
		defer stop()
		if st := c.Renewal(); st.Unhealthy || !st.HealthChanged.IsZero() || st.HealthError != nil {
			t.Fatalf("Renewal without a HealthCheck = %+v, want healthy, no change time, no error", st)
		}
		if _, ok := probe.collect()[metricHealthUnhealthy]; ok {
			t.Fatalf("%s observed without a HealthCheck", metricHealthUnhealthy)
		}
	})
}

// expectHealth checks the health state of c in Renewal and in the gauge:
// unhealthy or not, changed at start+changed, the last check's error err.
func expectHealth(t *testing.T, c *Coordinator, probe *meterProbe, what string, unhealthy bool, start time.Time, changed time.Duration, err error) {
	t.Helper()
	st := c.Renewal()
	if st.Unhealthy != unhealthy || !st.HealthChanged.Equal(start.Add(changed)) ||
		(err == nil) != (st.HealthError == nil) || (err != nil && !errors.Is(st.HealthError, err)) {
		t.Fatalf("%s: Renewal = unhealthy %v, changed %v after the start (zero: %v), error %v; want %v, %v, %v", what,
			st.Unhealthy, st.HealthChanged.Sub(start), st.HealthChanged.IsZero(), st.HealthError, unhealthy, changed, err)
	}
	v, ok := probe.collect().value(metricHealthUnhealthy)
	if want := float64(boolInt(unhealthy)); !ok || v != want {
		t.Fatalf("%s: %s = %v (observed %v), want %v", what, metricHealthUnhealthy, v, ok, want)
	}
}
