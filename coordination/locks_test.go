package coordination

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
