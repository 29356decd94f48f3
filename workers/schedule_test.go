package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

func TestScheduleConfigRefused(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, *Slot) error { return nil }
	for _, tc := range []struct {
		name string
		cfg  ScheduleConfig
		want string // in the error: the field and its value
	}{
		{"InvalidCron", ScheduleConfig{Cron: "61 * * * *"}, `Cron ("61 * * * *") is not a valid cron expression`},
		{"CronWithTooManyFields", ScheduleConfig{Cron: "* * * * * * *"}, `Cron ("* * * * * * *")`},
		{"NoSchedule", ScheduleConfig{}, "neither Cron nor Every is set (Every is 0s)"},
		{"NegativeEvery", ScheduleConfig{Every: -time.Second}, "Every (-1s) must be positive"},
		{"Both", ScheduleConfig{Cron: "@hourly", Every: time.Minute}, `both Cron ("@hourly") and Every (1m0s) are set`},
		{"NegativeCap", ScheduleConfig{Every: time.Minute, CatchUpLimit: -1}, "CatchUpLimit (-1) must not be negative"},
		{"NegativeGrace", ScheduleConfig{Every: time.Minute, MisfireGrace: -time.Second}, "MisfireGrace (-1s) must not be negative"},
		{"HistoryTooLong", ScheduleConfig{Every: time.Minute, HistoryLimit: maxHistoryLimit + 1}, "HistoryLimit (101) must be between 0 and 100"},
		{"UnknownMisfire", ScheduleConfig{Every: time.Minute, Misfire: 7}, "Misfire (7) is not a MisfirePolicy"},
		{"UnknownInterrupt", ScheduleConfig{Every: time.Minute, Interrupted: 7}, "Interrupted (7) is not an InterruptPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewHost(nil, Config{}, Scheduled("job", fn, tc.cfg))
			if !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"job"`) {
				t.Fatalf("NewHost: %v; want coordination.ErrInvalidConfig naming the worker and %q", err, tc.want)
			}
		})
	}
	t.Run("NilFunction", func(t *testing.T) {
		t.Parallel()
		_, err := NewHost(nil, Config{}, Scheduled("job", nil, ScheduleConfig{Every: time.Minute}))
		if !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), "nil function") {
			t.Fatalf("NewHost: %v; want coordination.ErrInvalidConfig for a nil function", err)
		}
	})
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestScheduleSlots(t *testing.T) {
	t.Parallel()
	parse := func(t *testing.T, cfg ScheduleConfig) schedule {
		t.Helper()
		s, err := cfg.withDefaults().parse("job")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name       string
		cfg        ScheduleConfig
		after, now string
		keep       int
		want       []string
		total      int64
		next       string // next(after)
	}{
		{"IntervalNoneDue", ScheduleConfig{Every: time.Minute}, "2026-01-01T10:00:00Z", "2026-01-01T10:00:59Z", 2, nil, 0, "2026-01-01T10:01:00Z"},
		{"IntervalOneDueAtItsTime", ScheduleConfig{Every: time.Minute}, "2026-01-01T10:00:00Z", "2026-01-01T10:01:00Z", 2,
			[]string{"2026-01-01T10:01:00Z"}, 1, "2026-01-01T10:01:00Z"},
		{"IntervalAlignedToEpoch", ScheduleConfig{Every: 10 * time.Second}, "2026-01-01T10:00:03Z", "2026-01-01T10:00:25Z", 5,
			[]string{"2026-01-01T10:00:10Z", "2026-01-01T10:00:20Z"}, 2, "2026-01-01T10:00:10Z"},
		{"IntervalKeepsLatest", ScheduleConfig{Every: time.Hour}, "2026-01-01T00:00:00Z", "2026-01-02T00:30:00Z", 2,
			[]string{"2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z"}, 24, "2026-01-01T01:00:00Z"},
		{"CronKeepsLatest", ScheduleConfig{Cron: "0 * * * *"}, "2026-01-01T00:00:00Z", "2026-01-02T00:30:00Z", 2,
			[]string{"2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z"}, 24, "2026-01-01T01:00:00Z"},
		{"CronSeconds", ScheduleConfig{Cron: "*/15 * * * * *"}, "2026-01-01T00:00:00Z", "2026-01-01T00:00:40Z", 5,
			[]string{"2026-01-01T00:00:15Z", "2026-01-01T00:00:30Z"}, 2, "2026-01-01T00:00:15Z"},
		{"CronZone", ScheduleConfig{Cron: "CRON_TZ=Europe/Berlin 0 9 * * *"}, "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z", 5,
			[]string{"2026-01-01T08:00:00Z", "2026-01-02T08:00:00Z"}, 2, "2026-01-01T08:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := parse(t, tc.cfg)
			got, total := s.due(at(tc.after), at(tc.now), tc.keep)
			var gs []string
			for _, g := range got {
				gs = append(gs, g.Format(time.RFC3339Nano))
			}
			if strings.Join(gs, ",") != strings.Join(tc.want, ",") || total != tc.total {
				t.Fatalf("due = %v (%d in all), want %v (%d)", gs, total, tc.want, tc.total)
			}
			if next := s.next(at(tc.after)); !next.Equal(at(tc.next)) {
				t.Fatalf("next = %v, want %s", next, tc.next)
			}
		})
	}
}

// TestSchedulePlan checks which of the due slots each misfire policy runs
// and which it skips: a minutely job done up to 10:00, whose slots up to
// 10:05 are due.
func TestSchedulePlan(t *testing.T) {
	t.Parallel()
	base := at("2026-01-01T10:00:00Z")
	slot := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	for _, tc := range []struct {
		name          string
		policy        MisfirePolicy
		now           time.Time
		run           []int // minutes after 10:00
		skipped       int64
		latestSkipped int
	}{
		{"NothingDue", MisfireRunOnce, slot(1).Add(-time.Millisecond), nil, 0, 0},
		{"OnTimeRunsWhateverThePolicy", MisfireSkip, slot(1).Add(500 * time.Millisecond), []int{1}, 0, 0},
		{"SkipMissed", MisfireSkip, slot(5).Add(2 * time.Second), nil, 5, 5},
		{"SkipMissedRunOnTime", MisfireSkip, slot(5).Add(500 * time.Millisecond), []int{5}, 4, 4},
		{"RunOnceMissed", MisfireRunOnce, slot(5).Add(2 * time.Second), []int{5}, 4, 4},
		{"RunOnceOnTimeCoversMissed", MisfireRunOnce, slot(5).Add(500 * time.Millisecond), []int{5}, 4, 4},
		{"RunAllMissedUpToTheCap", MisfireRunAll, slot(5).Add(2 * time.Second), []int{4, 5}, 3, 3},
		{"RunAllMissedAndTheOnTimeOne", MisfireRunAll, slot(5).Add(500 * time.Millisecond), []int{3, 4, 5}, 2, 2},
		{"AllOnTimeRun", MisfireRunOnce, slot(5).Add(500 * time.Millisecond), []int{1, 2, 3, 4, 5}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := ScheduleConfig{Every: time.Minute, Misfire: tc.policy, CatchUpLimit: 2}
			if tc.name == "AllOnTimeRun" {
				cfg.MisfireGrace = 10 * time.Minute
			}
			cfg = cfg.withDefaults()
			sched, err := cfg.parse("job")
			if err != nil {
				t.Fatal(err)
			}
			p := planSlots(sched, cfg, base, tc.now)
			var run []int
			for _, r := range p.run {
				run = append(run, int(r.Sub(base)/time.Minute))
			}
			if fmt.Sprint(run) != fmt.Sprint(tc.run) || p.skipped != tc.skipped ||
				(tc.skipped > 0 && !p.latestSkipped.Equal(slot(tc.latestSkipped))) {
				t.Fatalf("plan = run %v, %d skipped up to %v; want run %v, %d skipped up to 10:%02d",
					run, p.skipped, p.latestSkipped, tc.run, tc.skipped, tc.latestSkipped)
			}
		})
	}
}

// TestScheduleStateFitsTheRow: the largest state, maxHistoryLimit runs and
// a run in progress of the longest holder string and epochs above the
// failover floor, fits in the lease row.
func TestScheduleStateFitsTheRow(t *testing.T) {
	t.Parallel()
	holder := strings.Repeat("n", 128) + "/" + strings.Repeat("c", 63) + "/" + strings.Repeat("i", 36) // the longest holder string
	slot := at("2026-01-01T10:00:00.123456789Z")
	rec := RunRecord{Slot: slot, Holder: holder, Epoch: 1<<62 + 12345, Attempt: 1000, Start: slot, End: slot, Outcome: OutcomeInterrupted, Skipped: 1 << 40}
	s := ScheduleState{Done: slot, Next: slot, Running: &rec}
	for range maxHistoryLimit {
		s.record(rec, maxHistoryLimit)
	}
	if n := len(s.encode()); n > coordination.MaxDataLen {
		t.Fatalf("the largest state is %d bytes; the row holds %d", n, coordination.MaxDataLen)
	}
}
