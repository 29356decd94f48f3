package coordination

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/broadcast"
)

// EventKind says what happened.
type EventKind int

const (
	// EventElected means this process acquired a lease and started a term.
	EventElected EventKind = iota + 1
	// EventLost means a term of this process ended without a Release (see
	// Lease); Err is the cause.
	EventLost
	// EventReleased means this process released a lease it held.
	EventReleased
	// EventLeaderChanged means that, campaigning for a lease or observing
	// it, this process saw another live holder or epoch than at its
	// previous read, a hint: terms between two reads are not seen.
	EventLeaderChanged
	// EventError means something failed: a database operation (the
	// coordinator retries), the work or the health check, or a step-down
	// after failed checks. Err says what.
	EventError
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventElected:
		return "elected"
	case EventLost:
		return "lost"
	case EventReleased:
		return "released"
	case EventLeaderChanged:
		return "leader-changed"
	case EventError:
		return "error"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one notification from a Coordinator.
type Event struct {
	Kind EventKind
	// Key is the full lease name, or the pool's key for a pool's errors and
	// its work's failures; empty for errors of no lease.
	Key string
	// Holder is this process for Elected, Lost and Released, and for
	// LeaderChanged the holder seen in the database ("" when free).
	Holder string
	// Epoch is the epoch of the term the event is about.
	Epoch int64
	// Err is the cause, for Lost and Error.
	Err error
	// Time is when the event was recorded, on this process's clock.
	Time time.Time
	// Dropped is how many events this subscription dropped, its buffer
	// full, just before this one.
	Dropped int
}

// Subscribe returns a channel of the coordinator's events, in the order
// they happened, closed when ctx is done or Run returns. Delivery never
// blocks the coordinator: while the channel's buffer (size buffer, at
// least 1) is full, new events are dropped, and the next one delivered
// counts them in Event.Dropped.
func (c *Coordinator) Subscribe(ctx context.Context, buffer int) <-chan Event {
	ch, stop := c.events.b.Subscribe(buffer)
	context.AfterFunc(ctx, stop)
	return ch
}

// broadcaster stamps events and hands them to the generic broadcaster.
type broadcaster struct {
	b broadcast.Broadcaster[Event]
}

func stampDropped(ev Event, n int) Event {
	ev.Dropped = n
	return ev
}

func (b *broadcaster) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.b.Send(ev)
}

func (b *broadcaster) close() { b.b.Close() }
