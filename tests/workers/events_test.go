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

// TestOneEventStream: a host's subscription carries its workers' events
// only, each tagged with its worker and the key of its term, and the
// coordinator's own events (elections, memberships, releases) are on the
// coordinator's subscription, keyed by lease; a worker's events come after
// the coordinator's events they follow from.
func TestOneEventStream(t *testing.T) {
	runCases(t, []workerCase{{"CoordinatorEventsTagged", caseCoordinatorEventsTagged}})
}

func caseCoordinatorEventsTagged(t *testing.T, b *bundle) {
	idle := func(ctx context.Context, _ *coordination.Lease) error { <-ctx.Done(); return nil }
	share := func(ctx context.Context, _ coordination.Assignment) error { <-ctx.Done(); return nil }
	// A singleton and a partitioned worker of one name: their election
	// and pool share the key "global/billing", yet each event goes to
	// the right one.
	cfg := fastConfig()
	released := countReleases(t, &cfg)
	r := startHost(t, b.db, "node-a", "test", cfg,
		workers.GlobalSingleton("billing", idle), workers.GlobalPartitioned("billing", share, coordination.PoolConfig{}), workers.ClusterSingleton("other", idle))
	// Collect until each has been seen; the three terms start in any order.
	var elected, joined, other *coordination.Event
	var started, assigned, otherStarted *workers.Event
	deadline := time.After(wait)
	for elected == nil || joined == nil || other == nil || started == nil || assigned == nil || otherStarted == nil {
		select {
		case ev := <-r.coordEvents:
			switch {
			case ev.Kind != coordination.EventElected:
			case ev.Key == "global/billing":
				elected = &ev
			case strings.HasPrefix(ev.Key, "pool|global/billing|member|"):
				joined = &ev
			case ev.Key == "cluster/test/other":
				other = &ev
			}
		case ev := <-r.events:
			if ev.Kind == workers.EventWorkerError {
				t.Fatalf("worker error: %+v", ev)
			}
			switch {
			case ev.Kind == workers.EventStartedLeading && ev.Worker == "billing":
				started = &ev
			case ev.Kind == workers.EventAssignmentStarted && ev.Worker == "billing":
				assigned = &ev
			case ev.Kind == workers.EventStartedLeading && ev.Worker == "other":
				otherStarted = &ev
			}
		case <-deadline:
			t.Fatalf("within %v: elected %v, joined %v, other %v; started %v, assigned %v, other started %v",
				wait, elected, joined, other, started, assigned, otherStarted)
		}
	}
	if started.Key != "global/billing" || started.Epoch != elected.Epoch || started.Time.Before(elected.Time) {
		t.Fatalf("started-leading = %+v, want the term of the election's elected event %+v, after it", started, elected)
	}
	if assigned.Key != "global/billing" || assigned.Assignment == nil || assigned.Assignment.Key != "global/billing" ||
		assigned.Epoch != joined.Epoch || assigned.Time.Before(joined.Time) {
		t.Fatalf("assignment-started = %+v, want pool global/billing under the membership of %+v, after it", assigned, joined)
	}
	if otherStarted.Key != "cluster/test/other" || otherStarted.Epoch != other.Epoch {
		t.Fatalf("started-leading of other = %+v, want the term of %+v", otherStarted, other)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	// The coordinator released the election's lease at shutdown: its row
	// is free, and the releases counter has it. Its EventReleased, sent
	// while the coordinator shut down, may come after the coordinator's
	// event stream closed; when it came, it came before the worker's
	// stopped-leading.
	if row := leaseRow(t, b.db, "global/billing"); row.Holder != "" {
		t.Fatalf("global/billing not released at shutdown: %+v", row)
	}
	if n := released.n(); n < 2 {
		t.Fatalf("%d releases at shutdown, want at least the two elections'", n)
	}
	var releasedEv *coordination.Event
	for ev := range r.coordEvents {
		if ev.Kind == coordination.EventReleased && ev.Key == "global/billing" {
			releasedEv = &ev
		}
	}
	var stopped bool
	for ev := range r.events {
		if ev.Kind == workers.EventStoppedLeading && ev.Worker == "billing" {
			if !errors.Is(ev.Err, coordination.ErrClosed) || ev.Key != "global/billing" || ev.Epoch != elected.Epoch ||
				(releasedEv != nil && ev.Time.Before(releasedEv.Time)) {
				t.Fatalf("stopped-leading %+v, want the term of %+v with ErrClosed, after its release (%+v)", ev, elected, releasedEv)
			}
			stopped = true
		}
	}
	if !stopped {
		t.Fatal("no stopped-leading event")
	}
}
