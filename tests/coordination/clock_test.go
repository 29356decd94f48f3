package coordination_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestApplicationClockHoursOff runs two coordinators whose clock is
// decades off the database's: inside a synctest bubble time.Now starts at
// 2000-01-01 and jumps ahead whenever every goroutine waits, while the
// database keeps real time. Every lease decision must still follow the
// database clock: leases live exactly TTL by it, and a holder cut off from
// the database is replaced only once the database says its lease expired.
func TestApplicationClockHoursOff(t *testing.T) {
	t.Parallel() // see runCasesOn
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			driver, dsn := tg.OpenDSN(t)
			faketime.Test(t, func(t *testing.T) {
				appClockOffCase(t, driver, dsn)
			})
		})
	}
}

func appClockOffCase(t *testing.T, driver, dsn string) {
	if y := time.Now().Year(); y != 2000 {
		t.Fatalf("bubble clock year %d, want 2000", y)
	}
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	cfg := fastConfig()
	cfg.Logger = zaptest.NewLogger(t)
	// The bubble's clock advances only while every goroutine in it waits
	// on the bubble; a listener waiting on a socket for notifications
	// never does. The case is about the clock, and wake-ups are hints.
	cfg.DisableNotifications = true
	cfg = withDefaults(t, cfg)

	fa := &faultStore{Backend: storeFor(t, db, cfg)}
	a := newCoordinator(t, fa, testIdentity(t, "node-a"), cfg)
	b := newCoordinator(t, storeFor(t, db, cfg), testIdentity(t, "node-b"), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	for _, c := range []*coordination.Coordinator{a, b} {
		go func() { _ = c.Run(ctx) }()
		<-c.Ready()
	}
	defer func() {
		cancel()
		<-a.Done()
		<-b.Done()
	}()

	ea, _ := a.Election(coordination.GlobalScope, "clock")
	eb, _ := b.Election(coordination.GlobalScope, "clock")
	la, err := ea.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sessionA := sessionOf(t, db, la) // the row is a's while a holds it
	info, err := ea.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.DatabaseTime.Year() < 2020 {
		t.Fatalf("database clock reads %v; the test needs it far from the bubble's %v", info.DatabaseTime, time.Now())
	}
	// The session was renewed by the database's clock, and expires exactly
	// TTL after, by the same clock. (Whether it is still live at the read
	// depends on how long the read took on a busy machine: the bubble's
	// clock, which schedules the renewals, stands still while a statement
	// runs, and the database's does not.)
	if life := info.ExpiresAt.Sub(info.RenewedAt); life != cfg.TTL {
		t.Fatalf("lease renewed at %v expires at %v, %v later; want TTL, %v", info.RenewedAt, info.ExpiresAt, life, cfg.TTL)
	}
	if age := info.DatabaseTime.Sub(info.RenewedAt); age < 0 || age > wait {
		t.Fatalf("lease renewed %v before the database's now (%v), want within [0, %v]", age, info.DatabaseTime, wait)
	}
	t.Logf("application clock %v, database clock %v: %v apart",
		time.Now().Format(time.RFC3339), info.DatabaseTime.Format(time.RFC3339), time.Until(info.DatabaseTime).Round(time.Hour))

	// b campaigns while a holds and renews.
	got := make(chan *coordination.Lease, 1)
	go func() {
		lb, err := eb.Campaign(ctx)
		if err != nil {
			lb = nil
		}
		got <- lb
	}()

	// Cut a off. Its trust deadline passes on its own clock, and it stops.
	fa.failAll.Store(true)
	select {
	case <-la.Context().Done():
	case <-time.After(time.Hour):
		t.Fatalf("cut-off holder did not stop")
	}
	// a's last renewal, as the database recorded it: a's session row, which
	// no takeover changes. (The lease row may already be b's: b takes over
	// once the database's clock passes a's expiry, and a's own clock, the
	// bubble's, stands still while statements run, so a can reach its
	// trust deadline after b's takeover; a's clock runs slow there, not
	// the library.)
	last, ok, err := rawStore(t, db).ReadSession(context.Background(), sessionA)
	if err != nil || !ok {
		t.Fatalf("a's session %s: found %v, %v", sessionA, ok, err)
	}

	var lb *coordination.Lease
	select {
	case lb = <-got:
	case <-time.After(time.Hour): // fake time; about 36,000 polls
		t.Fatalf("b never took over")
	}
	if lb == nil {
		t.Fatalf("b's campaign failed")
	}
	now := row(t, db, lb.Key())
	if now.Holder != b.Holder() || now.Epoch != la.Epoch()+1 {
		t.Fatalf("after takeover: %+v", now)
	}
	// The takeover happened by the database clock, not before a's lease
	// expired there, whatever the application clocks said.
	if now.AcquiredAt.Before(last.ExpiresAt) {
		t.Fatalf("b acquired at %v, before a's lease expired at %v (database clock)", now.AcquiredAt, last.ExpiresAt)
	}
	t.Logf("b took over %v after a's database expiry", now.AcquiredAt.Sub(last.ExpiresAt))
	fa.failAll.Store(false)
	_ = la.Release(ctx)
	_ = lb.Release(ctx)
}
