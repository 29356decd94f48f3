package workers_test

import (
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/workers"
)

// completedSlots returns the slots recorded in slot_done, in order.
func completedSlots(t *testing.T, db *gorm.DB) []int64 {
	t.Helper()
	var slots []int64
	if err := db.Raw("SELECT slot_us FROM slot_done ORDER BY slot_us").Scan(&slots).Error; err != nil {
		t.Fatalf("read completions: %v", err)
	}
	return slots
}

// waitCompleted waits until at least n slots are recorded.
func waitCompleted(t *testing.T, db *gorm.DB, n int) []int64 {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if s := completedSlots(t, db); len(s) >= n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d slots completed within %v", n, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestScheduledFailover fails PostgreSQL over, as coordination's
// TestFailoverRollback does, to a standby that lacks the job's last
// completions: their rows, in the lease row's data and in the
// application's table, are gone together. The holder keeps its term
// (the standby has it), and the lost slots run again: no slot is missing
// and none completed twice.
func TestScheduledFailover(t *testing.T) {
	t.Parallel()
	db := testdb.Target{Name: "postgres", Dialect: "postgres"}.Open(t)
	if err := db.Exec(completionsDDL).Error; err != nil {
		t.Fatalf("create slot_done: %v", err)
	}
	cfg := workers.ScheduleConfig{Every: 500 * time.Millisecond, Misfire: workers.MisfireRunAll, CatchUpLimit: 1000}
	a := startHost(t, db, "node-a", "test", fastConfig(), workers.Scheduled("tick", completingFn(db, "node-a"), cfg))
	b := startHost(t, db, "node-b", "test", fastConfig(), workers.Scheduled("tick", completingFn(db, "node-b"), cfg))

	// What the standby will have: the state after a few completions.
	waitCompleted(t, db, 3)
	var standbyData string
	var standbyDone int64
	if err := db.Transaction(func(tx *gorm.DB) error {
		st, row := scheduleState(t, tx, "tick")
		standbyData, standbyDone = row.Data, st.Done.UnixMicro()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitCompleted(t, db, len(completedSlots(t, db))+3)
	// Fail over just after a slot was recorded, while the holder waits for
	// the next one. (A failover that lands while a slot runs is the window
	// docs/design.md names: the run's outcome overwrites the older state.)
	pending(a.events)
	pending(b.events)
	for done := false; !done; {
		select {
		case ev := <-a.events:
			done = ev.Kind == workers.EventSlotDone
		case ev := <-b.events:
			done = ev.Kind == workers.EventSlotDone
		case <-time.After(wait):
			t.Fatalf("no slot completed within %v", wait)
		}
	}
	before := completedSlots(t, db)

	tables, _ := store.TablesFor("")
	err := db.Transaction(func(tx *gorm.DB) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"DELETE FROM slot_done WHERE slot_us > ?", []any{standbyDone}},
			{"UPDATE " + tables.Leases + " SET data = ? WHERE name = ?", []any{standbyData, workers.ScheduleLease("tick")}},
			{"UPDATE " + tables.Incarnation + " SET incarnation = 'old-primary'", nil},
			{"UPDATE " + tables.Sessions + " SET incarnation = 'old-primary'", nil},
		} {
			if err := tx.Exec(q.sql, q.args...).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("roll the database back: %v", err)
	}
	// The job goes on past what it had completed before the failover.
	last := before[len(before)-1]
	deadline := time.Now().Add(wait)
	var after []int64
	for {
		after = completedSlots(t, db)
		if after[len(after)-1] > last+int64(2*cfg.Every/time.Microsecond) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not go on after the failover: completed %v", after)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = a.stop(t)
	after = completedSlots(t, db)
	step := int64(cfg.Every / time.Microsecond)
	for i := 1; i < len(after); i++ {
		if d := after[i] - after[i-1]; d != step {
			t.Fatalf("completed slots %d then %d (a gap of %dus, want %dus): a slot was lost or completed twice\n%v",
				after[i-1], after[i], d, step, after)
		}
	}
	if !slices.Contains(after, last) {
		t.Fatalf("slot %d, completed before the failover and lost with it, was not run again", last)
	}
}
