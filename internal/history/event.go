package history

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kind says what an [Event] records.
type Kind string

// The event kinds. The fields each kind uses are listed in the package
// documentation.
const (
	LeaderStart    Kind = "leader-start"
	LeaderStop     Kind = "leader-stop"
	PartitionStart Kind = "partition-start"
	PartitionStop  Kind = "partition-stop"
	Write          Kind = "write"
	ItemProcessed  Kind = "item"
	ItemLost       Kind = "item-lost"
	ItemGone       Kind = "item-gone"
	GrantStart     Kind = "grant-start"
	GrantStop      Kind = "grant-stop"
	StickyStart    Kind = "sticky-start"
	StickyStop     Kind = "sticky-stop"
	SlotCompleted  Kind = "slot-completed"
	SlotLost       Kind = "slot-lost"
	Fault          Kind = "fault"
	Note           Kind = "note"
)

// Known reports whether k is one of the kinds above.
func (k Kind) Known() bool {
	switch k {
	case LeaderStart, LeaderStop, PartitionStart, PartitionStop, Write, ItemProcessed, ItemLost, ItemGone, Fault, Note,
		GrantStart, GrantStop, StickyStart, StickyStop, SlotCompleted, SlotLost:
		return true
	}
	return false
}

// holderKind reports whether events of kind k are about a holder, so that
// an empty Holder means the recording process.
func (k Kind) holderKind() bool {
	switch k {
	case LeaderStart, LeaderStop, PartitionStart, PartitionStop, Write, ItemProcessed, ItemLost,
		GrantStart, GrantStop, StickyStart, StickyStop, SlotCompleted, SlotLost:
		return true
	}
	return false
}

// FaultKind names an injected fault.
type FaultKind string

// The faults the chaos suite injects. Other names are accepted; each kind
// that occurs needs a bound in [Config.Bound] when recovery is checked.
const (
	FaultKill            FaultKind = "kill"             // SIGKILL of a process
	FaultPause           FaultKind = "pause"            // SIGSTOP, then SIGCONT at heal
	FaultCut             FaultKind = "cut"              // network cut between a process (or all) and the database
	FaultLatency         FaultKind = "latency"          // added network latency
	FaultDBRestart       FaultKind = "db-restart"       // the database server restarted
	FaultClockSkew       FaultKind = "clock-skew"       // an application wall clock set hours off
	FaultPoolExhaustion  FaultKind = "pool-exhaustion"  // the connection pool held by leaked transactions
	FaultFailoverSync    FaultKind = "failover-sync"    // a synchronous standby promoted, the primary stopped
	FaultFailoverAsync   FaultKind = "failover-async"   // an asynchronous standby promoted, the primary's last writes lost
	FaultGaleraNodeKill  FaultKind = "galera-node-kill" // a Galera node SIGKILLed, then started again to rejoin
	FaultGaleraPartition FaultKind = "galera-partition" // a Galera node cut off the others, then let back
)

// Phase says whether a Fault event starts or heals its fault.
type Phase string

// The phases of a fault. A kill has only a start; a heal of a kill, if
// recorded, means the process was started again (as a new holder).
const (
	PhaseStart Phase = "start"
	PhaseHeal  Phase = "heal"
)

// Event is one line of a history. Which fields are set depends on Kind; the
// package documentation lists them. Zero fields are left out of the JSON.
type Event struct {
	// Time is CLOCK_MONOTONIC in nanoseconds, from [Now].
	Time int64 `json:"t"`
	Kind Kind  `json:"kind"`
	// Process is the holder string ("node/cluster/instance") of the process
	// that recorded the event, and PID its operating-system process id.
	Process string `json:"process,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Holder is the holder the event is about; empty means Process.
	Holder string `json:"holder,omitempty"`

	Lease      string `json:"lease,omitempty"`
	Pool       string `json:"pool,omitempty"`
	Index      int    `json:"index,omitempty"`
	Count      int    `json:"count,omitempty"`
	Generation int64  `json:"gen,omitempty"`
	Epoch      int64  `json:"epoch,omitempty"`

	// Resource is what a Write wrote to; Accepted says whether the
	// database committed it, and Err is the error it returned otherwise.
	Resource string `json:"resource,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
	Err      string `json:"err,omitempty"`

	Item int64 `json:"item,omitempty"`

	// Semaphore names the semaphore of a grant of one of its slots, and
	// Limit is its limit.
	Semaphore string `json:"semaphore,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	// Slot is the time of a scheduled slot, by the database clock, in
	// nanoseconds since the Unix epoch.
	Slot int64 `json:"slot,omitempty"`

	FaultKind FaultKind `json:"fault,omitempty"`
	// Target is the process a fault hits: its holder string, or the name of
	// a shared resource ("postgres", "proxy"). TargetPID, when set, names the
	// process by pid instead.
	Target    string `json:"target,omitempty"`
	TargetPID int    `json:"target_pid,omitempty"`
	Phase     Phase  `json:"phase,omitempty"`
	// Members gives, per pool, the member count a full assignment must have
	// once the pool has recovered from this fault.
	Members map[string]int `json:"members,omitempty"`

	Text string `json:"text,omitempty"`

	// Source is "file:line" for an event read by [ReadFiles]; it is not
	// written.
	Source string `json:"-"`
}

// holder returns the holder an event is about.
func (e *Event) holder() string {
	if e.Holder != "" {
		return e.Holder
	}
	return e.Process
}

// token is the fencing token of a Write: its Generation for a pool write
// (Pool set), its Epoch otherwise.
func (e *Event) token() (name string, v int64) {
	if e.Pool != "" {
		return "generation", e.Generation
	}
	return "epoch", e.Epoch
}

// Format renders e on one line, with its time relative to start (the first
// event of the history; 0 prints absolute times).
func Format(e Event, start int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rel(e.Time, start), e.Kind)
	add := func(k, v string) { fmt.Fprintf(&b, " %s=%s", k, v) }
	q := strconv.Quote
	if h := e.holder(); h != "" && e.Kind.holderKind() {
		add("holder", q(h))
	}
	switch e.Kind {
	case LeaderStart, LeaderStop, GrantStart, GrantStop:
		add("lease", q(e.Lease))
		add("epoch", strconv.FormatInt(e.Epoch, 10))
		if e.Semaphore != "" {
			add("semaphore", q(e.Semaphore))
			add("limit", strconv.Itoa(e.Limit))
		}
	case SlotCompleted, SlotLost:
		add("lease", q(e.Lease))
		add("slot", time.Unix(0, e.Slot).UTC().Format(time.RFC3339Nano))
		add("epoch", strconv.FormatInt(e.Epoch, 10))
	case PartitionStart, PartitionStop, StickyStart, StickyStop:
		add("pool", q(e.Pool))
		add("gen", strconv.FormatInt(e.Generation, 10))
		add("index", strconv.Itoa(e.Index))
		add("count", strconv.Itoa(e.Count))
		if e.Epoch != 0 {
			add("epoch", strconv.FormatInt(e.Epoch, 10))
		}
	case Write:
		add("resource", q(e.Resource))
		if e.Lease != "" {
			add("lease", q(e.Lease))
		}
		if e.Pool != "" {
			add("pool", q(e.Pool))
			if e.Index != 0 {
				add("index", strconv.Itoa(e.Index))
			}
		}
		name, v := e.token()
		add(name, strconv.FormatInt(v, 10))
		add("accepted", strconv.FormatBool(e.Accepted))
		if e.Err != "" {
			add("err", q(e.Err))
		}
	case ItemProcessed, ItemLost, ItemGone:
		add("item", strconv.FormatInt(e.Item, 10))
		if e.Generation != 0 {
			add("gen", strconv.FormatInt(e.Generation, 10))
		}
	case Fault:
		add("fault", string(e.FaultKind))
		add("phase", string(e.Phase))
		if e.Target != "" {
			add("target", q(e.Target))
		}
		if e.TargetPID != 0 {
			add("target_pid", strconv.Itoa(e.TargetPID))
		}
		if len(e.Members) > 0 {
			pools := make([]string, 0, len(e.Members))
			for p := range e.Members {
				pools = append(pools, p)
			}
			sort.Strings(pools)
			for _, p := range pools {
				add("members["+p+"]", strconv.Itoa(e.Members[p]))
			}
		}
	}
	if e.Text != "" {
		add("text", q(e.Text))
	}
	add("process", q(e.Process))
	if e.PID != 0 {
		add("pid", strconv.Itoa(e.PID))
	}
	if e.Source != "" {
		fmt.Fprintf(&b, " (%s)", e.Source)
	}
	return b.String()
}

// rel formats a monotonic time relative to start as seconds with
// microseconds, for example "+12.000250s".
func rel(t, start int64) string {
	d := t - start
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%d.%06ds", sign, d/1e9, d%1e9/1e3)
}
