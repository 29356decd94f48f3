package coordination

import (
	"errors"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/memstore"
)

// TestTryAcquireBesideItsOwnGiveBack: while this process's give-back of
// an earlier attempt that reported failure is under way on the lease, a
// TryAcquire of it fails with an error to try again, not ErrNotAcquired:
// no other holder has the lease. Once the give-back is done, the next
// attempt takes it.
func TestTryAcquireBesideItsOwnGiveBack(t *testing.T) {
	cfg := steady(fastConfig())
	r := startCoordinator(t, newCoordinator(memstore.New(), testIdentity(t, "node-a"), cfg.withDefaults()))
	e := election(t, r.Coordinator, GlobalScope, "given-back")
	var kept []string
	r.terms.call(func(st *termState) { kept = st.attempt([]string{e.Key()}, uncampaignedLease) })
	done := func() { r.terms.call(func(st *termState) { st.unattempt(kept) }) }
	if len(kept) != 1 {
		t.Fatalf("the give-back kept %v; want %s", kept, e.Key())
	}
	_, err := tryAcquire(e)
	if !errors.Is(err, ErrBusy) || errors.Is(err, ErrNotAcquired) || !strings.Contains(err.Error(), "try again") {
		t.Fatalf("TryAcquire beside the give-back: %v; want ErrBusy, to try again, not ErrNotAcquired", err)
	}
	done()
	l, err := tryAcquire(e)
	if err != nil {
		t.Fatalf("TryAcquire once the give-back is done: %v", err)
	}
	release(t, l)
}
