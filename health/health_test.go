package health

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

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

// mustLiveness returns Liveness(c, opts...), failing the test on an error.
func mustLiveness(t *testing.T, c *coordination.Coordinator, opts ...LivenessOption) http.Handler {
	t.Helper()
	h, err := Liveness(c, opts...)
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

func TestLivenessRule(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := options{failures: DefaultFailures, headroom: 3 * time.Second}
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

// TestOptions: Liveness rejects each out-of-range option with an error
// naming the option and its value, with or without a coordinator, and
// applies the others.
func TestOptions(t *testing.T) {
	c := newCoordinator(t, "node-a")
	bad := []struct {
		opt  LivenessOption
		name string
	}{
		{WithFailures(0), "WithFailures(0)"},
		{WithFailures(-3), "WithFailures(-3)"},
		{WithHeadroom(0), "WithHeadroom(0s)"},
		{WithHeadroom(-time.Second), "WithHeadroom(-1s)"},
	}
	for _, tc := range bad {
		for _, coord := range []*coordination.Coordinator{c, nil} {
			h, err := Liveness(coord, WithHeadroom(time.Second), tc.opt)
			if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), tc.name) || h != nil {
				t.Errorf("Liveness(%v, %s) = %v, %v; want no handler and an error wrapping ErrInvalidOption that names %s",
					coord != nil, tc.name, h, err, tc.name)
			}
		}
	}
	_, err := Liveness(c, WithFailures(0), WithHeadroom(-time.Second))
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "WithFailures(0)") || !strings.Contains(err.Error(), "WithHeadroom(-1s)") {
		t.Errorf("two bad options: err = %v, want both named", err)
	}

	var o options
	for _, opt := range []LivenessOption{WithFailures(4), WithHeadroom(5 * time.Second)} {
		if err := opt.applyLiveness(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.failures != 4 || o.headroom != 5*time.Second {
		t.Fatalf("options not applied: %+v", o)
	}
	if h, err := Liveness(c, nil, WithFailures(1)); err != nil || h == nil {
		t.Fatalf("Liveness with a nil option = %v, %v; want a handler", h, err)
	}
}

func TestNilArguments(t *testing.T) {
	expect(t, "Liveness(nil)", mustLiveness(t, nil), http.StatusServiceUnavailable, "no coordinator")
	expect(t, "Readiness(nil)", Readiness(nil), http.StatusServiceUnavailable, "no coordinator")
	expect(t, "Readiness(nil, RequireHealthy())", Readiness(nil, RequireHealthy()), http.StatusServiceUnavailable, "no coordinator")
	expect(t, "ReadyWhenLeading(nil)", ReadyWhenLeading(nil), http.StatusServiceUnavailable, "no election")
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
	live, ready, leading := mustLiveness(t, c), Readiness(c), ReadyWhenLeading(e)

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
	live := mustLiveness(t, c, WithHeadroom(8*time.Second))
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
	case <-l.Done():
	case <-time.After(wait):
		t.Fatalf("the lease was not lost within %v of the database going away", wait)
	}
	expect(t, "liveness after the lease was given up", live, http.StatusOK, "ok")
}
