package coordination

import (
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/broadcast"
	"github.com/leasehold/leasehold/internal/hostlink"
)

// EventKind says what happened.
type EventKind int

const (
	// EventElected means this process acquired a lease and started a term.
	EventElected EventKind = iota + 1
	// EventLost means this process stopped trusting a lease it held (trust
	// deadline passed, or the database showed another holder or epoch).
	EventLost
	// EventReleased means this process released a lease it held.
	EventReleased
	// EventLeaderChanged means that, while campaigning for a lease or
	// observing it (Election.Observe), this process saw a different live
	// holder or epoch in the database than at its previous look. It is a
	// hint: a look is one read per RetryInterval, so terms that began and
	// ended between two looks are not seen.
	EventLeaderChanged
	// EventError means a database operation failed. The coordinator retries;
	// Err says what failed.
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
	// Lease is the full lease name ("cluster/<cluster>/<name>",
	// "global/<name>", or "pool|<key>|member|<member id>" for a pool
	// membership), or the pool's key for a pool's errors; empty for errors
	// not tied to a lease.
	Lease string
	// Pool is the key of the pool the event is about, such as
	// "global/<name>": for the events of a pool membership, for a pool's
	// errors and for its work's failures; empty for events of elections
	// and for errors not tied to a pool.
	Pool string
	// Holder is the holder the event is about: this process for Elected,
	// Lost and Released; the holder seen in the database for
	// LeaderChanged ("" when the lease is free).
	Holder string
	// Epoch is the epoch of the term the event is about.
	Epoch int64
	// Err is the cause, for Lost and Error.
	Err error
	// Time is when the event was recorded, on this process's clock.
	Time time.Time
	// Dropped is how many events this subscription dropped, because its
	// buffer was full, just before this one.
	Dropped int
}

// Subscribe returns a channel of events and a function that ends the
// subscription and closes the channel.
//
// Delivery never blocks the coordinator. Events arrive in the order they
// happened. When the channel's buffer (size buffer, at least 1) is full, new
// events are dropped, and the next event delivered carries the number
// dropped in Event.Dropped. The channel is also closed when Run returns.
func (c *Coordinator) Subscribe(buffer int) (<-chan Event, func()) {
	return c.events.b.Subscribe(buffer)
}

// broadcaster stamps events and hands them to the generic broadcaster.
type broadcaster struct {
	b broadcast.Broadcaster[Event]

	tapMu sync.Mutex
	tap   func(Event) // see hostlink.Tap; nil when none
}

func stampDropped(ev Event, n int) Event {
	ev.Dropped = n
	return ev
}

func (b *broadcaster) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.Pool == "" {
		ev.Pool, _ = poolKeyOf(ev.Lease)
	}
	// One lock over the tap and the send keeps the tap's order the
	// subscribers' order.
	b.tapMu.Lock()
	defer b.tapMu.Unlock()
	if b.tap != nil {
		b.tap(ev)
	}
	b.b.Send(ev)
}

// setTap makes tap see every event from now on, synchronously and in
// order, before the subscribers do.
func (b *broadcaster) setTap(tap func(Event)) {
	b.tapMu.Lock()
	defer b.tapMu.Unlock()
	b.tap = tap
}

func init() {
	hostlink.Tap = func(c any, tap func(any)) {
		c.(*Coordinator).events.setTap(func(ev Event) { tap(ev) })
	}
}

func (b *broadcaster) close() { b.b.Close() }
