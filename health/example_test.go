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
	live, err := health.Liveness(coord, health.WithHeadroom(5*time.Second))
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", live)
	mux.Handle("GET /readyz", health.Readiness(coord))
	srv := &http.Server{Addr: ":8081", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
}

// An active/passive service sends traffic only to the process that leads
// the election "primary": only the leader reports ready.
func ExampleReadyWhenLeading() {
	var coord *coordination.Coordinator // from coordination.New, running in its own goroutine
	e, err := coord.Election(coordination.ClusterScope, "primary")
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", health.ReadyWhenLeading(e))
}

// A process whose HealthCheck fails stops campaigning; with
// RequireHealthy its readiness probe fails too, naming the reason, so the
// orchestrator sends it no traffic and shows why.
func ExampleRequireHealthy() {
	var coord *coordination.Coordinator // from coordination.New with a Config.HealthCheck
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", health.Readiness(coord, health.RequireHealthy()))
}

// Liveness rejects an option whose value is out of range, naming the
// option and the value, rather than keeping the default.
func ExampleWithFailures() {
	var coord *coordination.Coordinator // from coordination.New
	_, err := health.Liveness(coord, health.WithFailures(0))
	fmt.Println(err)
	fmt.Println(errors.Is(err, health.ErrInvalidOption))
	_, err = health.Liveness(coord, health.WithFailures(3), health.WithHeadroom(-time.Second))
	fmt.Println(err)
	// Output:
	// leasehold: invalid health option: WithFailures(0): want at least 1 failed renewal
	// true
	// leasehold: invalid health option: WithHeadroom(-1s): want a positive duration
}
