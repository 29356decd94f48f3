package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// statusURL finds the status page's URL in the sample's logs.
var statusURL = regexp.MustCompile(`"status": "(http://[^"]+)/status"`)

// TestHTTPEndpoints runs the sample with -http on a free port and reads
// its five endpoints, then stops it and checks the server is gone.
func TestHTTPEndpoints(t *testing.T) {
	dsn := sqliteDSN(driverSQLitePure, filepath.Join(t.TempDir(), "http.db"))
	args := []string{"-dsn", dsn, "-orders", "50", "-work-delay", "50us", "-ttl", "3s", "-renew", "1s", "-retry", "300ms", "-http", "127.0.0.1:0"}
	vars := map[string]string{"HOSTNAME": "web-node", "CLUSTER_NAME": "test"}

	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, args, env(vars), &logs) }()
	defer func() {
		if t.Failed() {
			t.Logf("sample logs:\n%s", logs.String())
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()

	get := func(path string) (int, string, string) {
		t.Helper()
		res, err := client.Get(base(t, &logs, exited) + path)
		if err != nil {
			return 0, "", err.Error()
		}
		defer func() { _ = res.Body.Close() }()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(body)
	}
	// until polls path until check accepts the response.
	until := func(path string, check func(code int, body string) bool) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, _, body := get(path)
			if check(code, body) {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: still %d %q after 60s", path, code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	until("/healthz", func(code int, body string) bool { return code == http.StatusOK && body == "ok\n" })
	until("/readyz", func(code int, body string) bool { return code == http.StatusOK && body == "ok\n" })
	// Once this copy leads the ledger, the status page lists it as its own.
	body := until("/status.json", func(code int, body string) bool {
		return code == http.StatusOK && strings.Contains(body, `"key": "global/ledger"`) && strings.Contains(body, `"key": "global/orders"`)
	})
	var st struct {
		Holder string
		Leases []struct {
			Name string
			Live bool
			Mine bool
		}
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status.json: %v\n%s", err, body)
	}
	if !strings.HasPrefix(st.Holder, "web-node/test/") || len(st.Leases) == 0 {
		t.Errorf("/status.json: holder %q, leases %+v", st.Holder, st.Leases)
	}
	code, ct, html := get("/status")
	if code != http.StatusOK || !strings.HasPrefix(ct, "text/html") || !strings.Contains(html, "global/ledger") {
		t.Errorf("/status: %d %q\n%s", code, ct, html)
	}
	// The gauges are observed at each scrape once the coordinator runs.
	metrics := until("/metrics", func(code int, body string) bool {
		return code == http.StatusOK && strings.Contains(body, "leasehold_lease_held")
	})
	for _, want := range []string{"# TYPE leasehold_lease_held", `leasehold_lease_name="global/ledger"`, "leasehold_lease_acquisitions"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	url := base(t, &logs, exited)
	cancel()
	select {
	case code := <-exited:
		if code != exitOK {
			t.Fatalf("sample exited with status %d, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sample did not stop within 30s of cancellation")
	}
	if res, err := client.Get(url + "/healthz"); err == nil {
		_ = res.Body.Close()
		t.Errorf("the HTTP server still answers after the sample stopped")
	}
}

// base returns the URL the sample serves on, from its logs, waiting for
// the line for at most 30s.
func base(t *testing.T, logs *syncBuffer, exited <-chan int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := statusURL.FindStringSubmatch(logs.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-exited:
			t.Fatalf("sample exited with status %d before serving HTTP", code)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the sample did not log its HTTP address within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
