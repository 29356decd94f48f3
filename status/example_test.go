package status_test

import (
	"net/http"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/status"
)

// Serve the status page at /status and its JSON at /status.json, on a port
// only operators reach.
func ExampleHandler() {
	var coord *coordination.Coordinator // from coordination.New; it need not be running
	page := status.Handler(coord, status.Options{Title: "orders service", Refresh: 10 * time.Second})
	mux := http.NewServeMux()
	mux.Handle("GET /status", page)
	mux.Handle("GET /status.json", page)
	srv := &http.Server{Addr: "127.0.0.1:8081", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
}
