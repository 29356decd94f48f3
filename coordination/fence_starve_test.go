package coordination

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
)

// caseFencedTransactionsKeepTerm runs fenced transactions back to back,
// each holding its transaction open for a good part of RenewInterval with
// only a short gap before the next, for several TTLs. On SQLite every one
// of them holds the database's single write lock, so the holder's own
// renewal statement almost never gets in. The term must survive: no
// EventLost, no ErrLeaseLost, and every fenced write commits.
func caseFencedTransactionsKeepTerm(t *testing.T, b *bundle) {
	if err := b.db.AutoMigrate(&fencedWrite{}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		TTL:           2 * time.Second,
		RenewInterval: 667 * time.Millisecond,
		Margin:        400 * time.Millisecond,
	}
	const (
		txns = 40                     // 40 × (150ms + 5ms): about three TTLs
		hold = 150 * time.Millisecond // how long each fenced transaction stays open
		gap  = 5 * time.Millisecond   // pause between two fenced transactions
	)
	a := start(t, b.db, "node-a", cfg)
	events, unsub := a.Subscribe(256)
	defer unsub()
	var lostEvents atomic.Int64
	lostSeen := make(chan Event, 1)
	go func() {
		for ev := range events {
			if ev.Kind == EventLost {
				lostEvents.Add(1)
				select {
				case lostSeen <- ev:
				default:
				}
			}
		}
	}()
	l := mustCampaign(t, election(t, a.Coordinator, GlobalScope, "busy-writer"))
	began := time.Now()
	for i := range txns {
		err := b.db.Transaction(func(tx *gorm.DB) error {
			if err := l.Fence(tx); err != nil {
				return err
			}
			if err := tx.Create(&fencedWrite{ID: i + 1, Epoch: l.Epoch()}).Error; err != nil {
				return err
			}
			time.Sleep(hold)
			return nil
		})
		if err != nil {
			t.Fatalf("fenced transaction %d of %d, %v after the first: %v (lease check: %v)",
				i+1, txns, time.Since(began).Round(time.Millisecond), err, l.Check())
		}
		time.Sleep(gap)
	}
	elapsed := time.Since(began)
	if err := l.Check(); err != nil {
		t.Fatalf("after %d fenced transactions over %v (TTL %v): %v", txns, elapsed, cfg.TTL, err)
	}
	if errors.Is(context.Cause(l.Context()), ErrLeaseLost) {
		t.Fatalf("term ended with %v", context.Cause(l.Context()))
	}
	select {
	case ev := <-lostSeen:
		t.Fatalf("EventLost during fenced transactions: %v", ev.Err)
	default:
	}
	var n int64
	if err := b.db.Model(&fencedWrite{}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != txns {
		t.Fatalf("%d fenced writes committed, want %d", n, txns)
	}
	if got := row(t, b.db, l.Name()); got.Holder != a.Holder() || got.Epoch != l.Epoch() || !got.Live() {
		t.Fatalf("row after the fenced transactions: %+v", got)
	}
	t.Logf("%d fenced transactions of %v over %v (TTL %v): the term held throughout", txns, hold, elapsed.Round(time.Millisecond), cfg.TTL)
	release(t, l)
	if lostEvents.Load() != 0 {
		t.Fatalf("%d EventLost", lostEvents.Load())
	}
}
