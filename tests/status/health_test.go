package status_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/status"
)

// getJSON reads the snapshot the handler at url serves as JSON.
func getJSON(t *testing.T, url string) status.Snapshot {
	t.Helper()
	code, _, body := fetch(t, url, "application/json")
	var s status.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil || code != 200 || s.Renewal == nil {
		t.Fatalf("GET %s: %d, %v, renewal %v\n%s", url, code, err, s.Renewal, body)
	}
	return s
}

// awaitRenewal polls the JSON at url until ok accepts its renewal state,
// for at most wait.
func awaitRenewal(t *testing.T, url, what string, ok func(coordination.RenewalState) bool) coordination.RenewalState {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		r := *getJSON(t, url).Renewal
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %v; last renewal state %+v", what, wait, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPageShowsHealth: the page and its JSON show whether the process's
// health checks let it campaign, and since when (the page: for how long),
// without the checks' error text.
func TestPageShowsHealth(t *testing.T) {
	var healthy atomic.Bool
	secret := errors.New("cannot reach 10.1.2.3:5432 as admin")
	c := startWith(t, openSQLite(t), "node-a", coordination.Config{
		HealthInterval: 50 * time.Millisecond,
		HealthCheck: func(context.Context) error {
			if healthy.Load() {
				return nil
			}
			return secret
		},
	})
	srv := httptest.NewServer(status.Handler(c, status.Options{Refresh: -1}))
	defer srv.Close()

	sick := awaitRenewal(t, srv.URL+"/status.json", "unhealthy after a failed check", func(r coordination.RenewalState) bool {
		return r.Unhealthy
	})
	if now := time.Now(); sick.HealthChanged.IsZero() || sick.HealthChanged.After(now) {
		t.Errorf("renewal state of an unhealthy process = %+v, want the time it became unhealthy, before %v", sick, now)
	}
	_, _, html := fetch(t, srv.URL+"/status", "")
	if !strings.Contains(html, `<span class="warn" id="health">unhealthy for `) || !strings.Contains(html, "not campaigning") {
		t.Errorf("the page of an unhealthy process does not say so:\n%s", html)
	}
	_, _, body := fetch(t, srv.URL+"/status.json", "")
	for _, page := range []string{html, body} {
		if strings.Contains(page, "10.1.2.3") || strings.Contains(page, "admin") {
			t.Errorf("the status carries the health check's error text:\n%s", page)
		}
	}

	healthy.Store(true)
	r := awaitRenewal(t, srv.URL+"/status.json", "healthy after a passing check", func(r coordination.RenewalState) bool {
		return !r.Unhealthy
	})
	if !r.HealthChanged.After(sick.HealthChanged) {
		t.Errorf("renewal state of a process healthy again = %+v, want the time it became healthy, after %v", r, sick.HealthChanged)
	}
	if _, _, html = fetch(t, srv.URL+"/status", ""); !strings.Contains(html, `<span id="health">healthy for `) {
		t.Errorf("the page of a healthy process does not say so:\n%s", html)
	}
}

// TestPageWithoutHealthCheck: a process without a HealthCheck says it has
// none.
func TestPageWithoutHealthCheck(t *testing.T) {
	c := start(t, openSQLite(t), "node-a")
	srv := httptest.NewServer(status.Handler(c, status.Options{Refresh: -1}))
	defer srv.Close()
	if r := *getJSON(t, srv.URL+"/status.json").Renewal; r.Unhealthy || !r.HealthChanged.IsZero() {
		t.Errorf("renewal state without a health check = %+v", r)
	}
	if _, _, html := fetch(t, srv.URL+"/status", ""); !strings.Contains(html, `<span id="health">no health check</span>`) {
		t.Errorf("the page without a health check does not say so:\n%s", html)
	}
}
