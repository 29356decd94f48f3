package coordination

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// The campaigner's side of the Election type: the elections of this
// process, the state of each (busy, last seen holder, observers), and the
// campaigns waiting. Every field named here is guarded by campaigner.mu.

// election returns the election of key, made by mk the first time.
func (cp *campaigner) election(key string, mk func() *Election) *Election {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if e, ok := cp.elections[key]; ok {
		return e
	}
	e := mk()
	cp.elections[key] = e
	return e
}

// claim marks e busy for a Campaign (want a campaign: the returned one,
// which the loop serves) or a TryAcquire (nil campaign). It fails with
// ErrClosed once shutdown has begun and with ErrBusy while e is busy.
func (cp *campaigner) claim(e *Election, want bool) (*campaign, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.closingNow() {
		return nil, ErrClosed
	}
	if e.busy {
		return nil, fmt.Errorf("%w: %q", ErrBusy, e.key)
	}
	e.busy = true
	if !want {
		return nil, nil
	}
	c := &campaign{e: e, result: make(chan *Lease, 1)}
	cp.campaigns[e.key] = c
	return c, nil
}

// idle marks e no longer busy: its attempt failed, or its term was
// released.
func (cp *campaigner) idle(e *Election) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	e.busy = false
}

// abort withdraws a campaign. It returns a lease granted in the meantime,
// which the caller releases; without one, e is no longer busy.
func (cp *campaigner) abort(e *Election, c *campaign) *Lease {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.campaigns[e.key] == c {
		delete(cp.campaigns, e.key)
	}
	select {
	case granted := <-c.result:
		return granted
	default:
		e.busy = false
		return nil
	}
}

// observe adds an observer of e until ctx is done. It fails with
// ErrClosed once shutdown has begun.
func (cp *campaigner) observe(ctx context.Context, e *Election) (<-chan LeaseInfo, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.closingNow() {
		return nil, ErrClosed
	}
	o := &observer{ch: make(chan LeaseInfo, 1)}
	e.observers = append(e.observers, o)
	cp.observed[e.key] = e
	o.stop = context.AfterFunc(ctx, func() { cp.unobserve(e, o) })
	poke(cp.wake)
	return o.ch, nil
}

// unobserve ends one observer after its context is done.
func (cp *campaigner) unobserve(e *Election, o *observer) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if i := slices.Index(e.observers, o); i >= 0 {
		e.observers = slices.Delete(e.observers, i, i+1)
	}
	if len(e.observers) == 0 && cp.observed[e.key] == e {
		delete(cp.observed, e.key)
	}
	o.closeLocked()
}

// closeAll stops campaigning and observing, at the start of shutdown.
func (cp *campaigner) closeAll() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	clear(cp.campaigns)
	for _, e := range cp.observed {
		for _, o := range e.observers {
			o.closeLocked()
		}
		e.observers = nil
	}
	clear(cp.observed)
}

// woke takes the names a wake-up named: those campaigned for are
// attempted at once, without a read (acquireWoken); one only observed
// makes a round, whose read its observers get. A nil names makes a round.
func (cp *campaigner) woke(names []string) {
	cp.mu.Lock()
	round, woken := names == nil, false
	for _, n := range names {
		switch {
		case cp.campaigns[n] != nil:
			cp.woken[n] = struct{}{}
			woken = true
		case cp.observed[n] != nil:
			round = true
		}
	}
	if woken {
		cp.wokenAt = time.Now()
	}
	cp.mu.Unlock()
	if woken {
		poke(cp.wokenWake)
	}
	if round {
		poke(cp.wake)
	}
}

// observeElections observes the gauges of the elections this process
// knows and does not hold (held names the ones it holds): not held, and
// the epoch last seen.
func (cp *campaigner) observeElections(o metric.Observer, m *metrics, held map[string]bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for name, e := range cp.elections {
		if held[name] {
			continue
		}
		o.ObserveInt64(m.held, 0, e.attrs)
		if e.seen && e.seenEpoch > 0 {
			o.ObserveInt64(m.epoch, e.seenEpoch, e.attrs)
		}
	}
}
