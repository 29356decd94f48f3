package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/history"
	procs "github.com/leasehold/leasehold/internal/proc"
)

// TestRecordKilledItems: an item a killed worker committed but did not
// record is taken from the table; one a live worker did not record is not,
// so the checker still reports it lost.
func TestRecordKilledItems(t *testing.T) {
	r, ctx := seededRun(t, 3)
	histDir := r.verdict.histDir
	// Item 1 recorded by the live worker, item 2 committed by the killed
	// one unrecorded, item 3 committed by the live one unrecorded.
	for id, holder := range map[int64]string{1: "live/chaos/a", 2: "killed/chaos/b", 3: "live/chaos/a"} {
		if err := r.database.db.Model(&Item{}).Where("id = ?", id).Updates(map[string]any{"processed_by": holder, "generation": 1}).Error; err != nil {
			t.Fatal(err)
		}
	}
	writeHistory := func(name, process string, pid int, evs ...history.Event) {
		rec, err := history.Create(filepath.Join(histDir, name), process)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if err := rec.Record(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		// The Recorder stamps this process's pid; give each file its own.
		b, err := os.ReadFile(filepath.Join(histDir, name))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(fmt.Sprintf(`"pid":%d`, os.Getpid())), []byte(fmt.Sprintf(`"pid":%d`, pid)))
		if err := os.WriteFile(filepath.Join(histDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeHistory("live.jsonl", "live/chaos/a", 1001, history.Event{Kind: history.ItemProcessed, Item: 1, Generation: 1})
	writeHistory("killed.jsonl", "killed/chaos/b", 1002, history.Event{Kind: history.Note, Text: "started"})
	r.fleet.procs = []*proc{
		{Process: &procs.Process{Pid: 1001}, node: "live"},
		{Process: &procs.Process{Pid: 1002}, node: "killed", killed: true},
	}
	h := reconcile(t, r, ctx)
	res := history.Check(h, history.Config{Items: 3})
	if len(res.Violations) != 1 || res.Violations[0].Kind != history.LostItems || !strings.Contains(res.Violations[0].Message, ": 3") {
		t.Fatalf("violations = %+v, want only item 3 lost", res.Violations)
	}
}

// TestRecordLostSlots: a slot completion recorded in a failover's loss
// window that the final table does not have is taken back, so the slot
// completed again on the new primary is not a duplicate; one outside the
// windows is left for rule S1 to report.
func TestRecordLostSlots(t *testing.T) {
	r, ctx := seededRun(t, 1)
	histDir := r.verdict.histDir
	// The table survived the failover: slot 1 completed by b at epoch 2
	// (again, after a's completion was lost), slot 2 by a, twice.
	const s1, s2 = int64(1_700_000_001_000_000_000), int64(1_700_000_002_000_000_000)
	for _, row := range []SlotRow{{Slot: s1, Epoch: 2, Holder: "b"}, {Slot: s2, Epoch: 3, Holder: "a"}, {Slot: s2, Epoch: 3, Holder: "a"}} {
		if err := r.database.db.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
	}
	completed := func(at, slot, epoch int64, holder string) history.Event {
		return history.Event{Kind: history.SlotCompleted, Time: at, Lease: ScheduleLease, Slot: slot, Epoch: epoch, Holder: holder}
	}
	rec, err := history.Create(filepath.Join(histDir, "workers.jsonl"), "workers")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []history.Event{
		completed(100, s1, 1, "a"), // in the loss window, not in the table: lost
		completed(300, s1, 2, "b"),
		completed(400, s2, 3, "a"),
		completed(500, s2, 3, "a"), // outside the windows: a duplicate
	} {
		if err := rec.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	r.verdict.lost(50, 200)
	h := reconcile(t, r, ctx)
	res := history.Check(h, history.Config{})
	if len(res.Violations) != 1 || res.Violations[0].Kind != history.DuplicateSlots || !strings.Contains(res.Violations[0].Message, "1 slots completed more than once: 2023-11-14T22:13:22Z") {
		t.Fatalf("violations = %+v, want only slot 2 completed twice", res.Violations)
	}
	if res.Stats.SlotsLost != 1 {
		t.Errorf("SlotsLost = %d, want 1", res.Stats.SlotsLost)
	}
}

// TestRecordGoneItems: after a failover to an asynchronous standby, an
// item the feeder inserted that the final table does not have was lost
// with the old primary and is not expected to be processed; without such
// a failover a missing item is still reported lost.
func TestRecordGoneItems(t *testing.T) {
	for _, failover := range []bool{true, false} {
		t.Run(fmt.Sprintf("failover=%v", failover), func(t *testing.T) {
			r, ctx := seededRun(t, 3)
			histDir := r.verdict.histDir
			// Item 2's insert is gone; items 1 and 3 were processed.
			if err := r.database.db.Delete(&Item{}, 2).Error; err != nil {
				t.Fatal(err)
			}
			rec, err := history.Create(filepath.Join(histDir, "workers.jsonl"), "workers")
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []int64{1, 3} {
				if err := rec.Record(history.Event{Kind: history.ItemProcessed, Item: id, Holder: "a", Generation: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if failover {
				r.verdict.lost(50, 200)
			}
			h := reconcile(t, r, ctx)
			res := history.Check(h, history.Config{Items: 3})
			if failover {
				if len(res.Violations) != 0 || res.Stats.ItemsGone != 1 {
					t.Fatalf("violations = %+v, ItemsGone = %d; want none and 1", res.Violations, res.Stats.ItemsGone)
				}
				return
			}
			if len(res.Violations) != 1 || res.Violations[0].Kind != history.LostItems || !strings.Contains(res.Violations[0].Message, ": 2") {
				t.Fatalf("violations = %+v, want only item 2 lost", res.Violations)
			}
		})
	}
}

// seededRun is a SQLite dialect run whose items table holds items 1..items,
// with its history directory made, closed when the test ends.
func seededRun(t *testing.T, items int) (*dialectRun, context.Context) {
	t.Helper()
	r := newDialectRun("sqlite", t.TempDir(), "", &bytes.Buffer{}, nil, Options{Items: items})
	if err := os.MkdirAll(r.verdict.histDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.database.open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.database.close)
	if err := r.database.seed(ctx, r.items); err != nil {
		t.Fatal(err)
	}
	return r, ctx
}

// reconcile runs the verdict's reconciliation of r's histories with its
// table, as the runner does, and returns the histories it leaves.
func reconcile(t *testing.T, r *dialectRun, ctx context.Context) history.History {
	t.Helper()
	var err error
	r.verdict.rec, err = history.Create(filepath.Join(r.verdict.histDir, "runner.jsonl"), "runner/chaos/sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.verdict.reconcileItems(ctx, r.items); err != nil {
		t.Fatal(err)
	}
	if err := r.verdict.rec.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadDir(r.verdict.histDir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
