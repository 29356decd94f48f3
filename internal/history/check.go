package history

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config says what a run must show. The zero Config checks only the safety
// rules (overlaps, generations, fencing).
type Config struct {
	// Leases must each have a leader again within the bound after every
	// fault (rule E).
	Leases []string
	// Pools must each have a full assignment again within the bound after
	// every fault (rule E).
	Pools []PoolRequirement
	// Items, when positive, says that items 1..Items must each be
	// processed exactly once (rule D).
	Items int64
	// Bound is the recovery bound per fault kind (rule E), for example
	// TTL + RetryInterval for a kill, the trust deadline after the heal of
	// a cut. Every kind that occurs needs one when Leases or Pools is set.
	Bound map[FaultKind]time.Duration
	// Slots are scheduled jobs whose every due slot must be completed
	// (rule S2).
	Slots []SlotRequirement
	// ObserveUntil is the [Now] time at which the harness began stopping
	// the workers; recovery is not looked for past it. Zero means the last
	// event of the history.
	ObserveUntil int64
}

// PoolRequirement names a pool whose assignment must recover after faults.
type PoolRequirement struct {
	Pool string
	// Members is the member count of a full assignment; zero accepts any
	// count. A Fault event's Members entry for the pool overrides it for
	// the recovery from that fault.
	Members int
}

// SlotRequirement names a scheduled job (with a misfire policy that runs
// every missed slot, workers.MisfireRunAll) whose every slot due after
// the faults must be completed (rule S2).
type SlotRequirement struct {
	// Lease is the job's lease, as its SlotCompleted events name it.
	Lease string
	// Every is the job's interval: its slots are the multiples of Every
	// since the Unix epoch, by the database clock.
	Every time.Duration
	// Margin leaves out the slots this close to ObserveUntil: they may be
	// running when the workers stop.
	Margin time.Duration
}

// ViolationKind classifies a [Violation].
type ViolationKind string

// The violation kinds, one per rule of the package documentation.
const (
	LeaseOverlap       ViolationKind = "lease-overlap"     // rule A
	ReusedEpoch        ViolationKind = "reused-epoch"      // rule A2
	PartitionOverlap   ViolationKind = "partition-overlap" // rule B1
	GenerationMismatch ViolationKind = "generation"        // rule B2
	StaleWrite         ViolationKind = "stale-write"       // rule C
	LostItems          ViolationKind = "lost-items"        // rule D
	DuplicateItems     ViolationKind = "duplicate-items"   // rule D
	UnknownItems       ViolationKind = "unknown-items"     // rule D
	GrantOverlap       ViolationKind = "grant-overlap"     // rule G1
	SemaphoreOverflow  ViolationKind = "semaphore-limit"   // rule G2
	DuplicateSlots     ViolationKind = "duplicate-slots"   // rule S1
	MissedSlots        ViolationKind = "missed-slots"      // rule S2
	SlowRecovery       ViolationKind = "recovery"          // rule E
	Malformed          ViolationKind = "malformed"         // rule M
	BadConfig          ViolationKind = "config"            // rule E: a fault kind without a bound
)

// Violation is one broken promise: what was broken, in words that name
// the values involved, and the events that show it.
type Violation struct {
	Kind    ViolationKind
	Message string
	// Events is the excerpt of the history involved, in time order.
	Events []Event
	// Excerpt is Events formatted with [Format], relative to the history's
	// first event.
	Excerpt []string
}

// String returns the kind and message, then the excerpt, one event per
// indented line.
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Kind, v.Message)
	for _, l := range v.Excerpt {
		b.WriteString("\n    ")
		b.WriteString(l)
	}
	return b.String()
}

// Failover is the recovery of one required lease or pool after one fault
// (rule E).
type Failover struct {
	Fault   FaultKind
	Target  string // the fault's Target, or "pid N"
	FaultAt int64  // Time of the fault's start
	// From is when recovery is measured from: the kill, or the heal.
	From  int64
	Lease string // set for a lease
	Pool  string // set for a pool
	// Members is the member count required of the pool's assignment (0:
	// any).
	Members int
	// Recovered says whether a leader (or full assignment) came back; At
	// is when, and Duration is At - From.
	Recovered bool
	At        int64
	Duration  time.Duration
	Bound     time.Duration
	// Superseded is set when another fault struck before this recovery
	// and within its bound; it is then not held to the bound and left out
	// of the statistics.
	Superseded bool
}

// Stats summarises a checked history.
type Stats struct {
	Events int
	// Start and End are the Times of the first and last events.
	Start, End int64
	// Faults counts fault occurrences (start events), in total and per kind.
	Faults       int
	FaultsByKind map[FaultKind]int
	// Failovers lists every recovery measured, in fault order.
	Failovers []Failover
	// MaxFailover, P50Failover and P99Failover are over the recovered,
	// not superseded failovers (nearest-rank percentiles).
	MaxFailover, P50Failover, P99Failover time.Duration
	// Bound is the largest configured bound among the fault kinds that
	// occurred.
	Bound time.Duration

	LeaseTerms, PartitionTerms int
	// GrantTerms counts the terms of grants (keyed locks, semaphore slots,
	// runs of scheduled slots), StickyTerms those of sticky partitions.
	GrantTerms, StickyTerms int
	// SlotsCompleted counts SlotCompleted events, SlotsLost those taken
	// back by SlotLost events, and SlotsDue the slots rule S2 required.
	SlotsCompleted, SlotsLost, SlotsDue int
	// OpenTerms counts terms with no stop event, ended by rule T.
	OpenTerms int
	// ExemptOverlaps counts overlaps accepted under the pause exception.
	ExemptOverlaps int
	AcceptedWrites int
	RejectedWrites int
	ItemsProcessed int
	// ItemsLost counts the processings taken back by ItemLost events:
	// committed on a database that a failover lost.
	ItemsLost int
	// ItemsGone counts the items that ItemGone events excuse from rule D:
	// their insert was lost in a failover.
	ItemsGone int
	// Truncated is copied from the History: files whose cut-off last line
	// was dropped. Not a violation: a killed process may die mid-write.
	Truncated []string
}

// Result is the verdict on a history.
type Result struct {
	Violations []Violation
	Stats      Stats
}

// OK reports whether the history has no violation.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// maxListed caps the values and events a single violation lists.
const maxListed = 20

type proc struct {
	name string
	pid  int
}

// term is one lease term or one partition assignment, as an interval
// [start, end) of Time.
type term struct {
	fam    family
	name   string // lease (of a grant: the lock key's, the slot's or the job's) or pool
	holder string
	proc   proc
	epoch  int64
	gen    int64
	index  int
	count  int
	// semaphore and limit are set for a grant of a semaphore's slot.
	semaphore string
	limit     int

	start, end int64
	startEv    *Event
	stopEv     *Event // nil for an open term
	endEv      *Event // for an open term: the event that ended it
	endRule    string
}

type faultRec struct {
	start *Event
	heal  *Event
}

func (f *faultRec) kind() FaultKind { return f.start.FaultKind }

// targets reports whether f hits the process p, which holds as holder.
func (f *faultRec) targets(p proc, holder string) bool {
	e := f.start
	if e.Target != "" && (e.Target == p.name || e.Target == holder) {
		return true
	}
	return e.TargetPID != 0 && e.TargetPID == p.pid
}

func (f *faultRec) target() string {
	if f.start.Target != "" {
		return f.start.Target
	}
	return "pid " + strconv.Itoa(f.start.TargetPID)
}

type seg struct{ start, end int64 }

type checker struct {
	cfg Config
	evs []Event
	res Result

	lastByProc  map[proc]*Event
	faults      []*faultRec // in start order
	faultEvents []*Event    // every Fault event, in time order
	leaseTerms  map[string][]*term
	poolTerms   map[string][]*term
	grantTerms  map[string][]*term  // by the grant's lease
	stickyTerms map[string][]*term  // by pool
	slots       map[string][]*Event // SlotCompleted events by the job's lease
	lostSlots   []*Event            // SlotLost events, in the order read
	writes      []*Event
	items       map[int64][]*Event
	lostItems   []*Event         // ItemLost events, in the order read
	goneItems   map[int64]*Event // ItemGone events by item
	segCache    map[string][]seg
}

// Check decides whether the history h kept the promises listed in the
// package documentation, and measures recoveries. h need not be sorted.
func Check(h History, cfg Config) Result {
	c := &checker{
		cfg:         cfg,
		evs:         slices.Clone(h.Events),
		lastByProc:  map[proc]*Event{},
		leaseTerms:  map[string][]*term{},
		poolTerms:   map[string][]*term{},
		grantTerms:  map[string][]*term{},
		stickyTerms: map[string][]*term{},
		slots:       map[string][]*Event{},
		items:       map[int64][]*Event{},
		segCache:    map[string][]seg{},
	}
	slices.SortStableFunc(c.evs, func(a, b Event) int { return cmp.Compare(a.Time, b.Time) })
	st := &c.res.Stats
	st.Events = len(c.evs)
	st.FaultsByKind = map[FaultKind]int{}
	if len(c.evs) > 0 {
		st.Start, st.End = c.evs[0].Time, c.evs[len(c.evs)-1].Time
	}
	st.Truncated = slices.Clone(h.Truncated)
	c.scan()
	c.checkOverlaps()
	c.checkEpochs()
	c.checkGenerations()
	c.checkFencing()
	c.checkSupersededWrites()
	c.checkItems()
	jobRules{c}.checkSemaphores()
	jobRules{c}.checkSlots()
	recoveryRules{c}.checkRecovery()
	return c.res
}

func (c *checker) violate(kind ViolationKind, evs []*Event, format string, args ...any) {
	seen := map[*Event]bool{}
	evs = slices.DeleteFunc(evs, func(e *Event) bool {
		dup := e == nil || seen[e]
		seen[e] = true
		return dup
	})
	slices.SortStableFunc(evs, func(a, b *Event) int { return cmp.Compare(a.Time, b.Time) })
	v := Violation{Kind: kind, Message: fmt.Sprintf(format, args...)}
	for _, e := range evs {
		v.Events = append(v.Events, *e)
		v.Excerpt = append(v.Excerpt, Format(*e, c.res.Stats.Start))
	}
	c.res.Violations = append(c.res.Violations, v)
}

func (c *checker) at(t int64) string { return rel(t, c.res.Stats.Start) }

type termKey struct {
	fam          family
	name, holder string
	n            int64 // epoch for a lease or grant, generation for a pool, Since for a sticky partition
	index        int   // the partition of a sticky pool
}

type faultKey struct {
	kind   FaultKind
	target string
	pid    int
}

// scan builds terms, faults, writes and items in one pass (rules T and M).
func (c *checker) scan() {
	open := map[termKey]*term{}
	openFault := map[faultKey][]*faultRec{}
	st := &c.res.Stats
	for i := range c.evs {
		e := &c.evs[i]
		if e.Process != "" || e.PID != 0 {
			c.lastByProc[proc{e.Process, e.PID}] = e
		}
		h := e.holder()
		switch e.Kind {
		case LeaderStart, PartitionStart, GrantStart, StickyStart:
			c.startTerm(e, h, open)
		case LeaderStop, PartitionStop, GrantStop, StickyStop:
			f := familyOf(e.Kind)
			name, n := f.id(e)
			k := termKey{f, name, h, n, f.index(e)}
			t := open[k]
			if t == nil {
				c.violate(Malformed, []*Event{e}, "%s %q: holder %q stopped %s %d at %s, which it had not started",
					f.what(), name, h, f.numName(), n, c.at(e.Time))
				continue
			}
			delete(open, k)
			t.end, t.stopEv, t.endRule = e.Time, e, "its "+string(e.Kind)
		case Write:
			if e.Resource == "" {
				c.violate(Malformed, []*Event{e}, "write by holder %q at %s names no resource", h, c.at(e.Time))
				continue
			}
			if e.Pool == "" && e.Generation != 0 {
				c.violate(Malformed, []*Event{e}, "write to %q by holder %q at %s has generation %d but no pool; a pool write must name its pool",
					e.Resource, h, c.at(e.Time), e.Generation)
				continue
			}
			c.writes = append(c.writes, e)
			if e.Accepted {
				st.AcceptedWrites++
			} else {
				st.RejectedWrites++
			}
		case ItemProcessed:
			c.items[e.Item] = append(c.items[e.Item], e)
			st.ItemsProcessed++
		case ItemLost:
			c.lostItems = append(c.lostItems, e)
		case ItemGone:
			if c.goneItems == nil {
				c.goneItems = map[int64]*Event{}
			}
			c.goneItems[e.Item] = e
		case SlotCompleted, SlotLost:
			if e.Lease == "" || e.Slot == 0 {
				c.violate(Malformed, []*Event{e}, "%s event by holder %q at %s needs a lease and a slot time (got lease %q, slot %d)",
					e.Kind, h, c.at(e.Time), e.Lease, e.Slot)
				continue
			}
			if e.Kind == SlotLost {
				c.lostSlots = append(c.lostSlots, e)
				continue
			}
			c.slots[e.Lease] = append(c.slots[e.Lease], e)
			st.SlotsCompleted++
		case Fault:
			c.scanFault(e, openFault)
		case Note:
		default:
			c.violate(Malformed, []*Event{e}, "event kind %q unknown", e.Kind)
		}
	}
	for _, fs := range openFault {
		for _, f := range fs {
			if f.kind() != FaultKill {
				c.violate(Malformed, []*Event{f.start}, "%s fault on %q started at %s never healed, so recovery from it cannot be checked",
					f.kind(), f.target(), c.at(f.start.Time))
			}
		}
	}
	for _, k := range sortedTermKeys(open) {
		c.closeOpen(open[k])
	}
}

// family is the kind of a term: a lease term, a partition of a pool
// (Run), a grant (a keyed lock, a semaphore slot, or a run of a scheduled
// job, each a lease of its own), or a partition of a sticky pool.
type family int

const (
	famLease family = iota
	famPool
	famGrant
	famSticky
)

func familyOf(k Kind) family {
	switch k {
	case PartitionStart, PartitionStop:
		return famPool
	case GrantStart, GrantStop:
		return famGrant
	case StickyStart, StickyStop:
		return famSticky
	}
	return famLease
}

// id returns the name and token that, with the holder (and, for a sticky
// partition, its index), identify the term e starts or stops.
func (f family) id(e *Event) (name string, n int64) {
	if f.partition() {
		return e.Pool, e.Generation
	}
	return e.Lease, e.Epoch
}

func (f family) index(e *Event) int {
	if f == famSticky {
		return e.Index
	}
	return 0
}

func (f family) partition() bool { return f == famPool || f == famSticky }

func (f family) what() string {
	switch f {
	case famPool:
		return "pool"
	case famGrant:
		return "grant of"
	case famSticky:
		return "sticky pool"
	}
	return "lease"
}

func (f family) numName() string {
	if f.partition() {
		return "generation"
	}
	return "epoch"
}

// startTerm opens the term e starts (rules T and M).
func (c *checker) startTerm(e *Event, h string, open map[termKey]*term) {
	f := familyOf(e.Kind)
	name, n := f.id(e)
	if name == "" || h == "" {
		what := "lease"
		if f.partition() {
			what = "pool"
		}
		c.violate(Malformed, []*Event{e}, "%s event without a %s or holder", e.Kind, what)
		return
	}
	if f.partition() && e.Count <= 0 {
		c.violate(Malformed, []*Event{e}, "%s of pool %q generation %d by holder %q has count %d, want at least 1", e.Kind, name, n, h, e.Count)
		return
	}
	k := termKey{f, name, h, n, f.index(e)}
	if prev := open[k]; prev != nil {
		c.violate(Malformed, []*Event{prev.startEv, e}, "%s %q: holder %q started %s %d again at %s without stopping it (started at %s)",
			f.what(), name, h, f.numName(), n, c.at(e.Time), c.at(prev.start))
		return
	}
	t := &term{fam: f, name: name, holder: h, proc: proc{e.Process, e.PID},
		epoch: e.Epoch, gen: e.Generation, index: e.Index, count: e.Count, semaphore: e.Semaphore, limit: e.Limit,
		start: e.Time, startEv: e}
	open[k] = t
	st := &c.res.Stats
	switch f {
	case famLease:
		c.leaseTerms[name] = append(c.leaseTerms[name], t)
		st.LeaseTerms++
	case famPool:
		c.poolTerms[name] = append(c.poolTerms[name], t)
		st.PartitionTerms++
	case famGrant:
		c.grantTerms[name] = append(c.grantTerms[name], t)
		st.GrantTerms++
	case famSticky:
		c.stickyTerms[name] = append(c.stickyTerms[name], t)
		st.StickyTerms++
	}
}

// sortedTermKeys orders open terms by their start, so that they are
// closed (and counted) in a fixed order.
func sortedTermKeys(m map[termKey]*term) []termKey {
	ks := make([]termKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortStableFunc(ks, func(a, b termKey) int { return cmp.Compare(m[a].start, m[b].start) })
	return ks
}

func (c *checker) scanFault(e *Event, open map[faultKey][]*faultRec) {
	if e.FaultKind == "" || (e.Target == "" && e.TargetPID == 0) {
		c.violate(Malformed, []*Event{e}, "fault event at %s needs a fault kind and a target (got kind %q, target %q, pid %d)",
			c.at(e.Time), e.FaultKind, e.Target, e.TargetPID)
		return
	}
	k := faultKey{e.FaultKind, e.Target, e.TargetPID}
	switch e.Phase {
	case PhaseStart:
		f := &faultRec{start: e}
		c.faults = append(c.faults, f)
		c.faultEvents = append(c.faultEvents, e)
		open[k] = append(open[k], f)
		c.res.Stats.Faults++
		c.res.Stats.FaultsByKind[e.FaultKind]++
	case PhaseHeal:
		fs := open[k]
		if len(fs) == 0 {
			c.violate(Malformed, []*Event{e}, "%s fault on %q healed at %s but never started", e.FaultKind, k.target, c.at(e.Time))
			return
		}
		fs[0].heal = e
		c.faultEvents = append(c.faultEvents, e)
		open[k] = fs[1:]
		if len(open[k]) == 0 {
			delete(open, k)
		}
	default:
		c.violate(Malformed, []*Event{e}, "%s fault at %s has phase %q, want %q or %q", e.FaultKind, c.at(e.Time), e.Phase, PhaseStart, PhaseHeal)
	}
}

// closeOpen ends a term that has no stop event (rule T).
func (c *checker) closeOpen(t *term) {
	c.res.Stats.OpenTerms++
	last := c.lastByProc[t.proc]
	t.end, t.endEv, t.endRule = t.start, t.startEv, "open: ended at its process's last event"
	if last != nil && last.Time > t.end {
		t.end, t.endEv = last.Time, last
	}
	for _, f := range c.faults {
		if f.kind() == FaultKill && f.start.Time >= t.start && f.targets(t.proc, t.holder) {
			if f.start.Time >= t.end {
				t.end, t.endEv = f.start.Time, f.start
				t.endRule = "open: ended by the kill at " + c.at(f.start.Time)
			} else {
				t.endRule = "open: killed at " + c.at(f.start.Time) + ", ended at its process's last event after that"
			}
			return
		}
	}
	for _, f := range c.faults {
		if f.kind() == FaultPause && f.heal != nil && f.start.Time >= t.start && f.targets(t.proc, t.holder) && f.heal.Time > t.end {
			t.end, t.endEv, t.endRule = f.heal.Time, f.heal, "open: ended at the heal of its pause"
		}
	}
}

func (c *checker) describe(t *term) string {
	var id string
	switch {
	case t.fam == famSticky:
		id = fmt.Sprintf("partition %d of %d since generation %d", t.index, t.count, t.gen)
	case t.fam.partition():
		id = fmt.Sprintf("generation %d, index %d of %d", t.gen, t.index, t.count)
	default:
		id = fmt.Sprintf("epoch %d", t.epoch)
	}
	return fmt.Sprintf("holder %q (%s, %s to %s, %s)", t.holder, id, c.at(t.start), c.at(t.end), t.endRule)
}

func (t *term) events() []*Event { return []*Event{t.startEv, t.stopEv, t.endEv} }

// checkOverlaps applies rules A and B1.
func (c *checker) checkOverlaps() {
	for _, lease := range sortedKeys(c.leaseTerms) {
		c.overlaps(LeaseOverlap, fmt.Sprintf("lease %q", lease), c.leaseTerms[lease])
	}
	// A pool's index, or a sticky pool's partition, is owned by one at a
	// time.
	for _, pools := range []struct {
		terms map[string][]*term
		what  string // the format of one index's name: pool, index
	}{{c.poolTerms, "pool %q index %d"}, {c.stickyTerms, "sticky pool %q partition %d"}} {
		for _, pool := range sortedKeys(pools.terms) {
			byIndex := map[int][]*term{}
			for _, t := range pools.terms[pool] {
				byIndex[t.index] = append(byIndex[t.index], t)
			}
			for _, i := range sortedKeys(byIndex) {
				c.overlaps(PartitionOverlap, fmt.Sprintf(pools.what, pool, i), byIndex[i])
			}
		}
	}
	for _, lease := range sortedKeys(c.grantTerms) {
		c.overlaps(GrantOverlap, fmt.Sprintf("grant of %q", lease), c.grantTerms[lease])
	}
}

func (c *checker) overlaps(kind ViolationKind, what string, terms []*term) {
	terms = slices.Clone(terms)
	slices.SortStableFunc(terms, func(a, b *term) int { return cmp.Compare(a.start, b.start) })
	for i, x := range terms {
		for _, y := range terms[i+1:] {
			if y.start >= x.end {
				break
			}
			if y.holder == x.holder || y.end <= y.start {
				continue
			}
			pause, accepted := c.pauseException(x, y)
			if pause != nil && len(accepted) == 0 {
				c.res.Stats.ExemptOverlaps++
				continue
			}
			overlap := time.Duration(min(x.end, y.end) - y.start)
			msg := fmt.Sprintf("%s: %s and %s overlap for %v", what, c.describe(x), c.describe(y), overlap)
			evs := append(x.events(), y.events()...)
			if pause == nil {
				msg += fmt.Sprintf("; %q was not paused between its start and %q's start, so the pause exception does not apply", x.holder, y.holder)
			} else {
				msg += fmt.Sprintf("; %q was paused at %s but %d of its writes were accepted after %q started at %s",
					x.holder, c.at(pause.start.Time), len(accepted), y.holder, c.at(y.start))
				evs = append(evs, pause.start, pause.heal)
				evs = append(evs, accepted[:min(len(accepted), maxListed)]...)
			}
			c.violate(kind, evs, "%s", msg)
		}
	}
}

// pauseException returns the pause that let x overlap its successor y, if
// any, and x's writes accepted after y started (rule P).
func (c *checker) pauseException(x, y *term) (*faultRec, []*Event) {
	var pause *faultRec
	for _, f := range c.faults {
		if f.kind() == FaultPause && f.start.Time <= y.start && (f.heal == nil || f.heal.Time >= x.start) && f.targets(x.proc, x.holder) {
			pause = f
			break
		}
	}
	if pause == nil {
		return nil, nil
	}
	var accepted []*Event
	for _, w := range c.writes {
		if w.Time < y.start || w.Time > x.end || !w.Accepted || w.holder() != x.holder {
			continue
		}
		if x.fam.partition() {
			if w.Pool == x.name && w.Generation == x.gen && (x.fam != famSticky || w.Index == x.index) {
				accepted = append(accepted, w)
			}
		} else if w.Pool == "" && w.Epoch == x.epoch && (w.Lease == "" || w.Lease == x.name) {
			accepted = append(accepted, w)
		}
	}
	return pause, accepted
}

// checkEpochs applies rule A2: an epoch of a lease, or of a grant's
// lease, belongs to one holder.
func (c *checker) checkEpochs() {
	c.epochs("lease", c.leaseTerms)
	c.epochs("grant of", c.grantTerms)
}

func (c *checker) epochs(what string, terms map[string][]*term) {
	for _, lease := range sortedKeys(terms) {
		byEpoch := map[int64][]*term{}
		for _, t := range terms[lease] {
			byEpoch[t.epoch] = append(byEpoch[t.epoch], t)
		}
		for _, e := range sortedKeys(byEpoch) {
			var hs, terms []string
			var evs []*Event
			for _, t := range byEpoch[e] {
				hs = appendNew(hs, strconv.Quote(t.holder))
				terms = append(terms, c.describe(t))
				evs = append(evs, t.startEv)
			}
			if len(hs) > 1 {
				c.violate(ReusedEpoch, evs, "%s %q epoch %d was held by holders %s: %s",
					what, lease, e, strings.Join(hs, ", "), strings.Join(terms, "; "))
			}
		}
	}
}

// checkGenerations applies rule B2.
func (c *checker) checkGenerations() {
	for _, pool := range sortedKeys(c.poolTerms) {
		byGen := map[int64][]*term{}
		for _, t := range c.poolTerms[pool] {
			byGen[t.gen] = append(byGen[t.gen], t)
		}
		for _, g := range sortedKeys(byGen) {
			c.checkGeneration(pool, g, byGen[g])
		}
	}
}

func (c *checker) checkGeneration(pool string, g int64, terms []*term) {
	where := fmt.Sprintf("pool %q generation %d", pool, g)
	counts := map[int][]*term{}
	byHolder := map[string][]*term{}
	byIndex := map[int][]*term{}
	for _, t := range terms {
		counts[t.count] = append(counts[t.count], t)
		byHolder[t.holder] = append(byHolder[t.holder], t)
		byIndex[t.index] = append(byIndex[t.index], t)
		if t.index < 0 || t.index >= t.count {
			c.violate(GenerationMismatch, []*Event{t.startEv}, "%s: holder %q has index %d, outside [0, %d)", where, t.holder, t.index, t.count)
		}
	}
	if len(counts) > 1 {
		var parts []string
		var evs []*Event
		for _, n := range sortedKeys(counts) {
			var hs []string
			for _, t := range counts[n] {
				hs = appendNew(hs, strconv.Quote(t.holder))
				evs = append(evs, t.startEv)
			}
			parts = append(parts, fmt.Sprintf("count %d from %s", n, strings.Join(hs, ", ")))
		}
		c.violate(GenerationMismatch, evs, "%s: members disagree on the count: %s", where, strings.Join(parts, "; "))
	}
	for _, h := range sortedKeys(byHolder) {
		var idx []string
		var evs []*Event
		for _, t := range byHolder[h] {
			idx = appendNew(idx, strconv.Itoa(t.index))
			evs = append(evs, t.startEv)
		}
		if len(idx) > 1 {
			c.violate(GenerationMismatch, evs, "%s: holder %q was given indexes %s", where, h, strings.Join(idx, ", "))
		}
	}
	for _, i := range sortedKeys(byIndex) {
		var hs []string
		var evs []*Event
		for _, t := range byIndex[i] {
			hs = appendNew(hs, strconv.Quote(t.holder))
			evs = append(evs, t.startEv)
		}
		if len(hs) > 1 {
			c.violate(GenerationMismatch, evs, "%s: index %d was given to holders %s", where, i, strings.Join(hs, ", "))
		}
	}
}

// checkFencing applies rule C.
func (c *checker) checkFencing() {
	type state struct {
		newest *Event
		stale  []*Event
		before []*Event // the newest write when each stale write was accepted
	}
	byRes := map[string]*state{}
	for _, w := range c.writes {
		if !w.Accepted {
			continue
		}
		s := byRes[w.Resource]
		if s == nil {
			s = &state{}
			byRes[w.Resource] = s
		}
		_, tok := w.token()
		if s.newest == nil {
			s.newest = w
			continue
		}
		_, newest := s.newest.token()
		switch {
		case tok < newest:
			s.stale = append(s.stale, w)
			s.before = append(s.before, s.newest)
		case tok > newest:
			s.newest = w
		}
	}
	for _, r := range sortedKeys(byRes) {
		s := byRes[r]
		if len(s.stale) == 0 {
			continue
		}
		w, nw := s.stale[0], s.before[0]
		name, tok := w.token()
		_, ntok := nw.token()
		evs := []*Event{nw}
		for i := range min(len(s.stale), maxListed) {
			evs = append(evs, s.before[i], s.stale[i])
		}
		c.violate(StaleWrite, evs, "resource %q: %d accepted writes went back in %s; first: holder %q wrote with %s %d at %s after holder %q wrote with %s %d at %s",
			r, len(s.stale), name, w.holder(), name, tok, c.at(w.Time), nw.holder(), name, ntok, c.at(nw.Time))
	}
}

// checkSupersededWrites applies rule C's second part: no write is accepted
// with a token older than that of a term of its lease or pool that had
// already started.
func (c *checker) checkSupersededWrites() {
	type newer struct {
		token    int64
		minStart int64 // earliest start among terms with this token or a newer one
		t        *term
	}
	idx := map[string][]newer{}
	for name, ts := range c.leaseTerms {
		for _, t := range ts {
			idx["lease\x00"+name] = append(idx["lease\x00"+name], newer{token: t.epoch, minStart: t.start, t: t})
		}
	}
	for name, ts := range c.grantTerms {
		for _, t := range ts {
			idx["lease\x00"+name] = append(idx["lease\x00"+name], newer{token: t.epoch, minStart: t.start, t: t})
		}
	}
	for name, ts := range c.poolTerms {
		for _, t := range ts {
			idx["pool\x00"+name] = append(idx["pool\x00"+name], newer{token: t.gen, minStart: t.start, t: t})
		}
	}
	for name, ts := range c.stickyTerms {
		for _, t := range ts {
			k := stickyKey(name, t.index)
			idx[k] = append(idx[k], newer{token: t.gen, minStart: t.start, t: t})
		}
	}
	for _, list := range idx {
		slices.SortStableFunc(list, func(a, b newer) int { return cmp.Compare(a.token, b.token) })
		for i := len(list) - 2; i >= 0; i-- {
			if list[i+1].minStart < list[i].minStart {
				list[i].minStart, list[i].t = list[i+1].minStart, list[i+1].t
			}
		}
	}
	type found struct {
		first *Event
		by    newer // the earliest-started newer term
		n     int
	}
	byRes := map[string]*found{}
	for _, w := range c.writes {
		if !w.Accepted {
			continue
		}
		var key string
		switch {
		case w.Pool != "" && c.stickyTerms[w.Pool] != nil:
			key = stickyKey(w.Pool, w.Index)
		case w.Pool != "":
			key = "pool\x00" + w.Pool
		case w.Lease != "":
			key = "lease\x00" + w.Lease
		default:
			continue // not tied to one lease
		}
		_, tok := w.token()
		list := idx[key]
		i, _ := slices.BinarySearchFunc(list, tok+1, func(n newer, tok int64) int { return cmp.Compare(n.token, tok) })
		if i == len(list) || list[i].minStart >= w.Time {
			continue
		}
		f := byRes[w.Resource]
		if f == nil {
			f = &found{first: w, by: list[i]}
			byRes[w.Resource] = f
		}
		f.n++
	}
	for _, r := range sortedKeys(byRes) {
		f := byRes[r]
		name, tok := f.first.token()
		by := f.by.t.startEv
		c.violate(StaleWrite, []*Event{by, f.first}, "resource %q: %d accepted writes were superseded when made; first: holder %q wrote with %s %d at %s, after holder %q started a term with %s %d at %s",
			r, f.n, f.first.holder(), name, tok, c.at(f.first.Time), by.holder(), name, f.by.token, c.at(by.Time))
	}
}

// stickyKey indexes the terms of one partition of a sticky pool.
func stickyKey(pool string, index int) string {
	return "sticky\x00" + pool + "\x00" + strconv.Itoa(index)
}

// takeBackLostItems removes, for each ItemLost, the ItemProcessed of the
// same item, holder and generation recorded before it: a processing the
// database lost (rule D).
func (c *checker) takeBackLostItems() {
	for _, l := range c.lostItems {
		evs := c.items[l.Item]
		i := slices.IndexFunc(evs, func(e *Event) bool {
			return e.Holder == l.Holder && e.Generation == l.Generation && e.Time <= l.Time
		})
		if i < 0 {
			c.violate(Malformed, []*Event{l}, "item %d lost at %s by holder %q generation %d, which has no such processing before it",
				l.Item, c.at(l.Time), l.Holder, l.Generation)
			continue
		}
		if evs = slices.Delete(evs, i, i+1); len(evs) == 0 {
			// An item that exists only on a database that was lost (fed
			// and processed there) is neither processed nor outside 1..N.
			delete(c.items, l.Item)
		} else {
			c.items[l.Item] = evs
		}
		c.res.Stats.ItemsLost++
	}
}

// checkItems applies rule D.
func (c *checker) checkItems() {
	n := c.cfg.Items
	if n <= 0 {
		return
	}
	c.takeBackLostItems()
	var lost []int64
	for i := int64(1); i <= n; i++ {
		if g := c.goneItems[i]; g != nil {
			if len(c.items[i]) > 0 {
				c.violate(Malformed, append([]*Event{g}, c.items[i]...), "item %d is gone with a failed-over database at %s but was processed %d times elsewhere",
					i, c.at(g.Time), len(c.items[i]))
			}
			c.res.Stats.ItemsGone++
			continue
		}
		if len(c.items[i]) == 0 {
			lost = append(lost, i)
		}
	}
	if len(lost) > 0 {
		c.violate(LostItems, nil, "%d of %d items never processed: %s", len(lost), n, ranges(lost))
	}
	var dups, unknown []int64
	for _, i := range sortedKeys(c.items) {
		switch {
		case i < 1 || i > n:
			unknown = append(unknown, i)
		case len(c.items[i]) > 1:
			dups = append(dups, i)
		}
	}
	if len(dups) > 0 {
		var parts []string
		var evs []*Event
		for _, i := range dups[:min(len(dups), maxListed)] {
			var by []string
			for _, e := range c.items[i] {
				by = append(by, fmt.Sprintf("%q gen %d at %s", e.holder(), e.Generation, c.at(e.Time)))
				evs = append(evs, e)
			}
			parts = append(parts, fmt.Sprintf("%d (%d times: %s)", i, len(c.items[i]), strings.Join(by, ", ")))
		}
		if len(dups) > maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(dups)-maxListed))
		}
		c.violate(DuplicateItems, evs, "%d items processed more than once: %s", len(dups), strings.Join(parts, "; "))
	}
	if len(unknown) > 0 {
		var evs []*Event
		for _, i := range unknown[:min(len(unknown), maxListed)] {
			evs = append(evs, c.items[i]...)
		}
		c.violate(UnknownItems, evs, "%d processed items are outside 1..%d: %s", len(unknown), n, ranges(unknown))
	}
}

// ranges renders sorted integers compactly: "3, 7-9, 12", listing at most
// maxListed runs.
func ranges(xs []int64) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if len(parts) == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(xs)-i))
			break
		}
		if i == j {
			parts = append(parts, strconv.FormatInt(xs[i], 10))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func appendNew(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// percentile returns the nearest-rank p-th percentile of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
