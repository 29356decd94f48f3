package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/health"
	"github.com/leasehold/leasehold/status"
)

// httpShutdown bounds the graceful shutdown of the HTTP server: requests
// in flight get this long to finish, then their connections are closed.
const httpShutdown = 5 * time.Second

// telemetry is the metrics pipeline behind /metrics: an OpenTelemetry
// MeterProvider whose reader is a Prometheus exporter on a registry of
// its own.
type telemetry struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
}

// newTelemetry returns the metrics pipeline.
func newTelemetry() (*telemetry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("create the Prometheus exporter: %w", err)
	}
	return &telemetry{provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)), registry: reg}, nil
}

// shutdown stops the MeterProvider, within httpShutdown.
func (t *telemetry) shutdown(log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdown)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		log.Warn("stopping the metrics failed", zap.Error(err))
	}
}

// httpServer serves /metrics, /healthz, /readyz, /status and
// /status.json on one listener.
type httpServer struct {
	srv  *http.Server
	ln   net.Listener
	log  *zap.Logger
	done chan struct{} // closed when Serve has returned
}

// startHTTP listens on addr and serves the endpoints of coord in a
// goroutine until stop.
func startHTTP(addr string, coord *coordination.Coordinator, tel *telemetry, log *zap.Logger) (*httpServer, error) {
	// The zero health.Config gives the documented defaults.
	live, err := health.Liveness(coord, health.Config{})
	if err != nil {
		return nil, err
	}
	ready, err := health.Readiness(coord, health.Config{})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(tel.registry, promhttp.HandlerOpts{}))
	mux.Handle("GET /healthz", live)
	mux.Handle("GET /readyz", ready)
	page := status.Handler(coord, status.Options{Title: "leasehold sample: " + coord.Holder(), Logger: log})
	mux.Handle("GET /status", page)
	mux.Handle("GET /status.json", page)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on -http %s: %w", addr, err)
	}
	h := &httpServer{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			ErrorLog:          zap.NewStdLog(log.Named("http")),
		},
		ln:   ln,
		log:  log,
		done: make(chan struct{}),
	}
	go func() {
		defer close(h.done)
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the HTTP server stopped", zap.Error(err))
		}
	}()
	base := "http://" + ln.Addr().String()
	log.Info("serving HTTP", zap.String("addr", ln.Addr().String()),
		zap.String("status", base+"/status"), zap.String("metrics", base+"/metrics"))
	return h, nil
}

// stop shuts the server down gracefully, for at most httpShutdown, then
// closes what is left, and waits for Serve to return.
func (h *httpServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdown)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		h.log.Warn("the HTTP server did not shut down in time; closing it", zap.Error(err))
		_ = h.srv.Close()
	}
	<-h.done
}
