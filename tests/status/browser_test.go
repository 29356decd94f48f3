package status_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/status"
)

// browsers are the names a headless Chromium goes by on PATH.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findBrowser returns the path of a Chromium on PATH, or "".
func findBrowser() string {
	for _, name := range browsers {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// requireBrowser skips the test, loudly, when there is no Chromium.
func requireBrowser(t *testing.T) {
	t.Helper()
	if findBrowser() == "" {
		t.Skipf("LOUD: status: no chromium on PATH (looked for %s); browser check SKIPPED", strings.Join(browsers, ", "))
	}
}

// render loads url in a headless Chromium and returns the DOM it built.
func render(t *testing.T, url string) string {
	t.Helper()
	requireBrowser(t)
	browser := findBrowser()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("%s did not render the page within 90s; stderr:\n%s", browser, stderr.String())
		}
		t.Fatalf("%s --dump-dom: %v; stderr:\n%s", browser, err, stderr.String())
	}
	return string(out)
}

// TestPageInBrowser renders the page in a headless Chromium and checks the
// DOM it built: the lease and member rows are there, as rows of tables.
func TestPageInBrowser(t *testing.T) {
	requireBrowser(t)
	f := newFixture(t)
	srv := httptest.NewServer(status.Handler(f.a, status.Options{Refresh: -1}))
	defer srv.Close()
	dom := render(t, srv.URL+"/status")
	for _, s := range []string{
		`<table id="leases">`, `<td class="name">cluster/test/reports</td>`, `<td class="name">global/ledger</td>`,
		holderCell(f.a.Holder()), holderCell(f.b.Holder()),
		`<h3>global/orders</h3>`, `<td class="name">` + instance(t, f.b) + `</td>`,
	} {
		if !strings.Contains(dom, s) {
			t.Errorf("the rendered DOM lacks %q", s)
		}
	}
	if n := strings.Count(dom, `<tr class="lease`); n != 2 {
		t.Errorf("the rendered DOM has %d lease rows, want 2", n)
	}
	if n := strings.Count(dom, `<tr class="member`); n != 2 {
		t.Errorf("the rendered DOM has %d member rows, want 2", n)
	}
	if t.Failed() {
		t.Logf("rendered DOM:\n%s", dom)
	}
}

// TestLocksAndProcessesInBrowser renders the page of a database with a
// keyed lock, a semaphore slot and a killed process in a headless
// Chromium, and checks what a person sees: every section; the lock's key
// with its holder and epoch; a row per process, the killed one expired;
// its pool member dead, not pending; no row of the keyed locks (their
// floors above all) among the leases; long holders cut, in full in their
// title.
func TestLocksAndProcessesInBrowser(t *testing.T) {
	requireBrowser(t)
	f := newKilledFixture(t)
	srv := httptest.NewServer(status.Handler(f.a, status.Options{Refresh: -1}))
	defer srv.Close()
	dom := render(t, srv.URL+"/status")
	for _, s := range []string{
		"<h2>Leases</h2>", "<h2>Pools</h2>", "<h2>Keyed locks and semaphores</h2>", "<h2>Processes</h2>", "<h2>Schedules</h2>",
		"<h3>global/jobs</h3>", "<h3>global/limit</h3>",
		`<tr class="lock mine">` + "\n" + `<td class="name"><span class="clip" title="order|7">order|7</span></td>` + "\n" +
			holderCell(f.a.Holder()) + "\n" + `<td class="num">` + strconv.FormatInt(f.lock.Epoch(), 10) + `</td>`,
		`<tr class="session mine">` + "\n" + holderCell(f.a.Holder()),
		`<tr class="session dead">` + "\n" + holderCell(f.b.Holder()),
		"No leases.",
	} {
		if !strings.Contains(dom, s) {
			t.Errorf("the rendered DOM lacks %q", s)
		}
	}
	// The killed process's member row: dead, with no acknowledgement
	// pending.
	row := ""
	for _, tr := range strings.Split(dom, "<tr ")[1:] {
		if strings.HasPrefix(tr, `class="member`) && strings.Contains(tr, holderCell(f.b.Holder())) {
			row = tr
		}
	}
	if !strings.Contains(row, `<span class="dead">dead</span>`) || strings.Contains(row, "pending") {
		t.Errorf("the killed process's pool member is not shown dead: %q", row)
	}
	for _, s := range []string{"lockfloor|", "lock|", "sem|", `<tr class="lease`} {
		if strings.Contains(dom, s) {
			t.Errorf("the rendered DOM has %q: a row of the keyed locks shown as a lease", s)
		}
	}
	if t.Failed() {
		t.Logf("rendered DOM:\n%s", dom)
	}
}
