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
// process that shares the database. Get it with Coordinator.Locks; the
// same scope and name always return the same Locks. It is safe for
// concurrent use.
//
// A lock is a lease like an election's: each grant is a *Lease with its
// own fencing epoch (Fence), context (cancelled at the trust deadline,
// Margin before anyone else could take the key) and Release. Held keys
// ride the process's session row, so renewing them costs the one
// renewal statement per tick that every lease of the process shares,
// however many keys are held. A release deletes the key's row and wakes
// the processes waiting for the key where wake-ups exist; rows left by
// holders that died are deleted by a bounded prune, so the table keeps
// only the rows of keys in use. The epochs of a key never repeat and
// never go back, also across such a delete: see "Keyed locks" in the
// package doc.
//
// Within one process, at most one goroutine holds or waits for a key in
// the database at a time; the others wait in the process for it, in no
// particular order.
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

// Locks returns the namespace of keyed locks with the given scope and
// name (checked by ValidateName). A ClusterScope namespace locks a key
// within the cluster (identity.Identity.Cluster); a GlobalScope one
// across every cluster that shares the database. Its name is no
// election's or pool's: their rows never meet.
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

// Scope returns the namespace's scope.
func (l *Locks) Scope() Scope { return l.scope }

// row checks key and returns its row key.
func (l *Locks) row(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	row := lockRow(l.key, key)
	if len(row) > maxRowName {
		return "", fmt.Errorf("%w: lock key %q: its row key %q is %d bytes long; the limit is %d (a shorter namespace name leaves more room)",
			ErrInvalidName, key, row, len(row), maxRowName)
	}
	return row, nil
}

// Lock blocks until this process holds key, ctx is done, or the
// coordinator stops (ErrClosed). The caller tries the key at once itself,
// with the acquire statement alone (after the statement that creates the
// key's row, which a release deletes), so a free key is taken without
// waiting for the campaign loop. Only when that attempt takes nothing
// (another process holds the key) does Lock wait as Election.Campaign
// does: the key is read and tried at once, then every RetryInterval, and
// at once when a release of it is notified. While another first attempt
// of this process is under way (at most one per connection of
// Config.MaxConnections but the renewal's), Lock waits as Campaign does
// from the start, so that a burst of Locks is batched by the loop's
// rounds. The caller must Release the returned lease after the work done
// under it has returned, also after the lease was lost; until then no
// other goroutine of this process gets the key.
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

// attempt is Lock's first attempt at e's row, made by the caller rather
// than by the rounds: the acquire without a read. It returns nil and no
// error when it took nothing: the key is held or reserved, a hold-off or
// the health gate keeps this process from taking it, a round is
// attempting it, another first attempt of this process is under way, this
// process stopped trusting its session meanwhile, or the attempt failed.
// Lock then campaigns.
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

// TryLock makes one attempt to take key and returns at once, as
// Election.TryAcquire does: a Lease when the key was free (or its holder
// dead), and otherwise an error wrapping ErrNotAcquired that names the
// holder, also when another goroutine of this process holds or waits for
// the key. The caller must Release the returned lease.
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

// Do holds key while fn runs: it waits for the key as Lock does, calls
// fn, and releases the key once fn has returned, whatever happened. The
// context fn gets is cancelled when ctx is, and at the lease's trust
// deadline: Margin before any other process could take the key, so work
// that stops when its context does never overlaps the next holder's.
// Commit the work's effects under lease.Fence to be safe also from a
// pause. Do returns fn's error, or the error of the wait.
//
// fn is only ever called under a term that is valid when it is called,
// as Election.Run's function is: a term that ended between the key being
// taken and fn's call (the process was paused past its trust deadline,
// and another process may hold the key by now) is given back, and Do
// waits for the key again.
func (l *Locks) Do(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	for {
		lease, err := l.Lock(ctx, key)
		if err != nil {
			return err
		}
		if hook := l.t.signals.lockTaken.Load(); hook != nil {
			(*hook)(lease)
		}
		if lease.Valid() {
			return l.run(ctx, lease, fn)
		}
		// The term's loss is logged and emitted where it ended; the key's
		// gate opens once it is given back.
		_ = lease.Release(ctx)
	}
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

// election is the election a campaign or attempt for a lock row goes
// through: made for the one call, never registered, so a million keys
// leave nothing behind. The key's gate keeps two of this process's calls
// from campaigning for one row at once; the first Release of its lease
// opens the gate and, when due, prunes the namespace's dead rows.
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

// pruneIfDue deletes, at most once per TTL per namespace and process,
// up to store.WriteChunk rows of the namespace that nobody holds or is
// about to hold: unheld, or held by a session expired, both for longer
// than TTL. Releases delete their own rows; this removes those of
// holders that died. One statement reads the candidates, so the work is
// bounded however many rows the namespace has.
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
