package coordination_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// tryAcquire makes one attempt, bounded by wait.
func tryAcquire(e *coordination.Election) (*coordination.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return e.TryAcquire(ctx)
}

// attempting is the config of the process that makes the attempts: a
// trust window and a round bound no busy machine exhausts. An attempt is
// one round, bounded by the config's round time (three renew intervals
// with the fast timings: 600 ms), which a statement queued behind a busy
// core has outlasted on SQLite; and the cases assert the term it starts
// valid and its row live after it.
func attempting(b *bundle) coordination.Config {
	cfg := steady(b.fastConfig())
	cfg.RenewInterval = 2 * time.Second
	return cfg
}

// caseTryAcquireFree: one attempt on a free lease starts a term at epoch
// 1 that fences writes; while it is held, a second attempt and a campaign
// of the same election are refused, and after its release the next
// attempt gets the next epoch. A stopped coordinator refuses attempts.
func caseTryAcquireFree(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", attempting(b))
	e := election(t, a.Coordinator, coordination.GlobalScope, "try-free")
	l, err := tryAcquire(e)
	if err != nil {
		t.Fatalf("TryAcquire on a free lease: %v", err)
	}
	if l.Epoch() != 1 || l.Key() != "global/try-free" || !l.Valid() || !e.IsLeader() {
		t.Fatalf("TryAcquire = %s (valid %v), want a valid term global/try-free@1", l.Token(), l.Valid())
	}
	if got := row(t, b.db, l.Key()); got.Holder != a.Holder() || got.Epoch != 1 || !got.Live() {
		t.Fatalf("row = %+v, want live, held by %s at epoch 1", got, a.Holder())
	}
	if err := b.db.Transaction(func(tx *gorm.DB) error { return l.Fence(tx) }); err != nil {
		t.Fatalf("Fence of the term TryAcquire started: %v", err)
	}
	if _, err := tryAcquire(e); !errors.Is(err, coordination.ErrBusy) {
		t.Fatalf("TryAcquire while its lease is unreleased = %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := e.Campaign(ctx); !errors.Is(err, coordination.ErrBusy) {
		t.Fatalf("Campaign while a TryAcquire lease is unreleased = %v, want ErrBusy", err)
	}
	release(t, l)
	if err := b.db.Transaction(func(tx *gorm.DB) error { return l.Fence(tx) }); !errors.Is(err, coordination.ErrFenced) {
		t.Fatalf("Fence after release = %v, want ErrFenced", err)
	}
	l2, err := tryAcquire(e)
	if err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	if l2.Epoch() != 2 {
		t.Fatalf("TryAcquire after release = %s, want epoch 2", l2.Token())
	}
	release(t, l2)

	a.cancel()
	select {
	case <-a.Done():
	case <-time.After(wait):
		t.Fatalf("coordinator did not stop within %v", wait)
	}
	if _, err := tryAcquire(e); !errors.Is(err, coordination.ErrClosed) {
		t.Fatalf("TryAcquire on a stopped coordinator = %v, want ErrClosed", err)
	}
}

// caseTryAcquireHeld: an attempt on a lease another live process holds
// fails with ErrNotAcquired naming the holder and epoch, never with
// the session's loss (ErrLeaseLost) (this process's session is fine), and leaves the row as
// it was.
func caseTryAcquireHeld(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", b.fastConfig())
	c := start(t, b.db, "node-c", attempting(b))
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "try-held"))
	defer release(t, l)
	settle(t, b.db) // C's read on its node sees A's lease
	before := row(t, b.db, l.Key())
	ec := election(t, c.Coordinator, coordination.GlobalScope, "try-held")
	got, err := tryAcquire(ec)
	if err == nil {
		t.Fatalf("TryAcquire of a held lease returned %s", got.Token())
	}
	if !errors.Is(err, coordination.ErrNotAcquired) || !strings.Contains(err.Error(), a.Holder()) ||
		!strings.Contains(err.Error(), "epoch 1") || !strings.Contains(err.Error(), l.Key()) {
		t.Fatalf("TryAcquire of a held lease = %v, want ErrNotAcquired naming %s, %s and epoch 1", err, l.Key(), a.Holder())
	}
	if isSessionLost(err) {
		t.Fatalf("TryAcquire of a held lease = %v, want ErrNotAcquired alone, not the session's loss (ErrLeaseLost)", err)
	}
	after := row(t, b.db, l.Key())
	if after.Holder != before.Holder || after.Epoch != before.Epoch || after.Session != before.Session ||
		!after.AcquiredAt.Equal(before.AcquiredAt) {
		t.Fatalf("TryAcquire that failed changed the row: before %+v, after %+v", before, after)
	}
	if held := c.Renewal().Held; held != 0 || ec.IsLeader() {
		t.Fatalf("the process that failed to acquire holds %d leases", held)
	}
	if !l.Valid() {
		t.Fatalf("the holder's term ended after a failed attempt by another process: %v", l.Check())
	}
	// A failed attempt leaves the election free for a campaign.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	campaigned := make(chan error, 1)
	go func() {
		_, err := ec.Campaign(ctx)
		campaigned <- err
	}()
	cancel()
	if err := <-campaigned; !errors.Is(err, context.Canceled) {
		t.Fatalf("Campaign after a failed TryAcquire = %v, want context.Canceled", err)
	}
}

// caseTryAcquireAfterExpiry: once the holder's session has expired by the
// database clock, an attempt takes the lease under the next epoch, and
// the old holder's term ends.
func caseTryAcquireAfterExpiry(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", b.fastConfig())
	c := start(t, b.db, "node-c", attempting(b))
	old := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "try-expired"))
	defer release(t, old)
	expireNow(t, b.db, old.Key())
	l, err := tryAcquire(election(t, c.Coordinator, coordination.GlobalScope, "try-expired"))
	if err != nil {
		t.Fatalf("TryAcquire after the holder expired: %v", err)
	}
	defer release(t, l)
	if l.Epoch() != old.Epoch()+1 {
		t.Fatalf("TryAcquire after expiry = %s, want epoch %d", l.Token(), old.Epoch()+1)
	}
	if got := row(t, b.db, l.Key()); got.Holder != c.Holder() || got.Epoch != l.Epoch() || !got.Live() {
		t.Fatalf("row = %+v, want live, held by %s at epoch %d", got, c.Holder(), l.Epoch())
	}
	select {
	case <-old.Context().Done():
	case <-time.After(wait):
		t.Fatalf("the expired term was not ended within %v", wait)
	}
	if err := b.db.Transaction(func(tx *gorm.DB) error { return old.Fence(tx) }); !errors.Is(err, coordination.ErrFenced) {
		t.Fatalf("Fence of the expired term = %v, want ErrFenced", err)
	}
	if err := b.db.Transaction(func(tx *gorm.DB) error { return l.Fence(tx) }); err != nil {
		t.Fatalf("Fence of the new term: %v", err)
	}
}
