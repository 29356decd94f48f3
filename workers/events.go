package workers

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// EventKind says what happened.
type EventKind int

const (
	// EventStartedLeading means a singleton worker won its election and its
	// function is about to run under the new term (Lease, Epoch).
	EventStartedLeading EventKind = iota + 1
	// EventStoppedLeading means a singleton's term ended, its function
	// returned and the lease was released. Err says why the term ended:
	// coordination.ErrReleased when the function finished its work,
	// coordination.ErrLeaseLost when the lease was lost,
	// coordination.ErrResigned when a resign was requested
	// (coordination.Coordinator.Resign), coordination.ErrUnhealthy when the
	// process stepped down after failed health checks
	// (coordination.Config.HealthCheck), coordination.ErrClosed when the
	// host is shutting down.
	EventStoppedLeading
	// EventAssignmentChanged means a partitioned worker's assignment
	// changed; Assignment is the new one.
	EventAssignmentChanged
	// EventWorkerError means a worker function returned an error or
	// panicked (Err is then a *PanicError), or a worker could not
	// campaign. The host carries on; see Config.RestartBackoff.
	EventWorkerError
	// EventShutdownOverrun means a worker function was still running
	// ShutdownTimeout after shutdown began. Host.Run returns without it;
	// its lease (Lease, Epoch) is not released and expires after TTL.
	EventShutdownOverrun
	// EventCoordination carries one of the host's coordinator's own
	// events in Coordination: a lease acquired, lost or released, a leader
	// seen to change, a failed database operation (see
	// coordination.EventKind). Worker names the worker whose election or
	// pool it concerns, and is empty for an event that concerns none (a
	// failed renewal of the session, say); Lease, Epoch, Err and Time are
	// the coordinator event's.
	EventCoordination
	// EventSlotStarted means a scheduled worker claimed slot Slot under the
	// term (Lease, Epoch) and is about to call its function.
	EventSlotStarted
	// EventSlotDone means a scheduled worker recorded slot Slot as over
	// under the term: Err is nil when the slot completed, and the
	// function's error when it failed. A run interrupted by the end of the
	// term has no EventSlotDone.
	EventSlotDone
	// EventPartitionStarted means a sticky partitioned worker
	// (ClusterSticky, GlobalSticky) is about to work on Partition, which
	// no other process works on now.
	EventPartitionStarted
	// EventPartitionStopped means a sticky partitioned worker's function
	// returned for the last time on Partition: Err is nil when it
	// finished, and otherwise why the partition's context ended (moved to
	// another process, membership lost, shutdown).
	EventPartitionStopped
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventStartedLeading:
		return "started-leading"
	case EventStoppedLeading:
		return "stopped-leading"
	case EventAssignmentChanged:
		return "assignment-changed"
	case EventWorkerError:
		return "worker-error"
	case EventShutdownOverrun:
		return "shutdown-overrun"
	case EventCoordination:
		return "coordination"
	case EventSlotStarted:
		return "slot-started"
	case EventSlotDone:
		return "slot-done"
	case EventPartitionStarted:
		return "partition-started"
	case EventPartitionStopped:
		return "partition-stopped"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one notification from a Host.
type Event struct {
	Kind EventKind
	// Worker is the name of the worker the event is about.
	Worker string
	// Lease is the full lease name of the term the event is about, such as
	// "cluster/eu-1/cache-warmer"; empty when no term is involved.
	Lease string
	// Epoch is the fencing epoch of that term.
	Epoch int64
	// Assignment is the new assignment, for EventAssignmentChanged.
	Assignment *Assignment
	// Partition is the partition, for EventPartitionStarted and
	// EventPartitionStopped; Lease is then its pool's key, Epoch the
	// epoch of this process's membership.
	Partition *coordination.Partition
	// Slot is the slot's time (database clock, UTC), for EventSlotStarted
	// and EventSlotDone.
	Slot time.Time
	// Err is the cause, for StoppedLeading, WorkerError and
	// ShutdownOverrun, and the coordinator event's for Coordination.
	Err error
	// Coordination is the coordinator's event, for EventCoordination. Its
	// Dropped is always 0: this Event's Dropped counts for the host's
	// subscription.
	Coordination *coordination.Event
	// Time is when the event was recorded, on this process's clock.
	Time time.Time
	// Dropped is how many events this subscription dropped, because its
	// buffer was full, just before this one.
	Dropped int
}

// Subscribe returns a channel of the host's events and a function that
// ends the subscription and closes the channel. The one stream carries the
// workers' events and the coordinator's own (elections, releases, renewal
// errors) as EventCoordination, each tagged with the worker it concerns.
//
// Delivery never blocks a worker or the coordinator. Events arrive in the
// order they happened. When the channel's buffer (size buffer, at least
// 1) is full, new events are dropped, and the next event delivered carries
// the number dropped in Event.Dropped. The channel is closed when Run
// returns; a subscription made after that is closed at once.
func (h *Host) Subscribe(buffer int) (<-chan Event, func()) {
	return h.events.Subscribe(buffer)
}

func stampDropped(ev Event, n int) Event {
	ev.Dropped = n
	return ev
}

// emit stamps ev with the time and sends it to every subscriber without
// blocking.
func (h *Host) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	h.events.Send(ev)
}

// relay is the host's tap on its coordinator's events (set by NewHost): it
// tags each with the worker it concerns and emits it, in the order the
// coordinator emitted them. It runs on the coordinator's goroutine, so it
// only reads maps that are fixed once NewHost returns, and never blocks.
func (h *Host) relay(v any) {
	ev := v.(coordination.Event)
	out := Event{Kind: EventCoordination, Lease: ev.Lease, Epoch: ev.Epoch, Err: ev.Err, Time: ev.Time, Coordination: &ev}
	st := h.byLease[ev.Lease]
	if ev.Pool != "" {
		st = h.byPool[ev.Pool]
	}
	if st != nil {
		out.Worker = st.w.Name()
	}
	h.emit(out)
}
