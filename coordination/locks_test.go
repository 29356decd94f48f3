package coordination

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/leasehold/leasehold/internal/memstore"
)

// TestLocksRowsBoundedTenThousand uses 10,000 distinct keys, on the
// in-process store: the rows left are the namespace's floor rows only.
func TestLocksRowsBoundedTenThousand(t *testing.T) {
	ms := memstore.New()
	cfg := steady(fastConfig())
	c := newCoordinator(ms, testIdentity(t, "node-a"), cfg.withDefaults())
	r := startCoordinator(t, c)
	ns := locks(t, r.Coordinator, GlobalScope, "files")
	const keys = 10000
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < keys; i += 8 {
				if err := ns.Do(context.Background(), fmt.Sprintf("file-%d", i), func(ctx context.Context, l *Lease) error {
					return l.Check()
				}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	all, err := ms.List(context.Background(), "")
	check(t, err)
	if len(all) > lockFloors {
		t.Fatalf("%d rows after %d distinct keys; want at most the %d floor rows", len(all), keys, lockFloors)
	}
	if n := len(ns.gates); n != 0 {
		t.Fatalf("%d key gates left in the process; want none", n)
	}
}

// TestAcquiringOneAttemptPerLease: two acquires of this process never
// attempt one lease at once, and a round's acquire leaves out the leases
// whose campaign was withdrawn since its read, such as a keyed lock that
// a later Lock's own first attempt may take meanwhile.
func TestAcquiringOneAttemptPerLease(t *testing.T) {
	st := &termState{attempting: make(map[string]struct{}), campaigns: make(map[string]*campaign)}
	first := st.attempt([]string{"a", "b"}, anyLease)
	second := st.attempt([]string{"a", "c"}, anyLease)
	st.campaigns["d"] = &campaign{}
	round := st.attempt([]string{"c", "d", "e"}, campaignedLease)
	if fmt.Sprint(first, second, round) != "[a b] [c] [d]" {
		t.Fatalf("kept %v, then %v, then in a round %v; want [a b], [c], [d]", first, second, round)
	}
	st.unattempt(first)
	st.unattempt(second)
	st.unattempt(round)
	if again := st.attempt([]string{"a", "b", "c", "d"}, anyLease); len(again) != 4 {
		t.Fatalf("kept %v once the others were done; want all four", again)
	}
}

// TestGrantsLogAtDebug: the acquire and release of a keyed lock or a
// semaphore slot log at debug, since they come with every call; those of
// an election's leadership at info.
func TestGrantsLogAtDebug(t *testing.T) {
	core, logs := zapobserver.New(zapcore.DebugLevel)
	cfg := steady(fastConfig())
	cfg.Logger = zap.New(core)
	r := startCoordinator(t, newCoordinator(memstore.New(), testIdentity(t, "node-a"), cfg.withDefaults()))
	ns := locks(t, r.Coordinator, GlobalScope, "files")
	check(t, ns.Do(context.Background(), "file-1", func(ctx context.Context, l *Lease) error { return nil }))
	sem, err := r.Semaphore(GlobalScope, "uploads", 2)
	check(t, err)
	sl, err := sem.Acquire(context.Background())
	check(t, err)
	check(t, sl.Release(context.Background()))
	e, err := r.Election(GlobalScope, "ledger")
	check(t, err)
	l, err := e.Campaign(context.Background())
	check(t, err)
	check(t, l.Release(context.Background()))

	want := map[string]zapcore.Level{ // by the row's kind, its key's prefix
		lockRowPrefix: zapcore.DebugLevel,
		semRowPrefix:  zapcore.DebugLevel,
		"global/":     zapcore.InfoLevel,
	}
	seen := map[string]int{}
	for _, e := range logs.All() {
		if e.Message != "acquired lease" && e.Message != "released lease" {
			continue
		}
		lease, _ := e.ContextMap()["lease"].(string)
		for prefix, lvl := range want {
			if strings.HasPrefix(lease, prefix) {
				seen[prefix+" "+e.Message]++
				if e.Level != lvl {
					t.Errorf("%q of %s logged at %v; want %v", e.Message, lease, e.Level, lvl)
				}
			}
		}
	}
	// A semaphore's Acquire may take a second slot, and give it back,
	// while it takes the first: each kind logs at least one of each.
	for prefix := range want {
		for _, msg := range []string{"acquired lease", "released lease"} {
			if seen[prefix+" "+msg] == 0 {
				t.Errorf("no %q line of the rows %s...", msg, prefix)
			}
		}
	}
}
