package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// httpTimeout bounds the demo's check of the status node's endpoints.
const httpTimeout = 15 * time.Second

// freeLoopbackAddr returns a loopback address with a port that was free a
// moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port for the status page: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", err
	}
	return addr, nil
}

// checkHTTP reads the status node's endpoints once its coordinator runs:
// each must answer 200, the status page must list the ledger, and the
// metrics must have leasehold's instruments.
func (d *demo) checkHTTP(ctx context.Context) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	checks := []struct{ path, want string }{
		{"/healthz", "ok"},
		{"/readyz", "ok"},
		{"/status", "global/ledger"},
		{"/status.json", `"key": "global/orders"`},
		{"/metrics", "leasehold_lease_held"},
	}
	return d.waitFor(ctx, "the status node's HTTP endpoints", httpTimeout, func(ctx context.Context) error {
		for _, c := range checks {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.fleet.httpAddr+c.path, nil)
			if err != nil {
				return err
			}
			res, err := client.Do(req)
			if err != nil {
				return notYet("GET %s: %v", c.path, err)
			}
			body, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if err != nil {
				return notYet("GET %s: %v", c.path, err)
			}
			if res.StatusCode != http.StatusOK || !strings.Contains(string(body), c.want) {
				return notYet("GET %s: %d, want 200 with %q", c.path, res.StatusCode, c.want)
			}
		}
		return nil
	})
}
