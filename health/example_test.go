package health_test

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/health"
)

// Serve the probes of a process that runs coord beside its other
// handlers: /healthz for the orchestrator's liveness probe, /readyz for
// its readiness probe.
func ExampleLiveness() {
	var coord *coordination.Coordinator // from coordination.New, running in its own goroutine
	cfg := health.Config{Headroom: 5 * time.Second}
	live, err := health.Liveness(coord, cfg)
	if err != nil {
		return
	}
	ready, err := health.Readiness(coord, cfg)
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", live)
	mux.Handle("GET /readyz", ready)
	srv := &http.Server{Addr: ":8081", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
}

// An active/passive service routes its leader-only traffic to the process
// that leads the election "primary": a route, not a readiness probe,
// since a follower is never ready by it.
func ExampleReadyWhenLeading() {
	var coord *coordination.Coordinator // from coordination.New, running in its own goroutine
	e, err := coord.Election(coordination.ClusterScope, "primary")
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /leader", health.ReadyWhenLeading(e))
}

// The checks refuse a value out of range, naming the field and the value,
// rather than keeping the default.
func ExampleConfig() {
	var coord *coordination.Coordinator // from coordination.New
	_, err := health.Liveness(coord, health.Config{Failures: -1})
	fmt.Println(err)
	fmt.Println(errors.Is(err, coordination.ErrInvalidConfig))
	// Output:
	// leasehold: invalid config: health: Failures (-1) must not be negative
	// true
}
