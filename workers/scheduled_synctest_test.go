package workers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/faketime"
)

// fakeTerm is a term whose lease row lives in memory, with a database
// clock skew away from the process's. In a synctest bubble both clocks
// are fake and move only when every goroutine waits.
type fakeTerm struct {
	skew time.Duration // the database clock minus the process's

	mu     sync.Mutex
	data   string
	over   bool
	writes int
}

var _ term = (*fakeTerm)(nil)

func (f *fakeTerm) Key() string  { return ScheduleLease("job") }
func (f *fakeTerm) Epoch() int64 { return 1 }
func (f *fakeTerm) Valid() bool  { f.mu.Lock(); defer f.mu.Unlock(); return !f.over }
func (f *fakeTerm) Check() error {
	if f.Valid() {
		return nil
	}
	return coordination.ErrLeaseLost
}
func (f *fakeTerm) Fence(*gorm.DB) error { return f.fenced() }
func (f *fakeTerm) fenced() error {
	if f.Valid() {
		return nil
	}
	return fmt.Errorf("%w: lease %q epoch 1: over", coordination.ErrFenced, f.Key())
}
func (f *fakeTerm) Data(context.Context) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.data, time.Now().Add(f.skew).UTC(), nil
}
func (f *fakeTerm) SetData(_ context.Context, data string) error {
	if err := f.fenced(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = data
	f.writes++
	return nil
}
func (f *fakeTerm) SetDataIn(_ *gorm.DB, data string) error {
	return f.SetData(context.Background(), data)
}

func (f *fakeTerm) state(t *testing.T) ScheduleState {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := DecodeScheduleState(f.data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call is one call of the job's function: the slot, and the process's
// clock and the database's when it started.
type slotCall struct {
	slot, processAt, databaseAt time.Time
}

// runFake runs the job under ft in the current bubble until for has passed,
// and returns the function's calls. work, if set, runs in each call.
func runFake(t *testing.T, ft *fakeTerm, cfg ScheduleConfig, d time.Duration, work func(call int)) []slotCall {
	t.Helper()
	var mu sync.Mutex
	var calls []slotCall
	fn := func(ctx context.Context, s *Slot) error {
		mu.Lock()
		n := len(calls)
		calls = append(calls, slotCall{slot: s.Time, processAt: time.Now(), databaseAt: time.Now().Add(ft.skew).UTC()})
		mu.Unlock()
		if work != nil {
			work(n)
		}
		return nil
	}
	job := Scheduled("job", fn, cfg).(*scheduled)
	if err := job.validate(); err != nil {
		t.Fatal(err)
	}
	r := &slotRunner{job: job, holder: "node-a/test/x", log: zap.NewNop(), tracer: tracenoop.NewTracerProvider().Tracer(""), emit: func(Event) {}, report: func(error) {}, lease: ft}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.lead(ctx) }()
	time.Sleep(d)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("lead returned %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return calls
}

// TestScheduleDatabaseClock runs on fake time: whatever the skew between
// the process's clock and the database's, each slot starts when the
// database clock reaches it, exactly, and the slots are the schedule's.
func TestScheduleDatabaseClock(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{0, 3 * time.Hour, -5 * time.Hour, 90 * time.Second, -1500 * time.Millisecond} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			faketime.Test(t, func(t *testing.T) {
				ft := &fakeTerm{skew: skew}
				calls := runFake(t, ft, ScheduleConfig{Cron: "* * * * *"}, 10*time.Minute+time.Second, nil)
				if len(calls) != 10 {
					t.Fatalf("%d slots ran in 10 minutes, want 10: %+v", len(calls), calls)
				}
				for i, c := range calls {
					if !c.databaseAt.Equal(c.slot) || c.slot.Second() != 0 || c.slot.Nanosecond() != 0 {
						t.Fatalf("call %d: slot %v started at %v by the database clock (%v by the process's); want at the minute, on time",
							i, c.slot, c.databaseAt, c.processAt)
					}
					if i > 0 && c.slot.Sub(calls[i-1].slot) != time.Minute {
						t.Fatalf("slots %v then %v: want one a minute", calls[i-1].slot, c.slot)
					}
				}
				st := ft.state(t)
				if !st.Done.Equal(calls[9].slot) || !st.Next.Equal(calls[9].slot.Add(time.Minute)) || len(st.History) != 10 {
					t.Fatalf("state %+v after 10 slots", st)
				}
			})
		})
	}
}

// TestScheduleLongRunMissesSlots runs on fake time: the first slot's run
// lasts 10.5 slots, so the next 10 slots pass while it runs; each misfire
// policy then runs what it says, and the schedule goes on at its times.
func TestScheduleLongRunMissesSlots(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy  MisfirePolicy
		after   []time.Duration // the slots run after the long one, from the first slot
		skipped int64
	}{
		{MisfireRunOnce, []time.Duration{10 * time.Minute, 11 * time.Minute}, 9},
		{MisfireSkip, []time.Duration{11 * time.Minute}, 10},
		{MisfireRunAll, []time.Duration{8 * time.Minute, 9 * time.Minute, 10 * time.Minute, 11 * time.Minute}, 7},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			t.Parallel()
			faketime.Test(t, func(t *testing.T) {
				ft := &fakeTerm{}
				cfg := ScheduleConfig{Every: time.Minute, Misfire: tc.policy, CatchUpLimit: 3}
				calls := runFake(t, ft, cfg, 12*time.Minute+30*time.Second, func(n int) {
					if n == 0 {
						time.Sleep(10*time.Minute + 30*time.Second)
					}
				})
				if len(calls) != 1+len(tc.after) {
					t.Fatalf("%v: %d slots ran, want %d: %+v", tc.policy, len(calls), 1+len(tc.after), calls)
				}
				for i, d := range tc.after {
					if got := calls[i+1].slot.Sub(calls[0].slot); got != d {
						t.Fatalf("%v: slot %d ran %v after the first, want %v", tc.policy, i+1, got, d)
					}
				}
				var skipped []RunRecord
				for _, h := range ft.state(t).History {
					if h.Outcome == OutcomeSkipped {
						skipped = append(skipped, h)
					}
				}
				if len(skipped) != 1 || skipped[0].Skipped != tc.skipped {
					t.Fatalf("%v: skipped entries %+v, want one of %d slots", tc.policy, skipped, tc.skipped)
				}
			})
		})
	}
}
