package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/pgnotify"
	"github.com/leasehold/leasehold/workers"
)

// Settings of the schedules section.
const (
	// scheduleEvery is the interval of the benchmark's job.
	scheduleEvery = 100 * time.Millisecond
	// scheduleSlots is how many slots are timed.
	scheduleSlots = 300
	// scheduleCopies is how many hosts run the job.
	scheduleCopies = 3
	// scheduleLatenessTarget is the bound on the 99th percentile
	// of a slot's start lateness on PostgreSQL with default settings.
	scheduleLatenessTarget = 50 * time.Millisecond
)

// runSchedules is the schedules section: scheduleCopies hosts in this
// process, with the default configuration, run one scheduled worker every
// scheduleEvery; each slot's start is timed against the slot's time.
func runSchedules(ctx context.Context, r *runner, tg *target) *Table {
	t := &Table{Section: "schedules", Dialect: tg.dialect,
		Title: fmt.Sprintf("a scheduled worker every %v on %d hosts with the default settings: %d slots", scheduleEvery, scheduleCopies, scheduleSlots)}
	if err := tg.migrate(ctx); err != nil {
		t.fail("migrate", err.Error(), "")
		return t
	}
	var mu sync.Mutex
	runs := map[time.Time]int{}
	var lateness []time.Duration
	enough := make(chan struct{})
	fn := func(_ context.Context, s *workers.Slot) error {
		late := time.Since(s.Time) // the process's wall clock; the server's is the same machine's
		mu.Lock()
		defer mu.Unlock()
		runs[s.Time]++
		if len(lateness) < scheduleSlots {
			lateness = append(lateness, late)
			if len(lateness) == scheduleSlots {
				close(enough)
			}
		}
		return nil
	}
	hctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	for i := range scheduleCopies {
		db, err := tg.open()
		if err != nil {
			t.fail("open", err.Error(), "")
			return t
		}
		defer closeDB(db)
		id, err := identity.New(fmt.Sprintf("sched-%d", i), Cluster)
		if err != nil {
			t.fail("identity", err.Error(), "")
			return t
		}
		c, err := coordination.New(db, id, coordination.Config{Logger: zap.NewNop(), Notifications: pgnotify.New()})
		if err != nil {
			t.fail("coordinator", err.Error(), "")
			return t
		}
		h, err := workers.NewHost(c, workers.Config{}, workers.Scheduled("bench", fn, workers.ScheduleConfig{Every: scheduleEvery}))
		if err != nil {
			t.fail("host", err.Error(), "")
			return t
		}
		wg.Go(func() { _ = c.Run(hctx) })
		wg.Go(func() { _ = h.Run(hctx) })
	}
	bound := time.Duration(scheduleSlots)*scheduleEvery + time.Minute
	select {
	case <-enough:
	case <-time.After(bound):
		mu.Lock()
		t.fail("slots", fmt.Sprintf("%d of %d slots ran within %v", len(lateness), scheduleSlots, bound), "")
		mu.Unlock()
		return t
	case <-ctx.Done():
		t.fail("slots", "interrupted", "")
		return t
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for _, n := range runs {
		if n > 1 {
			twice++
		}
	}
	if s, p99, err := p50p99max(lateness); err == nil {
		name := "slot start lateness (function start - slot time) p50 / p99 / max"
		if tg.dialect == "postgres" {
			t.add(name, s, "p99 <= "+fmtDur(scheduleLatenessTarget), p99 <= scheduleLatenessTarget)
		} else {
			t.info(name, s)
		}
	}
	t.add("slots run twice", fmt.Sprint(twice), "0", twice == 0)
	t.note("coordination.Config{} defaults (TTL %v, retry %v) with pgnotify; every slot is claimed and completed under "+
		"the term in the lease row (two writes and a clock read per slot)", defaultTTL, defaultRetryInterval)
	t.note("lateness is read on the process's wall clock against the slot's database-clock time; the server runs on the same machine")
	return t
}
