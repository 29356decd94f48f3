package workers

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// ScheduledFunc is the work of one slot of a scheduled worker. ctx ends
// with the term (as for a SingletonFunc); the function must return
// promptly then, and the slot counts as interrupted (InterruptPolicy).
// Returning nil completes the slot; returning an error, or panicking,
// records it as failed: either way the slot is over and is not run
// again. To commit the slot's completion together with its side effects,
// call slot.Complete(tx) inside the transaction that makes them.
type ScheduledFunc func(ctx context.Context, slot *Slot) error

// Slot is one run of one slot of a scheduled worker.
type Slot struct {
	// Time is the slot's time, by the database clock, in UTC: the same for
	// every copy and every attempt, so it suits as an idempotency key.
	Time time.Time
	// Epoch is the fencing epoch of the term the slot runs under.
	Epoch int64
	// Attempt is 1 for the first run of the slot, 2 after one
	// interruption, and so on.
	Attempt int

	lease *coordination.Lease

	mu       sync.Mutex
	complete func() ScheduleState // the state that completes the slot
	staged   string               // the encoded state Complete wrote; "" if it was not called
}

// Lease returns the term the slot runs under: Valid, TrustDeadline.
func (s *Slot) Lease() *coordination.Lease { return s.lease }

// Fence asserts inside tx that the slot's term still holds the job's
// lease (coordination.Lease.Fence).
func (s *Slot) Fence(tx *gorm.DB) error { return s.lease.Fence(tx) }

// Complete fences tx and records, inside it, the slot as completed: the
// completion commits with tx or not at all, and only under the slot's
// term, so the slot's side effects made in tx and its completion are
// never apart. A run interrupted after such a tx committed is not run
// again, whatever InterruptPolicy says. On an error (wrapping
// coordination.ErrFenced when the term is over) the caller must roll tx
// back. The function must still return nil afterwards.
func (s *Slot) Complete(tx *gorm.DB) error {
	st := s.complete()
	data := st.encode()
	if err := s.lease.SetDataIn(tx, data); err != nil {
		return err
	}
	s.mu.Lock()
	s.staged = data
	s.mu.Unlock()
	return nil
}

// Scheduled returns a worker that runs fn at every slot of cfg's schedule,
// each slot once across every copy that shares the database: the holder
// of the global election "schedule/<name>" (lease ScheduleLease(name))
// runs the slots, and keeps the job's progress and history in that lease
// row, written only under its term. Slot times are computed against the
// database clock. See the package documentation, "Scheduled workers".
func Scheduled(name string, fn ScheduledFunc, cfg ScheduleConfig) Worker {
	return &scheduled{name: name, fn: fn, cfg: cfg.withDefaults()}
}

// scheduled is a scheduled worker. It holds no state of its own beyond
// its configuration, so one value may be given to several hosts.
type scheduled struct {
	name  string
	fn    ScheduledFunc
	cfg   ScheduleConfig
	sched schedule // set by validate
}

func (s *scheduled) Name() string { return s.name }
func (s *scheduled) Kind() Kind   { return KindScheduled }

func (s *scheduled) validate() error {
	if s.fn == nil {
		return fmt.Errorf("%w: scheduled worker %q has a nil function", ErrInvalidWorker, s.name)
	}
	if err := coordination.ValidateName(scheduleElection(s.name)); err != nil {
		return fmt.Errorf("%w: scheduled worker %q: %w", ErrInvalidWorker, s.name, err)
	}
	sched, err := s.cfg.parse(s.name)
	if err != nil {
		return err
	}
	s.sched = sched
	return nil
}

func (s *scheduled) bind(h *Host, st *workerState) error {
	e, err := h.coord.Election(coordination.GlobalScope, scheduleElection(s.name))
	if err != nil {
		return err
	}
	st.election = e
	h.byLease[e.Key()] = st
	return nil
}

// run campaigns for the job's lease and, while holding it, runs the due
// slots, on the election's term loop (coordination.Election.Run).
func (s *scheduled) run(ctx context.Context, h *Host) error {
	st := h.stateOf(s)
	return st.election.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
		return (&slotRunner{job: s, h: h, st: st, lease: l}).lead(ctx)
	}, coordination.RunOptions[*coordination.Lease]{
		Backoff:    h.cfg.RestartBackoff,
		MaxBackoff: h.cfg.MaxRestartBackoff,
		RetryBusy:  true,
		OnTermStart: func(l *coordination.Lease) {
			st.setTerm(l)
			st.log.Info("started leading", zap.String("lease", l.Key()), zap.Int64("epoch", l.Epoch()))
			h.emit(Event{Kind: EventStartedLeading, Worker: s.name, Lease: l.Key(), Epoch: l.Epoch()})
		},
		OnTermEnd: func(l *coordination.Lease, cause error) {
			st.setTerm(nil)
			st.log.Info("stopped leading", zap.String("lease", l.Key()), zap.Int64("epoch", l.Epoch()), zap.NamedError("cause", cause))
			h.emit(Event{Kind: EventStoppedLeading, Worker: s.name, Lease: l.Key(), Epoch: l.Epoch(), Err: cause})
		},
		OnError: func(l *coordination.Lease, err error, retryIn time.Duration) {
			if l == nil {
				h.reportError(st, st.election.Key(), 0, err, retryIn)
				return
			}
			h.reportError(st, l.Key(), l.Epoch(), err, retryIn)
		},
	})
}

// slotRunner runs the slots of one job under one call of its lead
// function. It owns the job's state for the term: it read it from the
// lease row, and only it writes it back, under the term.
type slotRunner struct {
	job   *scheduled
	h     *Host
	st    *workerState
	lease *coordination.Lease

	state ScheduleState
	// The database clock: dbAt was read at the monotonic instant localAt.
	dbAt, localAt time.Time
}

// now estimates the database clock: its last reading plus the monotonic
// time since.
func (r *slotRunner) now() time.Time { return r.dbAt.Add(time.Since(r.localAt)) }

// read reads the job's state and the database clock.
func (r *slotRunner) read(ctx context.Context) error {
	start := time.Now()
	data, now, err := r.lease.Data(ctx)
	if err != nil {
		return err
	}
	// The database read its clock somewhere in the round trip: take the
	// middle of it.
	r.dbAt, r.localAt = now, start.Add(time.Since(start)/2)
	state, err := DecodeScheduleState(data)
	if err != nil {
		r.st.log.Warn("the job's state in its lease row is unreadable; starting over from now", zap.Error(err))
		state = ScheduleState{}
	}
	r.state = state
	return nil
}

// write records the state under the term.
func (r *slotRunner) write(ctx context.Context) error {
	return r.lease.SetData(ctx, r.state.encode())
}

// lead runs the due slots until the term ends. It returns only with an
// error or when ctx is done.
func (r *slotRunner) lead(ctx context.Context) error {
	if err := r.read(ctx); err != nil {
		return err
	}
	cfg := r.job.cfg
	var retry *RunRecord // an interrupted run to run again first
	if run := r.state.Running; run != nil {
		r.state.Running = nil
		rec := *run
		rec.End = r.now()
		if cfg.Interrupted == InterruptRetry {
			rec.Outcome = OutcomeInterrupted
			retry = run
		} else {
			rec.Outcome = OutcomeAbandoned
			r.state.Done = later(r.state.Done, rec.Slot)
		}
		r.state.record(rec, cfg.HistoryLimit)
		r.st.log.Warn("the job's last run was interrupted", zap.Time("slot", rec.Slot),
			zap.String("holder", rec.Holder), zap.Int64("epoch", rec.Epoch), zap.Stringer("policy", cfg.Interrupted))
	}
	if r.state.Done.IsZero() {
		r.state.Done = r.now() // a new job: its first slot is the next one
	}
	if retry != nil {
		if err := r.runSlot(ctx, retry.Slot, retry.Attempt+1); err != nil {
			return err
		}
	}
	for {
		now := r.now()
		keep := 2
		if cfg.Misfire == MisfireRunAll {
			keep = cfg.CatchUpLimit + 1
		}
		due, total := r.job.sched.due(r.state.Done, now, keep)
		if len(due) == 0 {
			if err := r.waitNext(ctx); err != nil {
				return err
			}
			continue
		}
		run := r.pick(due, now)
		if skipped := total - int64(len(run)); skipped > 0 {
			latest := due[len(due)-1]
			if len(run) > 0 {
				// due keeps one slot more than pick may run: the latest
				// skipped one is just before the first run.
				latest = due[slices.Index(due, run[0])-1]
			}
			r.state.record(RunRecord{Slot: latest, Holder: r.h.coord.Holder(), Epoch: r.lease.Epoch(), Start: now, End: now,
				Outcome: OutcomeSkipped, Skipped: skipped}, cfg.HistoryLimit)
			r.state.Done = later(r.state.Done, latest)
			r.st.log.Warn("skipped missed slots", zap.Int64("skipped", skipped), zap.Time("latest", latest), zap.Stringer("policy", cfg.Misfire))
			if len(run) == 0 {
				if err := r.write(ctx); err != nil {
					return err
				}
			}
		}
		for _, slot := range run {
			if err := r.runSlot(ctx, slot, 1); err != nil {
				return err
			}
		}
	}
}

// pick returns, of the due slots (the latest ones, oldest first), those to
// run: the on-time ones, and the missed ones the misfire policy runs.
func (r *slotRunner) pick(due []time.Time, now time.Time) []time.Time {
	cfg := r.job.cfg
	latest := due[len(due)-1]
	if now.Sub(latest) <= cfg.MisfireGrace {
		return due[len(due)-1:] // on time; anything before it is missed
	}
	switch cfg.Misfire {
	case MisfireSkip:
		return nil
	case MisfireRunAll:
		return due[max(0, len(due)-cfg.CatchUpLimit):]
	}
	return due[len(due)-1:]
}

// waitNext records the next slot and waits until it is due by the
// database clock, reading the clock again when the wait ends.
func (r *slotRunner) waitNext(ctx context.Context) error {
	next := r.job.sched.next(r.state.Done)
	if next.IsZero() {
		<-ctx.Done() // the schedule has no more slots
		return ctx.Err()
	}
	if !r.state.Next.Equal(next) {
		r.state.Next = next
		if err := r.write(ctx); err != nil {
			return err
		}
	}
	for {
		d := next.Sub(r.now())
		if d <= 0 {
			return nil
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		// Claim by the database clock: read it again, and wait for the
		// rest if it is behind this process's estimate.
		if err := r.readClock(ctx); err != nil {
			return err
		}
	}
}

// readClock reads the database clock again, keeping the state this runner
// owns.
func (r *slotRunner) readClock(ctx context.Context) error {
	state := r.state
	if err := r.read(ctx); err != nil {
		return err
	}
	r.state = state
	return nil
}

// runSlot claims a slot, runs the function and records the outcome, all
// under the term. It returns an error when the term is over or a write
// failed; the slot then stays claimed, and the next term finds it
// interrupted.
func (r *slotRunner) runSlot(ctx context.Context, at time.Time, attempt int) error {
	if err := r.lease.Check(); err != nil {
		return err
	}
	cfg := r.job.cfg
	run := RunRecord{Slot: at, Holder: r.h.coord.Holder(), Epoch: r.lease.Epoch(), Attempt: attempt, Start: r.now(), Outcome: OutcomeRunning}
	r.state.Running = &run
	r.state.Next = at
	if err := r.write(ctx); err != nil {
		return err
	}
	slot := &Slot{Time: at, Epoch: r.lease.Epoch(), Attempt: attempt, lease: r.lease}
	finish := func(outcome Outcome) ScheduleState {
		s := r.state
		rec := run
		rec.End, rec.Outcome = r.now(), outcome
		s.Running = nil
		s.Done = later(s.Done, at)
		s.Next = r.job.sched.next(s.Done)
		s.record(rec, cfg.HistoryLimit)
		return s
	}
	slot.complete = func() ScheduleState { return finish(OutcomeOK) }
	r.h.emit(Event{Kind: EventSlotStarted, Worker: r.job.name, Lease: r.lease.Key(), Epoch: r.lease.Epoch(), Slot: at})
	err := r.call(ctx, slot)
	if ctx.Err() != nil || !r.lease.Valid() {
		// The term ended mid-run: the next holder applies Interrupted.
		return firstErr(context.Cause(ctx), r.lease.Check())
	}
	slot.mu.Lock()
	staged := slot.staged
	slot.mu.Unlock()
	var next ScheduleState
	switch {
	case err != nil:
		next = finish(OutcomeFailed)
		r.h.reportError(r.st, r.lease.Key(), r.lease.Epoch(), fmt.Errorf("slot %s: %w", at.Format(time.RFC3339Nano), err), 0)
	case staged != "":
		// Complete wrote it in the function's transaction; writing the
		// same again is harmless, and needed if that transaction rolled
		// back.
		next, _ = DecodeScheduleState(staged)
	default:
		next = finish(OutcomeOK)
	}
	r.state = next
	if err := r.write(ctx); err != nil {
		return err
	}
	r.h.emit(Event{Kind: EventSlotDone, Worker: r.job.name, Lease: r.lease.Key(), Epoch: r.lease.Epoch(), Slot: at, Err: err})
	return nil
}

// call runs the function, turning a panic into an error.
func (r *slotRunner) call(ctx context.Context, slot *Slot) (err error) {
	defer func() {
		if v := recover(); v != nil {
			pe := &PanicError{Value: v, Stack: debug.Stack()}
			err = pe
		}
	}()
	return r.job.fn(ctx, slot)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return errors.New("term over")
}
