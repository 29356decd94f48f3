package coordination_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/coordination"
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
		cfg := coordination.Config{HealthCheck: h.check, HealthInterval: 10 * time.Second, HealthFailures: 3, MeterProvider: mp}
		if st := newCoordinator(t, memstore.New(), testIdentity(t, "node-a"), withDefaults(t, cfg)).Renewal(); !st.Unhealthy ||
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

// TestHealthStateWithoutCheck: without a HealthCheck the process is never
// unhealthy and the gauge is not observed.
func TestHealthStateWithoutCheck(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		mp, probe := newMeterProbe(t)
		c, stop := bubbleCoordinator(t, memstore.New(), coordination.Config{MeterProvider: mp})
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
func expectHealth(t *testing.T, c *coordination.Coordinator, probe *meterProbe, what string, unhealthy bool, start time.Time, changed time.Duration, err error) {
	t.Helper()
	st := c.Renewal()
	if st.Unhealthy != unhealthy || !st.HealthChanged.Equal(start.Add(changed)) ||
		(err == nil) != (st.HealthError == nil) || (err != nil && !errors.Is(st.HealthError, err)) {
		t.Fatalf("%s: Renewal = unhealthy %v, changed %v after the start (zero: %v), error %v; want %v, %v, %v", what,
			st.Unhealthy, st.HealthChanged.Sub(start), st.HealthChanged.IsZero(), st.HealthError, unhealthy, changed, err)
	}
	v, ok := probe.collect().value(metricHealthUnhealthy)
	if want := boolFloat(unhealthy); !ok || v != want {
		t.Fatalf("%s: %s = %v (observed %v), want %v", what, metricHealthUnhealthy, v, ok, want)
	}
}

// boolFloat is the value of a gauge that says b: 1 or 0.
func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
