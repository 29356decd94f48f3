package coordination

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// Locks is a namespace of keyed locks: mutual exclusion per key, for keys
// known only at run time (an account id, a file name), across every
// process that shares the database. Coordinator.Locks returns the same one
// for the same scope and name. It is safe for concurrent use.
//
// Each grant is a *Lease of the key. A release deletes the key's row and
// wakes the processes waiting for it, and dead holders' rows are pruned;
// the epochs of a key still only grow. Within one process, at most one
// goroutine holds or waits for a key in the database at a time; the others
// wait in the process, in no particular order.
type Locks struct {
	t      *termSet
	store  flooredStore  // the prune of dead holders' rows
	direct chan struct{} // the coordinator's turns of first attempts
	scope  Scope
	name   string
	key    string                   // the namespace's scoped key
	attrs  metric.MeasurementOption // attributes of its metrics; nil when they are off

	mu       sync.Mutex
	gates    map[string]*keyGate // by row key: keys held or wanted in this process
	prunedAt time.Time           // when the last prune of dead rows began
	pruning  bool
}

// keyGate lets one goroutine of this process at a time hold or campaign
// for a key. It is removed once nobody holds or waits for it.
type keyGate struct {
	token chan struct{} // buffered 1: full while a goroutine has the gate
	refs  int           // goroutines holding or waiting for the gate
}

// Locks returns the namespace of keyed locks with the given scope (see
// Scope) and name, apart from any election or pool of that name. An
// invalid name gives an error wrapping ErrInvalidConfig.
func (c *Coordinator) Locks(scope Scope, name string) (*Locks, error) {
	key, err := leaseName(scope, c.id.Cluster, name)
	if err != nil {
		return nil, err
	}
	return c.handles.locksOf(key, func() *Locks {
		return &Locks{t: c.terms, store: c.store, direct: c.directTurns, scope: scope, name: name, key: key,
			attrs: c.metrics.leaseAttrs(lockRowPrefix + key), gates: make(map[string]*keyGate)}
	}), nil
}

// Key returns the namespace's scoped key, such as "global/accounts".
func (l *Locks) Key() string { return l.key }

// row checks key and returns its row key.
func (l *Locks) row(key string) (string, error) {
	if err := validateKey(key); err != nil {
		return "", err
	}
	row := lockRow(l.key, key)
	if len(row) > maxRowName {
		return "", fmt.Errorf("%w: lock key %q: its row key %q is %d bytes long; the limit is %d (a shorter namespace name leaves more room)",
			errInvalidName, key, row, len(row), maxRowName)
	}
	return row, nil
}

// Lock blocks until this process holds key, ctx is done, or the
// coordinator stops (ErrClosed): a free key is taken at once, a held one
// waited for as Election.Campaign waits. The caller must Release the lease
// after the work under it has returned, also after a loss; until then no
// other goroutine of this process gets the key. A key is 1 to 100 bytes
// of printable ASCII, and its row key (package doc, "Names and rows") at
// most 255 bytes (ErrInvalidConfig otherwise).
func (l *Locks) Lock(ctx context.Context, key string) (*Lease, error) {
	row, err := l.row(key)
	if err != nil {
		return nil, err
	}
	g, err := l.enter(ctx, row)
	if err != nil {
		return nil, err
	}
	e := l.election(row, g)
	lease, err := l.attempt(ctx, e)
	if lease == nil && err == nil {
		lease, err = e.Campaign(ctx)
	}
	if err != nil {
		l.leave(row, g)
		return nil, err
	}
	return lease, nil
}

// attempt is Lock's first attempt at e's row, made by the caller: the
// acquire without a read, while a direct turn is free. It returns nil and
// no error when it took nothing, for whatever reason: Lock then campaigns.
func (l *Locks) attempt(ctx context.Context, e *Election) (*Lease, error) {
	if err := l.t.waitReady(ctx); err != nil {
		return nil, err
	}
	select {
	case l.direct <- struct{}{}:
		defer func() { <-l.direct }()
	default:
		return nil, nil
	}
	return l.t.attemptLock(ctx, e, e.onRelease)
}

// TryLock makes one attempt to take key, as Election.TryAcquire does,
// returning an error wrapping ErrNotAcquired also while another goroutine
// of this process holds or waits for the key. The caller must Release the
// returned lease.
func (l *Locks) TryLock(ctx context.Context, key string) (*Lease, error) {
	row, err := l.row(key)
	if err != nil {
		return nil, err
	}
	g, ok := l.tryEnter(row)
	if !ok {
		return nil, fmt.Errorf("%w: lock %q of %q: another goroutine of this process holds or waits for it", ErrNotAcquired, key, l.key)
	}
	e := l.election(row, g)
	lease, err := l.t.tryAcquire(ctx, e, e.onRelease)
	if err != nil {
		l.leave(row, g)
		return nil, err
	}
	return lease, nil
}

// Do holds key while fn runs: it waits for the key as Lock does, calls fn
// under a term valid at the call (a term that ended before is given back
// and the key waited for again), and releases the key once fn has
// returned, whatever happened. fn's context ends with ctx and with the
// term; commit the work under lease.Fence to be safe also from a pause.
// Do returns fn's error, or the wait's.
func (l *Locks) Do(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	for {
		lease, err := l.Lock(ctx, key)
		if err != nil {
			return err
		}
		if ran, err := l.runIfValid(ctx, lease, fn); ran {
			return err
		}
	}
}

// runIfValid calls fn under lease, and then releases it, when the term is
// still valid: a process paused since Lock returned may hold a term past
// its trust deadline, which it gives back without calling fn (ran is
// false). The term's loss is logged and emitted where it ended; the key's
// gate opens once the lease is given back.
func (l *Locks) runIfValid(ctx context.Context, lease *Lease, fn func(ctx context.Context, lease *Lease) error) (ran bool, err error) {
	if !lease.Valid() {
		_ = lease.Release(ctx)
		return false, nil
	}
	return true, l.run(ctx, lease, fn)
}

// run calls fn under lease and then releases it.
func (l *Locks) run(ctx context.Context, lease *Lease, fn func(ctx context.Context, lease *Lease) error) error {
	// A failed release is logged and emitted by Release; the key is then
	// free once the session no longer holds it.
	defer func() { _ = lease.Release(ctx) }()
	work, cancel := context.WithCancelCause(lease.Context())
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	return fn(work, lease)
}

// election is the transient election of one call for a lock row, which
// leaves nothing behind once idle. The first Release of its lease opens
// the key's gate and, when due, prunes the namespace's dead rows.
func (l *Locks) election(row string, g *keyGate) *Election {
	return &Election{t: l.t, scope: l.scope, name: l.name, key: row, attrs: l.attrs, transient: true,
		onRelease: func() {
			l.leave(row, g)
			l.pruneIfDue()
		}}
}

// gate returns the gate of row, counting the caller in.
func (l *Locks) gate(row string) *keyGate {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gates[row]
	if g == nil {
		g = &keyGate{token: make(chan struct{}, 1)}
		l.gates[row] = g
	}
	g.refs++
	return g
}

// enter waits for row's gate.
func (l *Locks) enter(ctx context.Context, row string) (*keyGate, error) {
	g := l.gate(row)
	select {
	case g.token <- struct{}{}:
		return g, nil
	case <-ctx.Done():
		l.drop(row, g)
		return nil, ctx.Err()
	case <-l.t.closing:
		l.drop(row, g)
		return nil, ErrClosed
	}
}

// tryEnter takes row's gate if it is open.
func (l *Locks) tryEnter(row string) (*keyGate, bool) {
	g := l.gate(row)
	select {
	case g.token <- struct{}{}:
		return g, true
	default:
		l.drop(row, g)
		return nil, false
	}
}

// leave opens row's gate, which the caller had.
func (l *Locks) leave(row string, g *keyGate) {
	<-g.token
	l.drop(row, g)
}

// drop counts the caller out of row's gate, and forgets the gate once
// nobody holds or waits for it.
func (l *Locks) drop(row string, g *keyGate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g.refs--; g.refs == 0 && l.gates[row] == g {
		delete(l.gates, row)
	}
}

// pruneIfDue deletes, at most once per TTL per namespace and process, up
// to lockPruneChunk rows of the namespace that have been unheld, or held
// by an expired session, for longer than TTL: those of holders that died.
func (l *Locks) pruneIfDue() {
	ttl := l.t.cfg.TTL
	l.mu.Lock()
	if l.pruning || (!l.prunedAt.IsZero() && time.Since(l.prunedAt) < ttl) {
		l.mu.Unlock()
		return
	}
	l.pruning, l.prunedAt = true, time.Now()
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.pruning = false
		l.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), l.t.cfg.ShutdownTimeout)
	defer cancel()
	floor := func(name string) string { f, _ := lockFloor(name); return f }
	n, err := l.store.PruneFloored(ctx, lockRowPrefix+l.key+keySep, floor, ttl, lockPruneChunk)
	if err != nil {
		l.t.log.Warn("could not prune the rows of dead lock holders; retrying after TTL", zap.String("locks", l.key), zap.Error(err))
		return
	}
	if n > 0 {
		l.t.log.Debug("pruned the rows of dead lock holders", zap.String("locks", l.key), zap.Int64("rows", n))
	}
}

// lockPruneChunk is how many rows one prune of a namespace deletes at
// most.
const lockPruneChunk = 500
