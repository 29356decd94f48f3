package coordination

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/memstore"
)

// TestHealthCheckPanicIsReportedLikeWork: a panicking health check is
// recovered into a *PanicError with its stack, reported as EventError, as
// panicking work is, and counts as a failed check.
func TestHealthCheckPanicIsReportedLikeWork(t *testing.T) {
	ms := memstore.New()
	cfg := fastConfig()
	cfg.HealthCheck = func(context.Context) error { panic("sick") }
	cfg.HealthInterval = 20 * time.Millisecond
	c, stop := bubbleCoordinator(t, ms, cfg)
	defer stop()
	events := c.Subscribe(t.Context(), 64)
	ev := recvEvent(t, events, func(ev Event) bool { return ev.Kind == EventError && errors.Is(ev.Err, ErrPanicked) })
	var pe *PanicError
	if !errors.As(ev.Err, &pe) || pe.Value != "sick" || !strings.Contains(string(pe.Stack), "TestHealthCheckPanicIsReportedLikeWork") {
		t.Fatalf("error event = %+v, want a *PanicError of \"sick\" with the check's stack", ev)
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		st := c.Renewal()
		known, unhealthy, last := st.HealthError != nil, st.Unhealthy, st.HealthError
		if known {
			if !unhealthy || !errors.Is(last, ErrPanicked) {
				t.Fatalf("after a panicking check: unhealthy %v, last error %v; want unhealthy with the panic", unhealthy, last)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no health check result")
		}
	}
}
