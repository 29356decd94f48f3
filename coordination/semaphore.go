package coordination

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/otel/metric"
)

// MaxLimit is the largest limit of a semaphore.
const MaxLimit = 1000

// Semaphore is a concurrency limit: at most Limit holders of a name at
// once across every process (and, GlobalScope, every cluster) that shares
// the database. Get it with Coordinator.Semaphore. It is safe for
// concurrent use.
//
// The limit is made of Limit slots, each a lease of its own: a grant is a
// *Lease of one slot ("sem|<key>|<slot>"), with its own fencing epoch
// (Fence), context and Release, riding the process's session like every
// lease. Every process must give a name the same limit: the slots are
// numbered 0 to Limit-1, so the largest limit in use is the one that
// holds.
type Semaphore struct {
	t     *termSet
	scope Scope
	key   string
	limit int
	attrs metric.MeasurementOption

	turn    chan struct{} // buffered 1: held by the one goroutine of this process that waits for a slot
	changed chan struct{} // buffered 1: a slot of this process was released
}

// Semaphore returns the semaphore with the given scope, name (checked by
// ValidateName) and limit (1 to MaxLimit). The same scope and name always
// return the same Semaphore; asking again with another limit is an error
// wrapping ErrInvalidConfig.
func (c *Coordinator) Semaphore(scope Scope, name string, limit int) (*Semaphore, error) {
	key, err := leaseName(scope, c.id.Cluster, name)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("%w: semaphore %q: limit %d is outside 1 to %d", ErrInvalidConfig, key, limit, MaxLimit)
	}
	sem := c.handles.semaphore(key, func() *Semaphore {
		return &Semaphore{t: c.terms, scope: scope, key: key, limit: limit, attrs: c.metrics.leaseAttrs("sem" + keySep + key),
			turn: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
	})
	if sem.limit != limit {
		return nil, fmt.Errorf("%w: semaphore %q: limit %d, but this process already uses it with limit %d",
			ErrInvalidConfig, key, limit, sem.limit)
	}
	return sem, nil
}

// Key returns the semaphore's scoped key, such as "global/exports".
func (s *Semaphore) Key() string { return s.key }

// Limit returns the semaphore's limit.
func (s *Semaphore) Limit() int { return s.limit }

// Acquire blocks until this process holds one of the semaphore's slots,
// ctx is done, or the coordinator stops (ErrClosed). It waits for every
// slot this process does not hold at once, as Election.Campaign waits for
// one lease: each is tried every RetryInterval and when its release is
// notified, and the first granted is kept (any other granted meanwhile is
// given back at once). The caller must Release the returned lease after
// the work done under it has returned.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.t.closing:
		return nil, ErrClosed
	}
	defer func() { <-s.turn }()
	for {
		free := s.freeSlots()
		if len(free) == 0 {
			// This process holds every slot: wait for one of its releases.
			select {
			case <-s.changed:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-s.t.closing:
				return nil, ErrClosed
			}
		}
		return s.campaign(ctx, free)
	}
}

// campaign waits for the first of the given slots.
func (s *Semaphore) campaign(ctx context.Context, free []string) (*Lease, error) {
	type result struct {
		l   *Lease
		err error
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, len(free))
	for _, row := range free {
		go func() {
			l, err := s.election(row).Campaign(cctx)
			results <- result{l, err}
		}()
	}
	var won *Lease
	var failed error
	for range free {
		r := <-results
		switch {
		case r.l != nil && won == nil:
			won = r.l
			cancel()
		case r.l != nil:
			_ = r.l.Release(context.WithoutCancel(ctx)) // a second slot granted meanwhile
		case failed == nil && !errors.Is(r.err, context.Canceled):
			failed = r.err
		}
	}
	if won == nil {
		if failed == nil {
			failed = ctx.Err()
		}
		return nil, failed
	}
	return won, nil
}

// TryAcquire makes one attempt to take a slot and returns at once: a
// Lease of a slot that was free (or whose holder died), tried in random
// order, and otherwise an error wrapping ErrNotAcquired, also while
// another goroutine of this process waits in Acquire. The caller must
// Release the returned lease.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	select {
	case s.turn <- struct{}{}:
	default:
		return nil, fmt.Errorf("%w: semaphore %q: another goroutine of this process waits for a slot", ErrNotAcquired, s.key)
	}
	defer func() { <-s.turn }()
	free := s.freeSlots()
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	for _, row := range free {
		e := s.election(row)
		l, err := s.t.tryAcquire(ctx, e, e.onRelease)
		if errors.Is(err, ErrNotAcquired) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("%w: semaphore %q: all %d slots are held", ErrNotAcquired, s.key, s.limit)
}

// Run acquires a slot and calls fn while it holds it, on the term loop
// of Election.Run, with the same restarts, backoff and release after fn
// returned (see Election.Run and RunOptions), until ctx is cancelled (nil)
// or the coordinator stops (ErrClosed).
func (s *Semaphore) Run(ctx context.Context, fn LeaderFunc, opts ...RunOptions[*Lease]) error {
	r, err := newTermLoop(s.t.shared, "limited work", opts)
	if err != nil {
		return fmt.Errorf("coordination: run semaphore %q: %w", s.key, err)
	}
	return runTerms(ctx, s.key, s.Acquire, fn, r)
}

// freeSlots returns the slot rows this process does not hold.
func (s *Semaphore) freeSlots() []string {
	out := make([]string, 0, s.limit)
	s.t.call(func(st *termState) {
		for i := range s.limit {
			if row := semRow(s.key, i); st.leases[row] == nil {
				out = append(out, row)
			}
		}
	})
	return out
}

// election is the election one wait for a slot goes through, made for
// the one call (see Locks.election); the turn keeps two of this
// process's calls from campaigning for one slot at once. The first
// Release of its lease wakes a wait for a slot of this process.
func (s *Semaphore) election(row string) *Election {
	return &Election{t: s.t, scope: s.scope, name: s.key, key: row, attrs: s.attrs, transient: true,
		onRelease: func() { poke(s.changed) }}
}
