package coordination

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/otel/metric"
)

// maxLimit is the largest limit of a semaphore.
const maxLimit = 1000

// Semaphore is a concurrency limit: at most limit holders of a name at
// once across every process (and, GlobalScope, every cluster) that shares
// the database. Each grant is a *Lease of one of limit slots. Every
// process must give a name the same limit: the largest in use is the one
// that holds. It is safe for concurrent use.
type Semaphore struct {
	t     *termSet
	scope Scope
	key   string
	limit int
	attrs metric.MeasurementOption

	turn    chan struct{} // buffered 1: held by the one goroutine of this process that waits for a slot
	changed chan struct{} // buffered 1: a slot of this process was released
}

// Semaphore returns the semaphore with the given scope, name and limit (1
// to 1000); the same scope and name always return the same Semaphore. An
// invalid name or limit, or another limit than this process gave before,
// is an error wrapping ErrInvalidConfig.
func (c *Coordinator) Semaphore(scope Scope, name string, limit int) (*Semaphore, error) {
	key, err := leaseName(scope, c.id.Cluster, name)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > maxLimit {
		return nil, fmt.Errorf("%w: semaphore %q: limit %d is outside 1 to %d", ErrInvalidConfig, key, limit, maxLimit)
	}
	sem := c.handles.semaphore(key, func() *Semaphore {
		return &Semaphore{t: c.terms, scope: scope, key: key, limit: limit, attrs: c.metrics.leaseAttrs(semRowPrefix + key),
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

// Acquire blocks until this process holds one of the semaphore's slots,
// ctx is done, or the coordinator stops (ErrClosed), waiting for every
// slot it does not hold as Election.Campaign waits. The caller must
// Release the lease after the work under it has returned.
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

// TryAcquire makes one attempt to take a slot, as Election.TryAcquire
// does, trying the free ones (or those whose holder died) in random order;
// it returns ErrNotAcquired also while another goroutine of this process
// waits in Acquire. The caller must Release the returned lease.
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

// Run acquires a slot and calls fn while it holds it, as Election.Run does
// with its lease, until ctx is cancelled (nil) or the coordinator stops
// (ErrClosed).
func (s *Semaphore) Run(ctx context.Context, fn LeaderFunc, opts *RunOptions[*Lease]) error {
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

// election is the transient election of one wait for a slot; the first
// Release of its lease wakes a wait for a slot of this process.
func (s *Semaphore) election(row string) *Election {
	return &Election{t: s.t, scope: s.scope, name: s.key, key: row, attrs: s.attrs, transient: true,
		onRelease: func() { poke(s.changed) }}
}
