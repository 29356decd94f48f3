// Package history is the record of a fault-injection run and the checker
// that decides, from that record alone, whether leasehold kept its
// promises. A chaos suite runs workers as separate OS processes against a
// real database and injects faults; every process appends [Event]s to its
// own file through a [Recorder]; [ReadFiles] merges the files into one
// [History]; [Check] applies the rules below and returns a [Result];
// [Report] prints the verdict of every dialect.
//
// The rules are stated here exactly as the checker implements them. The
// same letters appear in the code and in [ViolationKind].
//
// # Clock
//
// Event.Time is CLOCK_MONOTONIC in nanoseconds ([Now]). On one Linux machine
// every process reads the same clock, it never jumps, and an application
// wall clock set hours off (the clock-skew fault) does not move it, so
// times from different processes' files compare directly. Histories from
// different machines cannot be merged. A Recorder stamps Time when it is
// handed the event, that is after the outcome is known (a Write after its
// commit or rollback); a caller may set Time itself. Times in violation
// messages are relative to the first event of the history ("+12.000250s").
//
// # Files
//
// One JSON object per line, one file per process, written by [Recorder]:
// each event is a single write call of a complete line, unbuffered and not
// fsynced (the page cache survives the process being killed or stopped).
// A Recorder stops writing after a failed write, so a partial line can only
// be a file's last. [ReadFiles] sorts all events by Time, stably: equal
// times keep the order of the files given, then of their lines. A last line
// that lacks its newline and does not decode is a write cut off by a kill;
// it is dropped and listed in History.Truncated. Any other line that does
// not decode is an error naming the file and line.
//
// # Events
//
// Every event has Time, Kind, Process (the recording process's holder
// string "node/cluster/instance") and PID. Holder is the holder the event is
// about; when empty it is Process (the Recorder fills it in for the kinds
// that need one). Fields by kind:
//
//   - LeaderStart, LeaderStop: Lease, Holder, Epoch. Recorded when the
//     leader function starts, and when the library ends the term (its
//     context is done: the holder's trust deadline passed, the lease was
//     lost or released) or the function returns, whichever comes first. A
//     write still in flight after the stop is judged by rule C.
//   - PartitionStart, PartitionStop: Pool, Index, Count, Generation, Epoch
//     (of the membership lease), Holder. A term is identified by (Pool,
//     Holder, Generation).
//   - Write: Resource, Holder, Accepted, Err, and the fencing token: Epoch,
//     or, for a pool write, Pool and Generation (and Index, the partition,
//     for a sticky pool's). Optionally Lease, to tie a write to one lease
//     (or grant) when a holder holds several. One fenced write
//     attempt; Accepted says whether the database committed it.
//   - GrantStart, GrantStop: Lease, Holder, Epoch, and for a semaphore's
//     slot Semaphore and Limit. One grant of a lease of its own: a keyed
//     lock's key (Lease is the key's lease), a semaphore's slot, or one
//     run of a scheduled job's slot under the job's lease. Recorded as
//     LeaderStart and LeaderStop are. A term is identified by (Lease,
//     Holder, Epoch).
//   - StickyStart, StickyStop: Pool, Index (the partition), Count (the
//     pool's partitions), Generation (the generation since which the
//     holder owns the partition), Epoch (of the membership lease),
//     Holder. A partition of a sticky pool, from the start of its work to
//     its end. A term is identified by (Pool, Holder, Index, Generation).
//   - SlotCompleted: Lease (the scheduled job's), Slot (the slot's time by
//     the database clock, Unix nanoseconds), Epoch, Holder. Recorded only
//     after the fenced transaction that completed the slot committed.
//   - SlotLost: Lease, Slot, Epoch, Holder. Recorded by the harness for a
//     SlotCompleted whose commit the database lost in a failover, as
//     ItemLost is.
//   - ItemProcessed: Item, Holder, Generation. Recorded only after the
//     write that processed the item was accepted.
//   - ItemLost: Item, Holder, Generation. Recorded by the harness for an
//     ItemProcessed whose commit the database lost: one made on the old
//     primary of a failover to an asynchronous standby, after the standby
//     last caught up (see rule D).
//   - ItemGone: Item. Recorded by the harness for an item that the final
//     table does not have after a failover to an asynchronous standby: its
//     insert was acknowledged by the old primary after the standby last
//     caught up, and lost with it, so there was nothing to process.
//   - Fault: FaultKind, Target and/or TargetPID, Phase (start or heal), and
//     optionally Members (pool -> member count expected once recovered).
//     Recorded by the harness, just before it injects (start) or removes
//     (heal) the fault. A heal pairs with the earliest unhealed start of the
//     same FaultKind, Target and TargetPID. A kill has only a start; a heal
//     of a kill, if recorded, means the process was started again (as a new
//     holder) and is otherwise ignored.
//   - Note: Text, for people.
//
// A fault hits a process when its Target equals the process's Process or
// the term's Holder, or its TargetPID equals the process's PID. A process
// is the pair (Process, PID) of an event.
//
// # Rule T: terms
//
// A lease term is the interval [start, end) from a LeaderStart to the
// LeaderStop with the same (Lease, Holder, Epoch); a partition term is the
// same for (Pool, Holder, Generation), a grant's for (Lease, Holder,
// Epoch) of GrantStart and GrantStop, and a sticky partition's for (Pool,
// Holder, Index, Generation) of StickyStart and StickyStop. A holder may start the same term
// again after stopping it (a worker function restarted after an error). A
// term with no stop event is open, and ends:
//
//  1. if a kill Fault hits its process at or after the term's start: at
//     the first such kill, or at the process's last recorded event if that
//     is later (a harness records the kill just before sending SIGKILL);
//  2. otherwise at the later of the process's last recorded event (any
//     kind) and the heal of every pause Fault that hit the process at or
//     after the term's start (a paused process can act again when resumed).
//
// So a process that stays alive must record its stops (the worker does so
// through [Term]: when the term's context is done or its function returns,
// including at shutdown), and the harness must record every kill. A live holder that records nothing cannot be seen.
//
// # Rule A: one leader per lease
//
// For each lease, no two terms of different holders overlap: for terms X
// and Y with X.start <= Y.start, a violation when Y.start < X.end (and Y is
// not empty). Touching terms (X.end == Y.start) do not overlap. Violation
// [LeaseOverlap].
//
// # Rule A2: one holder per epoch
//
// For each lease and epoch, every term of that epoch has the same holder,
// whenever it held it: a fencing token names one holder, so a successor
// that gets an epoch already issued (an acquisition lost with a database
// that failed over) could pass a fence meant for the other. The same
// holder may hold an epoch in several terms (rule T). Violation
// [ReusedEpoch].
//
// # Rule P: the pause exception, the only one
//
// An overlap of X and its successor Y is allowed when
//
//   - a pause Fault hit X's process while it held, at or before the
//     takeover: the pause, from its start to its heal (or the end of the
//     history), meets [X.start, Y.start]. A pause recorded a moment
//     before X.start counts: the runner records it before its SIGSTOP
//     lands, and the process may record X's start in between. And
//   - X has no accepted Write in [Y.start, X.end] attributed to it. For a
//     lease or grant term a Write is attributed when it has X's Holder, no
//     Pool, Epoch equal to X's epoch, and Lease equal to X's lease or
//     empty. For a partition term: X's Holder, Pool and Generation, and
//     for a sticky partition also its Index.
//
// Rejected writes of X during the overlap are expected (the fence refused
// them). Allowed overlaps are counted in Stats.ExemptOverlaps.
//
// # Rule B: partitions
//
// B1 (violation [PartitionOverlap]): for each pool and index, rule A with
// rule P over the partition terms with that index, whatever their
// generation; and the same for each sticky pool and partition.
//
// B2 (violation [GenerationMismatch]): for each pool and generation, over
// its PartitionStart events: every member gives the same Count; each
// holder has one Index; no Index is given to two holders; 0 <= Index <
// Count.
//
// # Rule C: fencing
//
// For each Resource, the accepted writes in Time order never go back: a
// violation ([StaleWrite]) for an accepted write whose token (Generation
// for a pool write, Epoch otherwise) is lower than that of an earlier
// accepted write. Equal tokens are fine. Rejected writes are ignored. One
// violation per resource, counting and showing the stale writes.
//
// Second part, also [StaleWrite]: no accepted write was superseded when it
// was made. An accepted Write with Lease L (or Pool P) and token t is a
// violation when a term of L (a lease or grant term; or of P) with a newer
// token (Epoch, or Generation) started before the write's Time. For a
// sticky pool's write, the terms are those of its partition (Index) only. The fence's database check
// and its share lock order a successor's takeover after every write it
// lets commit, so such a write means the fence failed.
//
// # Rule D: exactly once
//
// When Config.Items is N > 0, every item 1..N has exactly one
// ItemProcessed event. Items with none are reported together
// ([LostItems]), items with more than one together with the holders and
// generations that processed them ([DuplicateItems]), and items outside
// 1..N ([UnknownItems]). An ItemLost event takes back the ItemProcessed
// of the same item, holder and generation recorded before it: the
// database that acknowledged that processing is gone, so the item is
// processed again, and that is the one that counts. An ItemLost that
// matches no such event is [Malformed]. An item with an ItemGone event
// is not expected to be processed; one that still has an ItemProcessed
// event once the lost ones are taken back is [Malformed].
//
// # Rule G: grants
//
// G1 (violation [GrantOverlap]): for each grant's lease (a lock key, a
// semaphore slot, a scheduled job), rule A with rule P over its grant
// terms. Rule A2 applies to them too ([ReusedEpoch]).
//
// G2 (violation [SemaphoreOverflow]): for each Semaphore, at no time are
// more grant terms of its slots live than its Limit (the largest the
// events give). A term X stops counting at the start of a successor Y on
// its slot that rule P allowed to overlap it (X was paused), or at its
// end. One violation per semaphore, naming the grants live at the first
// time over the limit.
//
// # Rule S: scheduled slots
//
// S1 (violation [DuplicateSlots]): each (Lease, Slot) has at most one
// SlotCompleted event. A SlotLost takes back the SlotCompleted of the same
// lease, slot, holder and epoch recorded before it; one that matches none
// is [Malformed].
//
// S2 (violation [MissedSlots]), for each Config.Slots entry (a job whose
// misfire policy runs every missed slot, whose slots are the multiples of
// Every; under run-once a stalled runner skips slots by design):
// every slot due once the faults stopped and the job recovered was
// completed. The job's final term is the (Holder, Epoch) of its latest
// grant term (its runs). For each fault, with r the kill for a kill and
// the heal for any other kind, the job has recovered at the earlier of r
// + Config.Bound[kind] and the start of the first run of the final term
// at or after r (a run of an older term after r does not count: that term
// may still end). Let Q be the latest of these over all faults (the
// history's first event when there was no fault; a kind without a bound
// is [BadConfig]) and U be ObserveUntil (default: the last event) less
// Margin. Slot times are by the database clock; a slot s is mapped to
// history time s + d, where d is the median of Time - Slot over the job's
// completions (an on-time slot completes milliseconds after its time).
// The due slots are those whose mapped time lies in [Q, U]; each must
// have a SlotCompleted. A job with no completion at all is a violation
// when U - Q is at least Every. Stats.SlotsDue counts the due slots.
//
// # Rule E: recovery
//
// Checked when Config.Leases or Config.Pools is set. Every fault kind that
// occurs needs Config.Bound[kind] ([BadConfig] otherwise). For each fault F
// with bound B, recovery is measured from r: the kill for a kill, the heal
// for any other kind. Let next be the time of the first Fault event after r
// that is not F's own start or heal, and O be Config.ObserveUntil (default:
// the last event). The window ends at w = max(r, min(r+B, next, O)).
//
// A lease is held at t when one of its terms is live at t (start <= t <
// end). A pool is fully assigned at t when, for some generation whose
// Count equals the expected member count (F's heal Members for the pool,
// else F's start Members, else PoolRequirement.Members; 0 accepts any
// count), every index 0..Count-1 is held by a live term of that
// generation. The lease or pool has recovered at the earliest t >= r from
// which it is held without a gap until w; if it is not held without a gap
// through w from any t < w, at the first t >= w at which it is held. So a
// leader that is still live at the heal but loses its lease right after
// does not count; its successor does.
//
// Each (fault, lease or pool) pair is a [Failover] with Duration t - r. It
// is a violation ([SlowRecovery]) when Duration > B or when it never
// recovered, unless another fault struck first: when next <= r+B and next
// comes at or before the recovery (or there is none), the failover is marked
// Superseded and not held to its bound. Space faults more than their bound
// apart, and leave at least the bound between the last fault and
// ObserveUntil.
//
// # Rule M: malformed histories
//
// A history the rules cannot be applied to is itself a violation
// ([Malformed]): a start or stop without a lease or pool name, a
// PartitionStart with Count < 1, a term started again while open, a stop
// of a term never started, a Write without Resource or with a Generation
// but no Pool, a Fault without a kind or target, with an unknown phase, a
// heal that was never started, or a start (other than a kill) never healed.
//
// # Statistics
//
// Stats counts fault occurrences (start events) in total and per kind,
// lists every failover, and gives MaxFailover, P50Failover and P99Failover
// (nearest rank) over the recovered failovers that were not superseded;
// Stats.Bound is the largest bound among the fault kinds that occurred.
package history
