package coordination_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
)

// caseFencedTransactionsKeepTerm runs fenced transactions back to back,
// each holding its transaction open for a good part of RenewInterval with
// only a short gap before the next, for several TTLs. On SQLite every one
// of them holds the database's single write lock, so the holder's own
// renewal statement almost never gets in. The fenced term must survive, and
// so must another lease the same process holds without fencing anything
// with it: no EventLost, no ErrLeaseLost, and every fenced write commits.
func caseFencedTransactionsKeepTerm(t *testing.T, b *bundle) {
	if err := b.db.AutoMigrate(&fencedWrite{}); err != nil {
		t.Fatal(err)
	}
	cfg := coordination.Config{
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
	events := a.Subscribe(t.Context(), 256)
	var lostEvents atomic.Int64
	lostSeen := make(chan coordination.Event, 1)
	go func() {
		for ev := range events {
			if ev.Kind == coordination.EventLost {
				lostEvents.Add(1)
				select {
				case lostSeen <- ev:
				default:
				}
			}
		}
	}()
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "busy-writer"))
	bystander := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "bystander"))
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
	for _, l := range []*coordination.Lease{l, bystander} {
		if err := l.Check(); err != nil {
			t.Fatalf("after %d fenced transactions over %v (TTL %v): %v", txns, elapsed, cfg.TTL, err)
		}
	}
	if errors.Is(context.Cause(l.Context()), coordination.ErrLeaseLost) {
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
	if got := row(t, b.db, l.Key()); got.Holder != a.Holder() || got.Epoch != l.Epoch() || !got.Live() {
		t.Fatalf("row after the fenced transactions: %+v", got)
	}
	t.Logf("%d fenced transactions of %v over %v (TTL %v): both terms held throughout", txns, hold, elapsed.Round(time.Millisecond), cfg.TTL)
	release(t, l)
	release(t, bystander)
	if lostEvents.Load() != 0 {
		t.Fatalf("%d EventLost", lostEvents.Load())
	}
}

// caseRolledBackFenceExtendsNothing holds one fenced transaction open past
// the holder's trust deadline and then rolls it back. Whatever the fencing
// check wrote inside that transaction must not keep the term: the holder
// stops trusting it while the transaction is open, the row expires by the
// database clock, and a renewal the check wrote inside the transaction
// (on SQLite) is gone after the rollback, so the row stays expired.
func caseRolledBackFenceExtendsNothing(t *testing.T, b *bundle) {
	if err := b.db.AutoMigrate(&fencedWrite{}); err != nil {
		t.Fatal(err)
	}
	cfg := coordination.Config{TTL: 2 * time.Second, RenewInterval: 667 * time.Millisecond, Margin: 400 * time.Millisecond}
	a := start(t, b.db, "node-a", cfg)
	c := start(t, b.db, "node-c", cfg)
	events := a.Subscribe(t.Context(), 64)
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "rolled-back"))
	tables := rawStore(t, b.db).Tables()
	if !rawStore(t, b.db).SerializesWriters() {
		fenceDoesNotHoldOffRenewal(t, b, a, l, events)
		return
	}

	tx := b.db.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	rolledBack := false
	defer func() {
		if !rolledBack {
			tx.Rollback()
		}
	}()
	if err := l.Fence(tx); err != nil {
		t.Fatalf("Fence: %v", err)
	}
	if err := tx.Create(&fencedWrite{ID: 1, Epoch: l.Epoch()}).Error; err != nil {
		t.Fatal(err)
	}
	var inTx int64 // the session's renewed_at_us as the transaction itself sees it
	if err := tx.Raw("SELECT renewed_at_us FROM "+tables.Sessions+" WHERE id IN (SELECT session_id FROM "+tables.Leases+
		" WHERE name = ?)", l.Key()).Row().Scan(&inTx); err != nil {
		t.Fatal(err)
	}
	// The transaction stays open: the holder's renewals cannot get in (the
	// write lock on SQLite, the row lock elsewhere), and nothing written
	// inside it is committed. Once the row reads as expired by the
	// database clock, the holder must already have stopped trusting it.
	deadline := time.Now().Add(wait)
	var outside store.Row
	for {
		outside = row(t, b.db, l.Key())
		if !outside.Live() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the row is still live %v after the fenced transaction began: %+v", wait, outside)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l.Valid() {
		t.Fatalf("the row expired by the database clock (%+v) while the holder still trusts the term (deadline in %v)",
			outside, time.Until(l.TrustDeadline()))
	}
	ev := recvEvent(t, events, kindIs(coordination.EventLost, l.Key()))
	if !errors.Is(ev.Err, coordination.ErrLeaseLost) {
		t.Fatalf("lost event %v, want ErrLeaseLost", ev.Err)
	}
	rolledBack = true
	if err := tx.Rollback().Error; err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if inTx != outside.RenewedAt.UnixMicro() {
		// The check renewed the session inside the transaction. After the
		// rollback the row is as it was: expired, not renewed.
		if got := row(t, b.db, l.Key()); got.Live() || !got.RenewedAt.Equal(outside.RenewedAt) {
			t.Fatalf("row after the fenced transaction rolled back: %+v; want it as before, %+v", got, outside)
		}
		t.Logf("the fencing check renewed the term inside the transaction; the rollback undid it")
	}
	l2 := mustCampaign(t, election(t, c.Coordinator, coordination.GlobalScope, "rolled-back"))
	if l2.Epoch() != l.Epoch()+1 {
		t.Fatalf("follower epoch %d, want %d", l2.Epoch(), l.Epoch()+1)
	}
	var n int64
	if err := b.db.Model(&fencedWrite{}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows from the rolled-back transaction", n)
	}
	release(t, l)
	release(t, l2)
}

// fenceDoesNotHoldOffRenewal is the same case where a fenced transaction
// locks the lease row only (PostgreSQL, MySQL, SQL Server): the session
// the term rides on is another row, so its renewals go on while a fenced
// transaction stays open for two TTLs, and the term never ends.
func fenceDoesNotHoldOffRenewal(t *testing.T, b *bundle, a *running, l *coordination.Lease, events <-chan coordination.Event) {
	renewed := renewSignal(t, a)
	tx := b.db.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	defer tx.Rollback()
	if err := l.Fence(tx); err != nil {
		t.Fatalf("Fence: %v", err)
	}
	if err := tx.Create(&fencedWrite{ID: 1, Epoch: l.Epoch()}).Error; err != nil {
		t.Fatal(err)
	}
	ttl := a.Config().TTL
	for ticks := 0; ticks < int(2*ttl/a.Config().RenewInterval)+1; ticks++ {
		recvInt(t, renewed) // a renewal completed while the row lock is held
	}
	if !l.Valid() {
		t.Fatalf("the term ended while a fenced transaction held its row: %v", l.Check())
	}
	select {
	case ev := <-events:
		if ev.Kind == coordination.EventLost {
			t.Fatalf("lost while fenced: %v", ev.Err)
		}
	default:
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatalf("commit after two TTLs: %v", err)
	}
	release(t, l)
}
