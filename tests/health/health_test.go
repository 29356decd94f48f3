package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/health"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// errSecret is a health check's error whose text must never reach a
// probe's answer.
var errSecret = errors.New("cannot reach 10.1.2.3:5432 as admin")

// wait bounds every wait: it decides how long a broken build takes to
// fail, never whether a healthy one passes.
const wait = 20 * time.Second

// get serves one GET of h and returns the status and the body.
func get(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	return res.StatusCode, string(body)
}

// mustLiveness returns Liveness(c, cfg), failing the test on an error.
func mustLiveness(t *testing.T, c *coordination.Coordinator, cfg health.Config) http.Handler {
	t.Helper()
	h, err := health.Liveness(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// mustReadiness returns Readiness(c, cfg), failing the test on an error.
func mustReadiness(t *testing.T, c *coordination.Coordinator, cfg health.Config) http.Handler {
	t.Helper()
	h, err := health.Readiness(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func expect(t *testing.T, what string, h http.Handler, code int, body string) {
	t.Helper()
	gotCode, gotBody := get(t, h)
	if gotCode != code || !strings.Contains(gotBody, body) {
		t.Fatalf("%s: %d %q, want %d and a body with %q", what, gotCode, gotBody, code, body)
	}
}

// TestOptions: Liveness and Readiness reject each out-of-range field of
// their Config with an error wrapping coordination.ErrInvalidConfig that
// names the field and its value, with or without a coordinator, and take
// the zero Config (every default). (The root module's TestConfigApplied
// checks that valid values apply.)
func TestOptions(t *testing.T) {
	c := newCoordinator(t, "node-a")
	bad := []struct {
		cfg  health.Config
		name string
	}{
		{health.Config{Failures: -1, Headroom: time.Second}, "Failures (-1)"},
		{health.Config{Failures: -3, Headroom: time.Second}, "Failures (-3)"},
		{health.Config{Headroom: -time.Second}, "Headroom (-1s)"},
		{health.Config{Failures: 1, Headroom: -time.Nanosecond}, "Headroom (-1ns)"},
	}
	for _, tc := range bad {
		for _, coord := range []*coordination.Coordinator{c, nil} {
			h, err := health.Liveness(coord, tc.cfg)
			if !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.name) || h != nil {
				t.Errorf("Liveness(%v, %+v) = %v, %v; want no handler and an error wrapping ErrInvalidConfig that names %s",
					coord != nil, tc.cfg, h, err, tc.name)
			}
			h, err = health.Readiness(coord, tc.cfg)
			if !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.name) || h != nil {
				t.Errorf("Readiness(%v, %+v) = %v, %v; want no handler and an error wrapping ErrInvalidConfig that names %s",
					coord != nil, tc.cfg, h, err, tc.name)
			}
		}
	}
	// Two bad fields: the error names the first one checked.
	_, err := health.Liveness(c, health.Config{Failures: -1, Headroom: -time.Second})
	if !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), "Failures (-1)") {
		t.Errorf("two bad fields: err = %v, want an error wrapping ErrInvalidConfig that names Failures (-1)", err)
	}
	// The zero values are the defaults, not errors.
	for _, cfg := range []health.Config{{}, {Failures: 0, Headroom: 0}, {Failures: 1}, {Headroom: time.Second}} {
		if h, err := health.Liveness(c, cfg); err != nil || h == nil {
			t.Fatalf("Liveness(%+v) = %v, %v; want a handler", cfg, h, err)
		}
		if h, err := health.Readiness(c, cfg); err != nil || h == nil {
			t.Fatalf("Readiness(%+v) = %v, %v; want a handler", cfg, h, err)
		}
	}
}

func TestNilArguments(t *testing.T) {
	expect(t, "Liveness(nil)", mustLiveness(t, nil, health.Config{}), http.StatusServiceUnavailable, "no coordinator")
	expect(t, "Readiness(nil)", mustReadiness(t, nil, health.Config{}), http.StatusServiceUnavailable, "no coordinator")
	expect(t, "Readiness(nil, RequireHealthy)", mustReadiness(t, nil, health.Config{RequireHealthy: true}), http.StatusServiceUnavailable, "no coordinator")
	expect(t, "ReadyWhenLeading(nil)", health.ReadyWhenLeading(nil), http.StatusServiceUnavailable, "no election")
}

// newCoordinator returns a coordinator on a fresh SQLite database.
func newCoordinator(t *testing.T, node string) *coordination.Coordinator {
	t.Helper()
	db := testdb.Target{Name: "sqlite-pure", Dialect: "sqlite"}.Open(t)
	id, err := identity.New(node, "test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordination.New(db, id, coordination.Config{
		TTL: 3 * time.Second, RetryInterval: 100 * time.Millisecond, Logger: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs c until the returned stop is called or the test ends.
func run(t *testing.T, c *coordination.Coordinator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Run(ctx) }()
	stop = func() {
		cancel()
		select {
		case <-c.Done():
		case <-time.After(wait):
			t.Errorf("coordinator did not stop within %v", wait)
		}
	}
	t.Cleanup(stop)
	select {
	case <-c.Ready():
	case <-time.After(wait):
		t.Fatalf("coordinator not ready within %v", wait)
	}
	return stop
}

func TestHandlersOnSQLite(t *testing.T) {
	c := newCoordinator(t, "node-a")
	e, err := c.Election(coordination.ClusterScope, "primary")
	if err != nil {
		t.Fatal(err)
	}
	live, ready, leading := mustLiveness(t, c, health.Config{}), mustReadiness(t, c, health.Config{}), health.ReadyWhenLeading(e)

	expect(t, "liveness before Run", live, http.StatusOK, "ok")
	expect(t, "readiness before Run", ready, http.StatusServiceUnavailable, "not running")
	expect(t, "leading before Run", leading, http.StatusServiceUnavailable, "not leading cluster/test/primary")

	stop := run(t, c)
	expect(t, "readiness while running", ready, http.StatusOK, "ok")
	expect(t, "liveness of an idle follower", live, http.StatusOK, "ok")
	expect(t, "leading as a follower", leading, http.StatusServiceUnavailable, "not leading")

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	l, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "leading as the leader", leading, http.StatusOK, "ok")
	expect(t, "liveness of a leader", live, http.StatusOK, "ok")
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expect(t, "leading after release", leading, http.StatusServiceUnavailable, "not leading")

	stop()
	expect(t, "readiness after Run returned", ready, http.StatusServiceUnavailable, "not running")
	expect(t, "liveness after Run returned", live, http.StatusOK, "ok")
}

// TestLivenessFailsBeforeTheTrustDeadline cuts a leader off from its
// database: liveness must fail while its lease's trust runs out, and pass
// again once the lease is given up.
func TestLivenessFailsBeforeTheTrustDeadline(t *testing.T) {
	db := testdb.Target{Name: "sqlite-pure", Dialect: "sqlite"}.Open(t)
	id, err := identity.New("node-a", "test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordination.New(db, id, coordination.Config{
		TTL: 12 * time.Second, RenewInterval: time.Second, Margin: time.Second, Logger: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	e, err := c.Election(coordination.GlobalScope, "cut-off")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	l, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(context.Background()) }()
	live := mustLiveness(t, c, health.Config{Headroom: 8 * time.Second})
	expect(t, "liveness of a leader", live, http.StatusOK, "ok")

	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlDB.Close(); err != nil { // every renewal fails from now on
		t.Fatal(err)
	}
	// The trust deadline is at most 11s away; the check fails in its last 8s,
	// a window no busy scheduler misses.
	var reason string
	deadline := time.Now().Add(wait)
	for reason == "" {
		if code, body := get(t, live); code == http.StatusServiceUnavailable {
			reason = body
		}
		if l.Context().Err() != nil && reason == "" {
			t.Fatalf("the lease was lost (%v) and liveness never failed", context.Cause(l.Context()))
		}
		if time.Now().After(deadline) {
			t.Fatalf("liveness did not fail within %v of the database going away", wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(reason, "renewals failing") || !strings.Contains(reason, "1 leases held") {
		t.Errorf("reason = %q", reason)
	}
	select {
	case <-l.Context().Done():
	case <-time.After(wait):
		t.Fatalf("the lease was not lost within %v of the database going away", wait)
	}
	expect(t, "liveness after the lease was given up", live, http.StatusOK, "ok")
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
	ready, readyHealthy := mustReadiness(t, c, health.Config{}), mustReadiness(t, c, health.Config{RequireHealthy: true})
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
