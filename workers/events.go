package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// EventKind says what happened.
type EventKind int

const (
	// EventStartedLeading means a singleton, limited or scheduled worker
	// started a term (Key, Epoch) and its function is about to run.
	EventStartedLeading EventKind = iota + 1
	// EventStoppedLeading means such a term ended, its function returned
	// and the lease was released. Err says why: coordination.ErrReleased
	// when the function finished its work, else the lease context's cause.
	EventStoppedLeading
	// EventAssignmentStarted means a partitioned worker started working
	// on Assignment: an index of a generation, or a partition.
	EventAssignmentStarted
	// EventAssignmentStopped means the work on Assignment returned for the
	// last time; Err is nil when it finished, otherwise why the assignment
	// ended.
	EventAssignmentStopped
	// EventWorkerError means a worker function returned an error or
	// panicked (a *coordination.PanicError), or a worker could not
	// campaign. The host carries on.
	EventWorkerError
	// EventShutdownOverrun means a worker function was still running
	// ShutdownTimeout after shutdown began; its lease (Key, Epoch) expires.
	EventShutdownOverrun
	// EventSlotStarted means a scheduled worker claimed slot Slot under the
	// term (Key, Epoch) and is about to call its function.
	EventSlotStarted
	// EventSlotDone means a scheduled worker recorded slot Slot as over:
	// Err is nil when it completed, the function's error when it failed. A
	// run interrupted by the end of its term has none.
	EventSlotDone
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventStartedLeading:
		return "started-leading"
	case EventStoppedLeading:
		return "stopped-leading"
	case EventAssignmentStarted:
		return "assignment-started"
	case EventAssignmentStopped:
		return "assignment-stopped"
	case EventWorkerError:
		return "worker-error"
	case EventShutdownOverrun:
		return "shutdown-overrun"
	case EventSlotStarted:
		return "slot-started"
	case EventSlotDone:
		return "slot-done"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one notification from a Host about one of its workers.
type Event struct {
	Kind EventKind
	// Worker is the name of the worker the event is about.
	Worker string
	// Key is the full lease name of the term the event is about, or the
	// pool's key; empty when no term is involved.
	Key string
	// Epoch is the fencing epoch of that term (a pool's: the membership's).
	Epoch int64
	// Assignment is the assignment, for EventAssignmentStarted and
	// EventAssignmentStopped.
	Assignment *coordination.Assignment
	// Slot is the slot's time (database clock, UTC), for EventSlotStarted
	// and EventSlotDone.
	Slot time.Time
	// Err is the cause, for StoppedLeading, AssignmentStopped, WorkerError,
	// ShutdownOverrun and SlotDone.
	Err error
	// Time is when the event was recorded, on this process's clock.
	Time time.Time
	// Dropped is how many events this subscription dropped, because its
	// buffer was full, just before this one.
	Dropped int
}

// Subscribe returns a channel of the host's events, closed when ctx is
// done or Run returns; the coordinator's own events are its Subscribe's.
// Delivery never blocks a worker: events arrive in order, and while the
// buffer (size buffer, at least 1) is full new ones are dropped and
// counted in the next one's Dropped.
func (h *Host) Subscribe(ctx context.Context, buffer int) <-chan Event {
	ch, stop := h.events.Subscribe(buffer)
	context.AfterFunc(ctx, stop)
	return ch
}

func stampDropped(ev Event, n int) Event {
	ev.Dropped = n
	return ev
}

// emit stamps ev with the time and sends it without blocking.
func (h *Host) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	h.events.Send(ev)
}
