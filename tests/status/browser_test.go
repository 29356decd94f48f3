package status_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os/exec"
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

// TestPageInBrowser renders the page in a headless Chromium and checks the
// DOM it built: the lease and member rows are there, as rows of tables.
func TestPageInBrowser(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		t.Skipf("LOUD: status: no chromium on PATH (looked for %s); browser check SKIPPED", strings.Join(browsers, ", "))
	}
	f := newFixture(t)
	srv := httptest.NewServer(status.Handler(f.a, status.Options{Refresh: -1}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", srv.URL+"/status")
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
	dom := string(out)
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
