package status_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/status"
	"github.com/leasehold/leasehold/workers"
)

// TestPageShowsSchedules runs a scheduled worker until it has a history,
// and reads its next slot and its runs from the page and its JSON.
func TestPageShowsSchedules(t *testing.T) {
	db := openSQLite(t)
	c := start(t, db, "node-a")
	slots := make(chan time.Time, 64)
	h, err := workers.NewHost(c, workers.Config{}, workers.Scheduled("report", func(_ context.Context, s *workers.Slot) error {
		slots <- s.Time
		return nil
	}, workers.ScheduleConfig{
		Every: 100 * time.Millisecond, HistoryLimit: 2,
		// Every slot runs, however late a busy machine starts it: the
		// history the page shows is then ok entries only.
		MisfireGrace: time.Hour,
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(wait):
			t.Errorf("host did not stop within %v", wait)
		}
	})
	// An election under the schedules' prefix that no scheduled worker
	// wrote to: it reads as a job that never ran.
	lead(t, start(t, db, "node-b"), coordination.GlobalScope, "schedule/odd")
	var third time.Time
	for range 3 {
		select {
		case third = <-slots:
		case <-time.After(wait):
			t.Fatalf("the scheduled worker ran no slot within %v", wait)
		}
	}

	srv := httptest.NewServer(status.Handler(c, status.Options{}))
	defer srv.Close()
	var snap status.Snapshot
	deadline := time.Now().Add(wait)
	for {
		code, _, body := fetch(t, srv.URL+"/status.json", "")
		if code != http.StatusOK {
			t.Fatalf("GET /status.json: %d\n%s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &snap); err != nil {
			t.Fatal(err)
		}
		if len(snap.Schedules) == 2 && len(snap.Schedules[1].State.History) == 2 && !snap.Schedules[1].State.History[1].Slot.Before(third) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("JSON never showed the third slot %v in the history: %s", third, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	odd, sc := snap.Schedules[0], snap.Schedules[1]
	if odd.Name != "odd" || odd.Error != "" || len(odd.State.History) != 0 {
		t.Errorf("schedule odd = %+v, want no runs", odd)
	}
	if sc.Name != "report" || sc.Lease.Key != workers.ScheduleLease("report") || sc.Lease.Holder != c.Holder() || !sc.Lease.Live ||
		!sc.State.Next.After(sc.State.Done) || sc.State.Done.Before(third) {
		t.Errorf("schedule = %+v, want report held by %s, done up to %v at least, and its next slot", sc, c.Holder(), third)
	}
	for _, r := range sc.State.History {
		if r.Outcome != workers.OutcomeOK || r.Epoch != sc.Lease.Epoch || r.Holder != sc.Lease.Holder || r.End.Before(r.Start) {
			t.Errorf("history entry %+v, want ok under epoch %d", r, sc.Lease.Epoch)
		}
	}

	_, _, html := fetch(t, srv.URL+"/status", "")
	for _, s := range []string{"<h2>Schedules</h2>", "<h3>report</h3>", "<h3>odd</h3>", `<p class="meta schedule">Next slot `,
		`<tr class="run">`, "<td>ok</td>"} {
		if !strings.Contains(html, s) {
			t.Errorf("the page lacks %q:\n%s", s, html)
		}
	}
}
