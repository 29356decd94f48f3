package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/status"
	"github.com/leasehold/leasehold/workers"
)

// caseStatusOfSchedule: status shows a scheduled worker's next slot, the
// run in progress and its history, as text and as JSON.
func caseStatusOfSchedule(t *testing.T, tg testdb.Target) {
	driver, dsn := tg.OpenDSN(t)
	c, l := holdLease(t, driver, dsn, "schedule/nightly")
	slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	state := workers.ScheduleState{
		Done: slot.Add(-24 * time.Hour), Next: slot,
		Running: &workers.RunRecord{Slot: slot, Holder: c.Holder(), Epoch: l.Epoch(), Attempt: 1, Start: slot, Outcome: workers.OutcomeRunning},
		History: []workers.RunRecord{
			{Slot: slot.Add(-48 * time.Hour), Holder: c.Holder(), Epoch: l.Epoch(), Start: slot, End: slot, Outcome: workers.OutcomeSkipped, Skipped: 3},
			{Slot: slot.Add(-24 * time.Hour), Holder: c.Holder(), Epoch: l.Epoch(), Attempt: 2, Start: slot.Add(-24 * time.Hour),
				End: slot.Add(-24*time.Hour + time.Second), Outcome: workers.OutcomeOK},
		},
	}
	data, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetData(context.Background(), string(data)); err != nil {
		t.Fatal(err)
	}
	r := runCmd(t, dbEnv(driver, dsn), "status")
	if r.code != 0 {
		t.Fatalf("status: %+v", r)
	}
	for _, s := range []string{
		"SCHEDULE nightly  next 2026-03-01T02:00:00.000Z  done 2026-02-28T02:00:00.000Z  holder " + c.Holder(),
		"running: slot 2026-03-01T02:00:00.000Z",
		"skipped (3)", "2026-02-28T02:00:00.000Z  ok ",
	} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("status lacks %q:\n%s", s, r.stdout)
		}
	}
	r = runCmd(t, dbEnv(driver, dsn), "status", "-json")
	var snap status.Snapshot
	if err := json.Unmarshal([]byte(r.stdout), &snap); r.code != 0 || err != nil {
		t.Fatalf("status -json: %v, %+v", err, r)
	}
	if len(snap.Schedules) != 1 || snap.Schedules[0].Name != "nightly" || !snap.Schedules[0].State.Next.Equal(slot) ||
		len(snap.Schedules[0].State.History) != 2 || snap.Schedules[0].State.Running == nil {
		t.Fatalf("status -json schedules = %+v", snap.Schedules)
	}
}
