package workers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/workers"
)

// TestOneEventStream: a host's subscription carries its coordinator's
// events, each tagged with the worker whose election or pool it
// concerns, in the order they happened.
func TestOneEventStream(t *testing.T) {
	runCases(t, []workerCase{{"CoordinatorEventsTagged", caseCoordinatorEventsTagged}})
}

func caseCoordinatorEventsTagged(t *testing.T, b *bundle) {
	idle := func(ctx context.Context, _ *coordination.Lease) error { <-ctx.Done(); return nil }
	share := func(ctx context.Context, _ coordination.Assignment) error { <-ctx.Done(); return nil }
	// A singleton and a partitioned worker of one name: their election
	// and pool share the key "global/billing", yet each event goes to
	// the right one.
	r := startHost(t, b.db, "node-a", "test", fastConfig(),
		workers.GlobalSingleton("billing", idle), workers.GlobalPartitioned("billing", share, workers.PartitionConfig{}), workers.ClusterSingleton("other", idle))
	// Collect until each has been seen; the three terms start in any order.
	var elected, started, joined, other *workers.Event
	deadline := time.After(wait)
	for elected == nil || started == nil || joined == nil || other == nil {
		var ev workers.Event
		select {
		case ev = <-r.events:
		case <-deadline:
			t.Fatalf("within %v: elected %v, started %v, joined %v, other %v", wait, elected, started, joined, other)
		}
		isElected := ev.Kind == workers.EventCoordination && ev.Coordination.Kind == coordination.EventElected
		switch {
		case isElected && ev.Lease == "global/billing":
			elected = &ev
		case ev.Kind == workers.EventStartedLeading && ev.Worker == "billing":
			if elected == nil {
				t.Fatalf("started-leading %+v before the election's elected event", ev)
			}
			started = &ev
		case isElected && strings.HasPrefix(ev.Lease, "pool|"):
			joined = &ev
		case isElected && ev.Lease == "cluster/test/other":
			other = &ev
		}
	}
	if elected.Worker != "billing" || elected.Coordination.Pool != "" || elected.Epoch != elected.Coordination.Epoch {
		t.Fatalf("elected = %+v, want worker billing, no pool", elected)
	}
	if joined.Worker != "billing" || joined.Coordination.Pool != "global/billing" {
		t.Fatalf("membership elected = %+v, want worker billing, pool global/billing", joined)
	}
	if other.Worker != "other" {
		t.Fatalf("elected = %+v, want worker other", other)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	var released, stopped bool
	for ev := range r.events {
		switch {
		case ev.Kind == workers.EventCoordination && ev.Coordination.Kind == coordination.EventReleased && ev.Lease == "global/billing":
			released = true
		case ev.Kind == workers.EventStoppedLeading && ev.Worker == "billing":
			if !released || !errors.Is(ev.Err, coordination.ErrClosed) {
				t.Fatalf("stopped-leading %+v before the release was seen (%v)", ev, released)
			}
			stopped = true
		}
	}
	if !stopped {
		t.Fatal("no stopped-leading event")
	}
}
