package workers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// ScheduledFunc is the work of one slot of a scheduled worker. ctx ends
// with the term; the function must return promptly then, and the slot
// counts as interrupted (InterruptPolicy). Returning nil completes the
// slot; an error or a panic fails it; either way it is not run again.
type ScheduledFunc func(ctx context.Context, slot *Slot) error

// Slot is one run of one slot of a scheduled worker.
type Slot struct {
	// Time is the slot's time, by the database clock, in UTC: the same for
	// every copy and every attempt, so it suits as an idempotency key.
	Time time.Time
	// Epoch is the fencing epoch of the term the slot runs under.
	Epoch int64
	// Attempt counts the runs of the slot: 1, then 2 after an interruption.
	Attempt int

	lease term

	mu       sync.Mutex
	complete func() ScheduleState // the state that completes the slot
	staged   string               // the encoded state Complete wrote; "" if it was not called
}

// Lease returns the term the slot runs under: Valid, TrustDeadline.
func (s *Slot) Lease() *coordination.Lease {
	l, _ := s.lease.(*coordination.Lease)
	return l
}

// term is the methods of coordination.Lease a slot runner calls.
type term interface {
	Key() string
	Epoch() int64
	Valid() bool
	Check() error
	Fence(tx *gorm.DB) error
	Data(ctx context.Context) (string, time.Time, error)
	SetData(ctx context.Context, data string) error
	SetDataIn(tx *gorm.DB, data string) error
}

var _ term = (*coordination.Lease)(nil)

// Complete fences tx and records, inside it, the slot as completed: the
// completion commits with tx, and only under the slot's term, so the
// slot's side effects in tx and its completion are never apart. A run
// interrupted after such a tx committed is not run again. On an error
// (wrapping coordination.ErrFenced when the term is over) the caller must
// roll tx back. The function must still return nil afterwards.
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
// each slot once across every copy that shares the database (see
// "Scheduled workers" in the package doc). NewHost refuses a
// GlobalSingleton "schedule/<name>" beside it: they would share a lease.
func Scheduled(name string, fn ScheduledFunc, cfg ScheduleConfig) Worker {
	return &scheduled{name: name, fn: fn, cfg: cfg.withDefaults()}
}

// scheduled is a scheduled worker; it holds nothing but its
// configuration, so one value may be given to several hosts.
type scheduled struct {
	name  string
	fn    ScheduledFunc
	cfg   ScheduleConfig
	sched schedule // set by validate
}

func (s *scheduled) Name() string { return s.name }
func (s *scheduled) kind() kind   { return kindScheduled }

func (s *scheduled) validate() error {
	if s.fn == nil {
		return fmt.Errorf("%w: scheduled worker %q has a nil function", coordination.ErrInvalidConfig, s.name)
	}
	sched, err := s.cfg.parse(s.name)
	if err != nil {
		return err
	}
	s.sched = sched
	return nil
}

func (s *scheduled) bind(h *Host, st *workerState) error {
	return bindElection(h, st, coordination.GlobalScope, scheduleElection(s.name))
}

// run runs the due slots whenever it holds the job's lease, on the
// election's term loop.
func (s *scheduled) run(ctx context.Context, h *Host) error {
	st := h.stateOf(s)
	return st.election.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
		return (&slotRunner{job: s, holder: h.coord.Holder(), log: st.log, tracer: h.tracer, emit: h.emit, lease: l,
			report: func(err error) { h.reportError(st, l.Key(), l.Epoch(), err, 0) }}).lead(ctx)
	}, termOptions(h, st, s.name, st.election.Key()))
}

// slotRunner runs the slots of one job under one term. It owns the job's
// state for the term, and only it writes it back, under the term.
type slotRunner struct {
	job    *scheduled
	holder string // this process's holder string
	log    *zap.Logger
	tracer trace.Tracer
	emit   func(Event)
	report func(error) // a failed slot, as the host reports a failed worker
	lease  term

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
	// The database read its clock within the round trip: take the middle.
	r.dbAt, r.localAt = now, start.Add(time.Since(start)/2)
	state, err := DecodeScheduleState(data)
	if err != nil {
		r.log.Warn("the job's state in its lease row is unreadable; starting over from now", zap.Error(err))
		state = ScheduleState{}
	}
	r.state = state
	return nil
}

// write records the state under the term.
func (r *slotRunner) write(ctx context.Context) error {
	return r.lease.SetData(ctx, r.state.encode())
}

// lead runs the due slots until the term ends, with an error or ctx.
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
		r.log.Warn("the job's last run was interrupted", zap.Time("slot", rec.Slot),
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
		p := planSlots(r.job.sched, cfg, r.state.Done, now)
		if len(p.run) == 0 && p.skipped == 0 {
			if err := r.waitNext(ctx); err != nil {
				return err
			}
			continue
		}
		if p.skipped > 0 {
			r.state.record(RunRecord{Slot: p.latestSkipped, Holder: r.holder, Epoch: r.lease.Epoch(), Start: now, End: now,
				Outcome: OutcomeSkipped, Skipped: p.skipped}, cfg.HistoryLimit)
			r.state.Done = later(r.state.Done, p.latestSkipped)
			r.log.Warn("skipped missed slots", zap.Int64("skipped", p.skipped), zap.Time("latest", p.latestSkipped),
				zap.Stringer("policy", cfg.Misfire))
			if len(p.run) == 0 {
				if err := r.write(ctx); err != nil {
					return err
				}
			}
		}
		for _, slot := range p.run {
			if err := r.runSlot(ctx, slot, 1); err != nil {
				return err
			}
		}
	}
}

// maxOnTime bounds how many on-time slots one plan runs; the rest count as
// skipped.
const maxOnTime = 1000

// slotPlan is what to do with the slots due: run these, in order, and
// record the skipped ones, the latest of which is latestSkipped.
type slotPlan struct {
	run           []time.Time
	skipped       int64
	latestSkipped time.Time
}

// planSlots plans the slots in (done, now]. A slot at most MisfireGrace
// old is on time and runs; older ones were missed, and the misfire policy
// says which of them run: none (MisfireSkip), the latest when no slot is
// on time (MisfireRunOnce), or the latest CatchUpLimit (MisfireRunAll).
func planSlots(sched schedule, cfg ScheduleConfig, done, now time.Time) slotPlan {
	edge := now.Add(-cfg.MisfireGrace - time.Nanosecond) // slots at or before edge were missed
	onTime, nOn := sched.due(later(done, edge), now, maxOnTime)
	runMissed := 0
	switch cfg.Misfire {
	case MisfireRunOnce:
		if nOn == 0 {
			runMissed = 1
		}
	case MisfireRunAll:
		runMissed = cfg.CatchUpLimit
	}
	var missed []time.Time
	var nMissed int64
	if edge.After(done) {
		// One more than may run, to name the latest skipped slot.
		missed, nMissed = sched.due(done, edge, runMissed+1)
	}
	runMissed = min(runMissed, len(missed))
	p := slotPlan{run: append(slices.Clip(missed[len(missed)-runMissed:]), onTime...)}
	p.skipped = nMissed - int64(runMissed) + nOn - int64(len(onTime))
	if nMissed > int64(runMissed) {
		p.latestSkipped = missed[len(missed)-runMissed-1]
	} else if p.skipped > 0 {
		p.latestSkipped = onTime[0].Add(-time.Nanosecond) // on-time slots beyond maxOnTime: those before the ones run
	}
	return p
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
		// Claim by the database clock: read it, and wait if it is behind.
		if err := r.readClock(ctx); err != nil {
			return err
		}
	}
}

// readClock reads the database clock again, and the job's state with it:
// after a failover that lost the last writes, the row's older state wins.
func (r *slotRunner) readClock(ctx context.Context) error {
	mine := r.state.encode()
	if err := r.read(ctx); err != nil {
		return err
	}
	if got := r.state.encode(); got != mine {
		r.log.Warn("the job's state in the database is not what this holder wrote (a failover to a standby that lacked the last writes?); "+
			"going on from the database's", zap.Time("done", r.state.Done))
	}
	return nil
}

// runSlot claims a slot, runs the function and records the outcome, all
// under the term. When the term is over or a write failed it returns an
// error, and the next term finds the slot interrupted.
func (r *slotRunner) runSlot(ctx context.Context, at time.Time, attempt int) (runErr error) {
	if err := r.lease.Check(); err != nil {
		return err
	}
	ctx, span := r.tracer.Start(ctx, "leasehold.schedule.run", trace.WithAttributes(
		attribute.String("leasehold.schedule.name", r.job.name), attribute.String("leasehold.schedule.slot", at.UTC().Format(time.RFC3339Nano)),
		attribute.Int("leasehold.schedule.attempt", attempt), attribute.String("leasehold.lease.name", r.lease.Key()),
		attribute.Int64("leasehold.lease.epoch", r.lease.Epoch())))
	var fnErr error
	defer func() { endSpan(span, cmp.Or(fnErr, runErr)) }()
	cfg := r.job.cfg
	run := RunRecord{Slot: at, Holder: r.holder, Epoch: r.lease.Epoch(), Attempt: attempt, Start: r.now(), Outcome: OutcomeRunning}
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
	r.emit(Event{Kind: EventSlotStarted, Worker: r.job.name, Key: r.lease.Key(), Epoch: r.lease.Epoch(), Slot: at})
	err := r.call(ctx, slot)
	fnErr = err
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
		r.report(fmt.Errorf("slot %s: %w", at.Format(time.RFC3339Nano), err))
	case staged != "":
		// Complete wrote it in the function's transaction, which may have
		// rolled back: write it again.
		next, _ = DecodeScheduleState(staged)
	default:
		next = finish(OutcomeOK)
	}
	r.state = next
	if err := r.write(ctx); err != nil {
		return err
	}
	r.emit(Event{Kind: EventSlotDone, Worker: r.job.name, Key: r.lease.Key(), Epoch: r.lease.Epoch(), Slot: at, Err: err})
	return nil
}

// call runs the function, turning a panic into an error.
func (r *slotRunner) call(ctx context.Context, slot *Slot) (err error) {
	defer func() {
		if v := recover(); v != nil {
			pe := &coordination.PanicError{Value: v, Stack: debug.Stack()}
			err = pe
		}
	}()
	return r.job.fn(ctx, slot)
}

// endSpan ends span, with an error status when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
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
