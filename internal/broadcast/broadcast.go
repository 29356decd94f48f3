// Package broadcast delivers values to subscribers without ever blocking
// the sender: each subscriber has a bounded buffer; while it is full, new
// values are dropped and counted, and the count is stamped on the next
// value delivered to it.
package broadcast

import "sync"

type subscriber[T any] struct {
	ch      chan T
	dropped int
}

// Broadcaster fans values out to subscribers. The zero value is ready;
// set Stamp before the first Send to record drop counts in values.
type Broadcaster[T any] struct {
	// Stamp, when set, returns v carrying the number of values this
	// subscriber dropped just before it.
	Stamp func(v T, dropped int) T

	mu     sync.Mutex
	subs   map[*subscriber[T]]struct{}
	closed bool
}

// Subscribe returns a channel with a buffer of size buffer (at least 1)
// and a function that ends the subscription and closes the channel. After
// Close, the channel returned is already closed.
func (b *Broadcaster[T]) Subscribe(buffer int) (<-chan T, func()) {
	s := &subscriber[T]{ch: make(chan T, max(buffer, 1))}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(s.ch)
		return s.ch, func() {}
	}
	if b.subs == nil {
		b.subs = make(map[*subscriber[T]]struct{})
	}
	b.subs[s] = struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if _, ok := b.subs[s]; ok {
				delete(b.subs, s)
				close(s.ch)
			}
		})
	}
}

// Send delivers v to every subscriber with room, without blocking.
func (b *Broadcaster[T]) Send(v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		w := v
		if b.Stamp != nil {
			w = b.Stamp(v, s.dropped)
		}
		select {
		case s.ch <- w:
			s.dropped = 0
		default:
			s.dropped++
		}
	}
}

// Close ends every subscription.
func (b *Broadcaster[T]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		close(s.ch)
	}
	b.subs = nil
}
