package workers

import (
	"fmt"
	"time"
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
	// Err is the cause, for StoppedLeading, WorkerError and
	// ShutdownOverrun.
	Err error
	// Time is when the event was recorded, on this process's clock.
	Time time.Time
	// Dropped is how many events this subscription dropped, because its
	// buffer was full, just before this one.
	Dropped int
}

// Subscribe returns a channel of the host's events and a function that
// ends the subscription and closes the channel.
//
// Delivery never blocks a worker. Events arrive in the order they
// happened. When the channel's buffer (size buffer, at least 1) is full,
// new events are dropped, and the next event delivered carries the number
// dropped in Event.Dropped. The channel is closed when Run returns; a
// subscription made after that is closed at once. The coordinator's own
// events (elections, renewal errors) are on Coordinator().Subscribe.
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
