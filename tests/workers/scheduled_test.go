package workers_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/migrations"
	"github.com/leasehold/leasehold/workers"
)

// TestScheduled runs the scheduled worker's cases on every database.
func TestScheduled(t *testing.T) {
	t.Parallel()
	runCases(t, []workerCase{
		{"SlotsInOrder", caseScheduledSlotsInOrder},
		{"NoSlotCompletedTwice", caseScheduledNoSlotCompletedTwice},
		{"PausedHolderCannotComplete", caseScheduledPausedHolderCannotComplete},
		{"MisfireSkip", caseScheduledMisfire(workers.MisfireSkip)},
		{"MisfireRunOnce", caseScheduledMisfire(workers.MisfireRunOnce)},
		{"MisfireRunAll", caseScheduledMisfire(workers.MisfireRunAll)},
		{"InterruptedRetry", caseScheduledInterrupted(workers.InterruptRetry)},
		{"InterruptedAbandon", caseScheduledInterrupted(workers.InterruptAbandon)},
		{"HistoryBounded", caseScheduledHistoryBounded},
		{"Traced", caseScheduledTraced},
	})
}

// slotDone waits for the next EventSlotDone of worker on r.
func slotDone(t *testing.T, r *running, worker string) workers.Event {
	t.Helper()
	return recvEvent(t, r.events, "slot-done of "+worker, hostEvent(workers.EventSlotDone, worker))
}

// scheduleState reads a scheduled worker's state from its lease row.
func scheduleState(t testing.TB, db *gorm.DB, worker string) (workers.ScheduleState, store.Row) {
	t.Helper()
	row := leaseRow(t, db, workers.ScheduleLease(worker))
	s, err := workers.DecodeScheduleState(row.Data)
	if err != nil {
		t.Fatalf("decode the state of %q: %v (data %q)", worker, err, row.Data)
	}
	return s, row
}

// seedSchedule writes state into a scheduled worker's lease row before any
// host runs it; state gets the database clock.
func seedSchedule(t testing.TB, db *gorm.DB, worker string, state func(now time.Time) workers.ScheduleState) {
	t.Helper()
	s, err := store.New(db, store.Options{})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	ctx := context.Background()
	if _, err := migrations.Migrate(ctx, db, migrations.Options{}); err != nil {
		t.Fatalf("migrations.Migrate: %v", err)
	}
	name := workers.ScheduleLease(worker)
	if err := s.EnsureRows(ctx, []string{name}); err != nil {
		t.Fatalf("EnsureRows(%q): %v", name, err)
	}
	rows, err := s.Get(ctx, []string{name})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Get(%q): %v, %d rows", name, err, len(rows))
	}
	// The data is the state as the scheduled worker writes it: its JSON
	// (workers/schedule.go, ScheduleState.encode).
	b, err := json.Marshal(state(rows[0].Now))
	if err != nil {
		t.Fatalf("encode the state of %q: %v", name, err)
	}
	data := string(b)
	got, err := workers.DecodeScheduleState(data)
	if again, _ := json.Marshal(got); err != nil || string(again) != data {
		t.Fatalf("the seeded state of %q decodes as %+v (%v), which encodes as %s; want %s", name, got, err, again, data)
	}
	if err := db.Exec("UPDATE "+s.Tables().Leases+" SET data = ? WHERE name = ?", data, name).Error; err != nil {
		t.Fatalf("seed the state of %q: %v", name, err)
	}
}

func caseScheduledSlotsInOrder(t *testing.T, b *bundle) {
	const every = 200 * time.Millisecond
	var mu sync.Mutex
	var slots []time.Time
	fn := func(ctx context.Context, s *workers.Slot) error {
		mu.Lock()
		defer mu.Unlock()
		slots = append(slots, s.Time)
		return nil
	}
	r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.Scheduled("ticker", fn, workers.ScheduleConfig{Every: every}))
	var done []workers.Event
	for range 5 {
		done = append(done, slotDone(t, r, "ticker"))
	}
	for i, ev := range done {
		if ev.Err != nil {
			t.Fatalf("slot %d failed: %v", i, ev.Err)
		}
		if ev.Slot.UnixNano()%int64(every) != 0 {
			t.Fatalf("slot %v is not a multiple of %v", ev.Slot, every)
		}
		if i > 0 && !ev.Slot.After(done[i-1].Slot) {
			t.Fatalf("slots out of order: %v after %v", ev.Slot, done[i-1].Slot)
		}
	}
	mu.Lock()
	for i := 1; i < len(slots); i++ {
		if !slots[i].After(slots[i-1]) {
			t.Fatalf("the function saw slots out of order: %v", slots)
		}
	}
	mu.Unlock()
	hs, err := r.Status(context.Background())
	if err != nil || len(hs.Leading) != 1 || hs.Leading[0].Kind != "scheduled" || hs.Leading[0].Key != workers.ScheduleLease("ticker") {
		t.Fatalf("Status = %+v, %v; want it leading the scheduled worker's lease", hs, err)
	}
	st, row := scheduleState(t, b.db, "ticker")
	if len(st.History) < 5 || !st.Next.After(st.Done) || !st.Done.Before(row.Now.Add(time.Second)) {
		t.Fatalf("state after 5 slots: %+v (database clock %v)", st, row.Now)
	}
	for _, h := range st.History {
		// A loaded machine may start a term's first slots more than
		// MisfireGrace late: skipped, then. Every other entry is a run.
		if (h.Outcome != workers.OutcomeOK && h.Outcome != workers.OutcomeSkipped) || h.Epoch != row.Epoch || h.Holder != r.Coordinator().Holder() || h.End.Before(h.Start) {
			t.Fatalf("history entry %+v, want ok under epoch %d by %s", h, row.Epoch, r.Coordinator().Holder())
		}
	}
}

// completions records, in the database, each completed slot with the
// epoch that completed it, in the transaction of its completion.
const completionsDDL = "CREATE TABLE slot_done (slot_us BIGINT NOT NULL, holder VARCHAR(200) NOT NULL, epoch BIGINT NOT NULL)"

func completingFn(db *gorm.DB, host string) workers.ScheduledFunc {
	return func(ctx context.Context, s *workers.Slot) error {
		return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("INSERT INTO slot_done (slot_us, holder, epoch) VALUES (?, ?, ?)", s.Time.UnixMicro(), host, s.Epoch).Error; err != nil {
				return err
			}
			return s.Complete(tx)
		})
	}
}

// duplicateSlots returns the slots recorded as completed more than once.
func duplicateSlots(t *testing.T, db *gorm.DB) (dups []int64, total int64) {
	t.Helper()
	if err := db.Raw("SELECT COUNT(*) FROM slot_done").Scan(&total).Error; err != nil {
		t.Fatalf("count completions: %v", err)
	}
	if err := db.Raw("SELECT slot_us FROM slot_done GROUP BY slot_us HAVING COUNT(*) > 1").Scan(&dups).Error; err != nil {
		t.Fatalf("count duplicate completions: %v", err)
	}
	return dups, total
}

func caseScheduledNoSlotCompletedTwice(t *testing.T, b *bundle) {
	if err := b.db.Exec(completionsDDL).Error; err != nil {
		t.Fatalf("create slot_done: %v", err)
	}
	cfg := workers.ScheduleConfig{Every: 100 * time.Millisecond, Misfire: workers.MisfireRunAll, CatchUpLimit: 50}
	var hosts []*running
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		hosts = append(hosts, startHost(t, b.db, node, "test", fastConfig(), workers.Scheduled("tick", completingFn(b.db, node), cfg)))
	}
	// Twice: let slots complete, then make the holder's session expire
	// under it, as if it had been paused or killed; another copy takes
	// the job over while the old holder is still running.
	for round := range 2 {
		var last workers.Event
		for _, r := range hosts {
			for _, ev := range pending(r.events) {
				if ev.Kind == workers.EventSlotDone {
					last = ev
				}
			}
		}
		seen := 0
		deadline := time.After(wait)
		for seen < 5 {
			select {
			case <-deadline:
				t.Fatalf("round %d: only %d slots completed within %v", round, seen, wait)
			case <-time.After(10 * time.Millisecond):
			}
			for _, r := range hosts {
				for _, ev := range pending(r.events) {
					if ev.Kind == workers.EventSlotDone {
						seen++
						last = ev
					}
				}
			}
		}
		expireNow(t, b.db, last.Key)
	}
	// Completions go on after the takeovers.
	_, before := duplicateSlots(t, b.db)
	deadline := time.After(wait)
	for {
		_, n := duplicateSlots(t, b.db)
		if n >= before+5 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("no completions after the takeovers: %d, then %d", before, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, r := range hosts {
		_ = r.stop(t)
	}
	dups, total := duplicateSlots(t, b.db)
	if len(dups) > 0 {
		t.Fatalf("%d of %d completions were of slots completed before: %v", len(dups), total, dups)
	}
	st, _ := scheduleState(t, b.db, "tick")
	if st.Running != nil && st.Running.Outcome != workers.OutcomeRunning {
		t.Fatalf("state left %+v running", st.Running)
	}
}

func caseScheduledPausedHolderCannotComplete(t *testing.T, b *bundle) {
	if err := b.db.Exec(completionsDDL).Error; err != nil {
		t.Fatalf("create slot_done: %v", err)
	}
	cfg := workers.ScheduleConfig{Every: 300 * time.Millisecond}
	release := make(chan struct{})
	completeErr := make(chan error, 1)
	var once sync.Once
	pausedFn := func(ctx context.Context, s *workers.Slot) error {
		first := false
		once.Do(func() { first = true })
		if !first {
			return completingFn(b.db, "node-a")(ctx, s)
		}
		<-release // a pause: the holder ignores the end of its term
		err := completingFn(b.db, "node-a")(context.Background(), s)
		completeErr <- err
		return err
	}
	a := startHost(t, b.db, "node-a", "test", fastConfig(), workers.Scheduled("paused", pausedFn, cfg))
	started := recvEvent(t, a.events, "node-a starting a slot", hostEvent(workers.EventSlotStarted, "paused"))
	expireNow(t, b.db, started.Key)
	bh := startHost(t, b.db, "node-b", "test", fastConfig(), workers.Scheduled("paused", completingFn(b.db, "node-b"), cfg))
	// node-b takes over and runs the interrupted slot again.
	retried := recvEvent(t, bh.events, "node-b completing the paused slot", func(ev workers.Event) bool {
		return ev.Kind == workers.EventSlotDone && ev.Worker == "paused" && ev.Slot.Equal(started.Slot)
	})
	if retried.Err != nil || retried.Epoch <= started.Epoch {
		t.Fatalf("node-b's run of the slot: %+v; want it to complete under an epoch above %d", retried, started.Epoch)
	}
	close(release)
	select {
	case err := <-completeErr:
		if !errors.Is(err, coordination.ErrFenced) {
			t.Fatalf("the paused holder's completion returned %v, want ErrFenced", err)
		}
	case <-time.After(wait):
		t.Fatalf("the paused holder's function did not return")
	}
	var n int64
	if err := b.db.Raw("SELECT COUNT(*) FROM slot_done WHERE slot_us = ?", started.Slot.UnixMicro()).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("slot %v completed %d times, want once", started.Slot, n)
	}
	st, _ := scheduleState(t, b.db, "paused")
	var attempts []string
	for _, h := range st.History {
		if h.Slot.Equal(started.Slot) {
			attempts = append(attempts, string(h.Outcome))
		}
	}
	if strings.Join(attempts, ",") != "interrupted,ok" {
		t.Fatalf("history of slot %v: %v, want interrupted,ok", started.Slot, attempts)
	}
}

// caseScheduledMisfire seeds a job whose last slot was five hours ago, on
// an hourly schedule, and checks what the first holder does with the five
// slots missed.
func caseScheduledMisfire(policy workers.MisfirePolicy) func(t *testing.T, b *bundle) {
	return func(t *testing.T, b *bundle) {
		var seeded time.Time
		seedSchedule(t, b.db, "hourly", func(now time.Time) workers.ScheduleState {
			seeded = now.Truncate(time.Hour).Add(-5 * time.Hour)
			return workers.ScheduleState{Done: seeded}
		})
		var mu sync.Mutex
		var ran []time.Time
		fn := func(ctx context.Context, s *workers.Slot) error {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, s.Time)
			return nil
		}
		// No slot is on time, even in the first second of an hour.
		cfg := workers.ScheduleConfig{Every: time.Hour, Misfire: policy, CatchUpLimit: 3, MisfireGrace: time.Nanosecond}
		r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.Scheduled("hourly", fn, cfg))
		var want []time.Time
		switch policy {
		case workers.MisfireRunOnce:
			want = []time.Time{seeded.Add(5 * time.Hour)}
		case workers.MisfireRunAll:
			want = []time.Time{seeded.Add(3 * time.Hour), seeded.Add(4 * time.Hour), seeded.Add(5 * time.Hour)}
		}
		for range want {
			slotDone(t, r, "hourly")
		}
		// The holder writes its next slot once nothing is due.
		deadline := time.After(wait)
		var st workers.ScheduleState
		for {
			st, _ = scheduleState(t, b.db, "hourly")
			if st.Next.Equal(seeded.Add(6*time.Hour)) && st.Running == nil {
				break
			}
			select {
			case <-deadline:
				t.Fatalf("state %+v never showed the next slot %v", st, seeded.Add(6*time.Hour))
			case <-time.After(20 * time.Millisecond):
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != len(want) {
			t.Fatalf("%v ran slots %v, want %v", policy, ran, want)
		}
		for i := range want {
			if !ran[i].Equal(want[i]) {
				t.Fatalf("%v ran slots %v, want %v", policy, ran, want)
			}
		}
		skipped := st.History[0]
		if skipped.Outcome != workers.OutcomeSkipped || skipped.Skipped != int64(5-len(want)) {
			t.Fatalf("%v: first history entry %+v, want %d skipped", policy, skipped, 5-len(want))
		}
		if !st.Done.Equal(seeded.Add(5 * time.Hour)) {
			t.Fatalf("%v: done up to %v, want %v", policy, st.Done, seeded.Add(5*time.Hour))
		}
	}
}

// caseScheduledInterrupted seeds a job whose last run was interrupted (its
// holder died mid-slot) and checks what the next holder does with it.
func caseScheduledInterrupted(policy workers.InterruptPolicy) func(t *testing.T, b *bundle) {
	return func(t *testing.T, b *bundle) {
		var slot time.Time
		seedSchedule(t, b.db, "nightly", func(now time.Time) workers.ScheduleState {
			slot = now.Truncate(time.Hour)
			return workers.ScheduleState{Done: slot.Add(-time.Hour), Running: &workers.RunRecord{
				Slot: slot, Holder: "dead/test/x", Epoch: 7, Attempt: 1, Start: slot, Outcome: workers.OutcomeRunning,
			}}
		})
		attempts := make(chan *workers.Slot, 4)
		fn := func(ctx context.Context, s *workers.Slot) error {
			attempts <- s
			return nil
		}
		// MisfireSkip: nothing runs but the interrupted slot, if retried.
		cfg := workers.ScheduleConfig{Every: time.Hour, Interrupted: policy, Misfire: workers.MisfireSkip, MisfireGrace: time.Nanosecond}
		r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.Scheduled("nightly", fn, cfg))
		if policy == workers.InterruptRetry {
			s := <-attempts
			if !s.Time.Equal(slot) || s.Attempt != 2 {
				t.Fatalf("retried slot %v attempt %d, want %v attempt 2", s.Time, s.Attempt, slot)
			}
			slotDone(t, r, "nightly")
		}
		deadline := time.After(wait)
		var st workers.ScheduleState
		for {
			st, _ = scheduleState(t, b.db, "nightly")
			if st.Next.Equal(slot.Add(time.Hour)) && st.Running == nil {
				break
			}
			select {
			case <-deadline:
				t.Fatalf("state %+v never moved past the interrupted slot", st)
			case <-time.After(20 * time.Millisecond):
			}
		}
		select {
		case s := <-attempts:
			t.Fatalf("slot %v ran (attempt %d); want nothing more", s.Time, s.Attempt)
		default:
		}
		var outcomes []string
		for _, h := range st.History {
			outcomes = append(outcomes, string(h.Outcome))
		}
		want := "abandoned"
		if policy == workers.InterruptRetry {
			want = "interrupted,ok"
		}
		if strings.Join(outcomes, ",") != want || st.History[0].Holder != "dead/test/x" || st.History[0].Epoch != 7 {
			t.Fatalf("history %+v, want %s starting with the dead holder's run", st.History, want)
		}
	}
}

func caseScheduledHistoryBounded(t *testing.T, b *bundle) {
	fn := func(ctx context.Context, s *workers.Slot) error { return nil }
	r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.Scheduled("bounded", fn, workers.ScheduleConfig{Every: 100 * time.Millisecond, HistoryLimit: 3}))
	var last workers.Event
	for range 6 {
		last = slotDone(t, r, "bounded")
	}
	st, _ := scheduleState(t, b.db, "bounded")
	if len(st.History) != 3 {
		t.Fatalf("history has %d entries, want 3: %+v", len(st.History), st.History)
	}
	if h := st.History[2]; h.Slot.Before(last.Slot) {
		t.Fatalf("newest history entry is slot %v, want %v or later", h.Slot, last.Slot)
	}
}

// caseScheduledTraced: each slot run is a span with the worker's name, the
// slot and the epoch, a child of the term's span, whose children are the
// function's own spans; a failed run is an error span.
func caseScheduledTraced(t *testing.T, b *bundle) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var calls atomic.Int64
	fn := func(ctx context.Context, s *workers.Slot) error {
		_, span := tp.Tracer("app").Start(ctx, "app.slot")
		defer span.End()
		if calls.Add(1) == 2 {
			return errors.New("second slot fails")
		}
		return nil
	}
	cfg := fastConfig()
	cfg.Coordination.TracerProvider = tp
	r := startHost(t, b.db, "node-a", "test", cfg, workers.Scheduled("traced", fn, workers.ScheduleConfig{Every: 100 * time.Millisecond}))
	var done []workers.Event
	for range 2 {
		done = append(done, slotDone(t, r, "traced"))
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	spans := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = append(spans[s.Name], s)
	}
	runs, apps, terms := spans["leasehold.schedule.run"], spans["app.slot"], spans["leasehold.term"]
	if len(runs) < 2 || len(apps) < 2 || len(terms) == 0 {
		t.Fatalf("%d slot-run spans, %d of the function, %d of terms; want at least 2, 2 and 1", len(runs), len(apps), len(terms))
	}
	for i, run := range runs[:2] {
		set := attribute.NewSet(run.Attributes...)
		name, _ := set.Value("leasehold.schedule.name")
		slot, _ := set.Value("leasehold.schedule.slot")
		epoch, _ := set.Value("leasehold.lease.epoch")
		if name.AsString() != "traced" || slot.AsString() != done[i].Slot.UTC().Format(time.RFC3339Nano) || epoch.AsInt64() != done[i].Epoch {
			t.Errorf("slot-run span %d: %v; want worker traced, slot %v, epoch %d", i, run.Attributes, done[i].Slot, done[i].Epoch)
		}
		if run.Parent.SpanID() != terms[0].SpanContext.SpanID() {
			t.Errorf("slot-run span %d has parent %v; want the term's %v", i, run.Parent.SpanID(), terms[0].SpanContext.SpanID())
		}
		if apps[i].Parent.SpanID() != run.SpanContext.SpanID() {
			t.Errorf("the function's span %d has parent %v; want its slot run's %v", i, apps[i].Parent.SpanID(), run.SpanContext.SpanID())
		}
		if failed := run.Status.Code == codes.Error; failed != (i == 1) {
			t.Errorf("slot-run span %d has status %v; want an error only for the second", i, run.Status)
		}
	}
}
