package workers

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/leasehold/leasehold/coordination"
)

// MisfirePolicy says what a scheduled worker does with slots it missed:
// slots whose time passed, by the database clock, more than
// ScheduleConfig.MisfireGrace before they could be started. Slots within
// the grace are on time and always run, whatever the policy.
type MisfirePolicy int

const (
	// MisfireRunOnce runs the latest missed slot once, unless a slot is on
	// time (which then stands for them), and records the others as
	// skipped. It is the zero value.
	MisfireRunOnce MisfirePolicy = iota
	// MisfireSkip records every missed slot as skipped.
	MisfireSkip
	// MisfireRunAll runs the latest CatchUpLimit missed slots, oldest
	// first, before the on-time ones, and records older ones as skipped.
	MisfireRunAll
)

// String returns "run-once", "skip" or "run-all".
func (p MisfirePolicy) String() string {
	switch p {
	case MisfireRunOnce:
		return "run-once"
	case MisfireSkip:
		return "skip"
	case MisfireRunAll:
		return "run-all"
	}
	return fmt.Sprintf("MisfirePolicy(%d)", int(p))
}

// InterruptPolicy says what the next holder does with a slot whose run was
// interrupted: started, and neither completed nor failed, when its term
// ended.
type InterruptPolicy int

const (
	// InterruptRetry runs the slot again under the new term: execution is
	// at least once, and the completion commits exactly once, under the
	// fence of the term that ran it. It is the zero value.
	InterruptRetry InterruptPolicy = iota
	// InterruptAbandon records the slot as abandoned and moves on: the
	// slot runs at most once.
	InterruptAbandon
)

// String returns "retry" or "abandon".
func (p InterruptPolicy) String() string {
	switch p {
	case InterruptRetry:
		return "retry"
	case InterruptAbandon:
		return "abandon"
	}
	return fmt.Sprintf("InterruptPolicy(%d)", int(p))
}

// Defaults and limits of ScheduleConfig, as its fields' docs state them.
const (
	defaultMisfireGrace = time.Second
	defaultCatchUpLimit = 10
	defaultHistoryLimit = 20
	maxHistoryLimit     = 100
)

// ScheduleConfig is when and how a scheduled worker runs. Exactly one of
// Cron and Every must be set; any other zero field gives its default.
// NewHost checks it, and every error names the field and its value.
type ScheduleConfig struct {
	// Cron is a cron expression, as github.com/robfig/cron/v3 parses it:
	// five fields, an optional leading seconds field, descriptors such as
	// "@hourly", and an optional "CRON_TZ=<zone> " prefix; UTC otherwise.
	Cron string

	// Every is a plain interval: the slots are its multiples since the
	// Unix epoch. Must be positive when set.
	Every time.Duration

	// Misfire says what to do with missed slots. Defaults to
	// MisfireRunOnce.
	Misfire MisfirePolicy

	// MisfireGrace is how late, by the database clock, a slot may start
	// and still run as on time whatever Misfire says. Defaults to 1s.
	MisfireGrace time.Duration

	// CatchUpLimit caps how many missed slots MisfireRunAll runs. Must not
	// be negative. Defaults to 10.
	CatchUpLimit int

	// Interrupted says what the next holder does with a slot whose run was
	// interrupted. Defaults to InterruptRetry.
	Interrupted InterruptPolicy

	// HistoryLimit is how many runs the job's history keeps (the newest).
	// At most 100; must not be negative. Defaults to 20.
	HistoryLimit int
}

// withDefaults returns a copy with zero fields set to their defaults.
func (c ScheduleConfig) withDefaults() ScheduleConfig {
	c.MisfireGrace = cmp.Or(c.MisfireGrace, defaultMisfireGrace)
	c.CatchUpLimit = cmp.Or(c.CatchUpLimit, defaultCatchUpLimit)
	c.HistoryLimit = cmp.Or(c.HistoryLimit, defaultHistoryLimit)
	return c
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parse checks a config with defaults filled in and returns its schedule.
// Errors wrap coordination.ErrInvalidConfig and name the worker and field.
func (c ScheduleConfig) parse(worker string) (schedule, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: scheduled worker %q: %s", coordination.ErrInvalidConfig, worker, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Misfire < MisfireRunOnce || c.Misfire > MisfireRunAll:
		return nil, bad("Misfire (%d) is not a MisfirePolicy", int(c.Misfire))
	case c.Interrupted < InterruptRetry || c.Interrupted > InterruptAbandon:
		return nil, bad("Interrupted (%d) is not an InterruptPolicy", int(c.Interrupted))
	case c.MisfireGrace < 0:
		return nil, bad("MisfireGrace (%v) must not be negative", c.MisfireGrace)
	case c.CatchUpLimit < 0:
		return nil, bad("CatchUpLimit (%d) must not be negative", c.CatchUpLimit)
	case c.HistoryLimit < 0 || c.HistoryLimit > maxHistoryLimit:
		return nil, bad("HistoryLimit (%d) must be between 0 and %d", c.HistoryLimit, maxHistoryLimit)
	case c.Cron != "" && c.Every != 0:
		return nil, bad("both Cron (%q) and Every (%v) are set; set one", c.Cron, c.Every)
	case c.Every < 0:
		return nil, bad("Every (%v) must be positive", c.Every)
	case c.Every > 0:
		return interval(c.Every), nil
	case c.Cron == "":
		return nil, bad("neither Cron nor Every is set (Every is %v); set one", c.Every)
	}
	s, err := cronParser.Parse(c.Cron)
	if err != nil {
		return nil, bad("Cron (%q) is not a valid cron expression: %v", c.Cron, err)
	}
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, bad("Cron (%q) has no slot in the next five years", c.Cron)
	}
	return cronSchedule{s}, nil
}

// schedule gives a job's slots.
type schedule interface {
	// next returns the first slot after t; zero when there is none.
	next(t time.Time) time.Time
	// due returns the slots in (after, now], at most keep of them (the
	// latest), oldest first, and how many there are in all.
	due(after, now time.Time, keep int) ([]time.Time, int64)
}

// interval is the schedule of ScheduleConfig.Every.
type interval time.Duration

func (iv interval) next(t time.Time) time.Time {
	d := int64(iv)
	n := t.UnixNano()
	k := n / d
	if n < 0 && n%d != 0 {
		k-- // floor
	}
	return time.Unix(0, (k+1)*d).UTC()
}

func (iv interval) due(after, now time.Time, keep int) ([]time.Time, int64) {
	first := iv.next(after)
	if first.After(now) {
		return nil, 0
	}
	total := int64(now.Sub(first)/time.Duration(iv)) + 1
	n := min(int64(keep), total)
	out := make([]time.Time, 0, n)
	for i := total - n; i < total; i++ {
		out = append(out, first.Add(time.Duration(i)*time.Duration(iv)))
	}
	return out, total
}

// cronSchedule is the schedule of ScheduleConfig.Cron.
type cronSchedule struct{ s cron.Schedule }

func (c cronSchedule) next(t time.Time) time.Time {
	n := c.s.Next(t.UTC())
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// maxCronSteps bounds the walk over a cron schedule's missed slots; past
// it, the older ones are counted as that many.
const maxCronSteps = 1 << 20

func (c cronSchedule) due(after, now time.Time, keep int) ([]time.Time, int64) {
	var ring []time.Time
	var total int64
	for t, i := c.next(after), 0; !t.IsZero() && !t.After(now) && i < maxCronSteps; t, i = c.next(t), i+1 {
		total++
		if keep == 0 {
			continue
		}
		if len(ring) == keep {
			ring = append(ring[:0:0], ring[1:]...)
		}
		ring = append(ring, t)
	}
	return ring, total
}

// Outcome is how one run of a slot ended.
type Outcome string

// Outcomes of RunRecord.
const (
	OutcomeRunning     Outcome = "running"     // started; not over yet
	OutcomeOK          Outcome = "ok"          // the function returned nil: the slot is complete
	OutcomeFailed      Outcome = "failed"      // the function returned an error or panicked: the slot is done
	OutcomeInterrupted Outcome = "interrupted" // its term ended mid-run; the slot is run again (InterruptRetry)
	OutcomeAbandoned   Outcome = "abandoned"   // its term ended mid-run; the slot is not run again (InterruptAbandon)
	OutcomeSkipped     Outcome = "skipped"     // missed slots not run (MisfirePolicy); Skipped says how many
)

// RunRecord is one entry of a scheduled worker's history. Times are on the
// database clock, in UTC. A failed run's error is not kept: the log and
// EventWorkerError carry it.
type RunRecord struct {
	Slot    time.Time `json:"slot"`              // the slot's time (for skipped slots, the latest of them)
	Holder  string    `json:"holder"`            // the holder string of the process that ran it
	Epoch   int64     `json:"epoch"`             // the fencing epoch of the term it ran under
	Attempt int       `json:"attempt,omitempty"` // 1 for the first run of the slot, 2 after one interruption, ...
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"` // zero while running
	Outcome Outcome   `json:"outcome"`
	Skipped int64     `json:"skipped,omitempty"` // for OutcomeSkipped: how many slots
}

// ScheduleState is a scheduled worker's progress, as its lease row keeps
// it (coordination.LeaseInfo.Data of the lease ScheduleLease names).
type ScheduleState struct {
	// Done is the latest slot that is over: no slot at or before it runs
	// again. When the job first ran, it is the database time it started at.
	Done time.Time `json:"done"`
	// Next is the next slot the holder waits for; zero when unknown.
	Next time.Time `json:"next,omitzero"`
	// Running is the run in progress, if any: for the next holder, one
	// that was interrupted.
	Running *RunRecord `json:"running,omitempty"`
	// History lists the latest runs, oldest first, at most HistoryLimit.
	History []RunRecord `json:"history,omitempty"`
}

// ScheduleLease returns the full lease name of the scheduled worker named
// name: "global/schedule/<name>".
func ScheduleLease(name string) string { return "global/" + scheduleElection(name) }

// scheduleElection is the GlobalScope election name of a scheduled worker.
func scheduleElection(name string) string { return "schedule/" + name }

// DecodeScheduleState decodes the data of a scheduled worker's lease row.
// Empty data, a job that never ran, gives the zero state.
func DecodeScheduleState(data string) (ScheduleState, error) {
	var s ScheduleState
	if data == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return ScheduleState{}, fmt.Errorf("workers: decode schedule state: %w", err)
	}
	return s, nil
}

// encode returns s as the lease row keeps it.
func (s ScheduleState) encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic("workers: encode schedule state: " + err.Error()) // plain data: cannot fail
	}
	return string(b)
}

// record appends r to the history, keeping the latest limit entries.
func (s *ScheduleState) record(r RunRecord, limit int) {
	// A copy: a state copied from s (a staged completion) shares the array.
	s.History = append(slices.Clip(s.History), r)
	if len(s.History) > limit {
		s.History = s.History[len(s.History)-limit:]
	}
}
