package coordination

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/metric"
)

// Election is a lease that at most one process holds at a time;
// Coordinator.Election returns the same one for the same scope and name.
// It is safe for
// concurrent use, but at most one Campaign, Run or TryAcquire is active on
// it at a time in one process, and none while a Lease of it is unreleased
// (they get ErrBusy).
type Election struct {
	t         *termSet
	scope     Scope
	name      string                   // as given
	key       string                   // full lease name
	attrs     metric.MeasurementOption // attributes of its metrics; nil when they are off
	transient bool                     // a keyed lock's or a semaphore slot's, made for one call
	onRelease func()                   // what the first Release of its leases calls, for a transient one
}

// Election returns the election with the given scope and name; an invalid
// name gives an error wrapping ErrInvalidConfig.
func (c *Coordinator) Election(scope Scope, name string) (*Election, error) {
	key, err := leaseName(scope, c.id.Cluster, name)
	if err != nil {
		return nil, err
	}
	return c.handles.election(key, func() *Election {
		return &Election{t: c.terms, scope: scope, name: name, key: key, attrs: c.metrics.leaseAttrs(key)}
	}), nil
}

// Key returns the full lease name of the election.
func (e *Election) Key() string { return e.key }

// Campaign blocks until this process holds the lease, ctx is done, or the
// coordinator stops (ErrClosed). It tries at once, then every
// RetryInterval (with jitter) and whenever a release of the lease is
// notified. The caller must Release the returned lease after the work done
// under it has returned.
func (e *Election) Campaign(ctx context.Context) (*Lease, error) {
	c := &campaign{grantee: grantee{onRelease: e.onRelease}, result: make(chan *Lease, 1)}
	var err error
	if cerr := e.t.callCtx(ctx, func(st *termState) { err = st.claim(e, c) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	select {
	case l := <-c.result:
		return l, nil
	case <-ctx.Done():
		e.abort(c)
		return nil, ctx.Err()
	case <-e.t.closing:
		e.abort(c)
		return nil, ErrClosed
	}
}

// abort withdraws a campaign; a lease granted in the meantime is released
// at once.
func (e *Election) abort(c *campaign) {
	var granted *Lease
	if !e.t.call(func(st *termState) { granted = st.abort(e.key, c) }) {
		select {
		case granted = <-c.result:
		default:
		}
	}
	if granted != nil {
		_ = granted.Release(context.Background())
	}
}

// TryAcquire makes one attempt to take the election's lease, free or
// expired, and returns a Lease as Campaign does; the caller must Release
// it. Otherwise it changes nothing and returns an error wrapping
// ErrNotAcquired, ErrBusy, ErrUnhealthy or ErrLeaseLost (see each). It
// waits within ctx for the coordinator to be ready, and returns ErrClosed
// once it stops.
func (e *Election) TryAcquire(ctx context.Context) (*Lease, error) {
	var err error
	if cerr := e.t.callCtx(ctx, func(st *termState) { err = st.claim(e, nil) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	l, err := e.t.tryAcquire(ctx, e, e.onRelease)
	if err != nil {
		e.t.call(func(st *termState) {
			if es := st.elections[e.key]; es != nil {
				st.idle(es)
			}
		})
		return nil, err
	}
	return l, nil
}

// IsLeader reports whether this process holds the election's lease and
// trusts it right now.
func (e *Election) IsLeader() bool {
	var leads bool
	e.t.query(func(st *termState) { leads = st.leads(e.key) })
	return leads
}

// Leader reads who holds the election's lease, by the database clock.
// For a lease never acquired it returns a LeaseInfo with only Key set.
func (e *Election) Leader(ctx context.Context) (LeaseInfo, error) {
	r, exists, err := readOne(ctx, e.t.store, e.key)
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("coordination: read lease %q: %w", e.key, err)
	}
	if !exists {
		return LeaseInfo{Key: e.key}, nil
	}
	return leaseInfo(r), nil
}

// Observe follows who leads the election without campaigning for it: the
// channel carries the lease as the database shows it, once read and then
// at each change of holder or epoch (with nobody holding it, Holder is
// empty, Live false and Epoch the last term's), read every RetryInterval
// and on a wake-up with the campaigns' reads.
//
// Values are hints: act as leader only under a Lease. The channel holds
// the latest value only, so states and terms between two reads may be
// missed; it is closed when ctx is done or the coordinator stops. Observe
// returns ErrClosed once it is stopping, and, called before Run, waits
// within ctx for Run to start. Any number of observers may follow an
// election beside its Campaign, Run and TryAcquire.
func (e *Election) Observe(ctx context.Context) (<-chan LeaseInfo, error) {
	o := &observer{ch: make(chan LeaseInfo, 1)}
	var err error
	t := e.t
	if cerr := t.callCtx(ctx, func(st *termState) {
		if st.closing {
			err = ErrClosed
			return
		}
		es := st.election(e.key, e.attrs, false)
		es.observers = append(es.observers, o)
		o.stop = context.AfterFunc(ctx, func() { t.call(func(st *termState) { st.unobserve(es, o) }) })
		st.wakeRound()
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return o.ch, nil
}

// unobserve ends one observer after its context is done.
func (st *termState) unobserve(es *electionState, o *observer) {
	if i := slices.Index(es.observers, o); i >= 0 {
		es.observers = slices.Delete(es.observers, i, i+1)
	}
	o.close()
}

// observer is the channel of one Observe call, used by the loop only,
// which is its one sender.
type observer struct {
	ch     chan LeaseInfo // buffered 1: the latest value not yet taken
	stop   func() bool    // stops the wait for Observe's ctx
	sent   bool           // a value was offered; last is its key
	last   leader
	closed bool
}

// leader is what makes an observed value a change: the live holder ("" for
// none) and the epoch.
type leader struct {
	holder string
	epoch  int64
}

// offer hands the observer info when its holder or epoch differs from the
// last value offered, replacing a value the observer has not taken.
func (o *observer) offer(info LeaseInfo) {
	key := leader{holder: info.Holder, epoch: info.Epoch}
	if o.closed || (o.sent && o.last == key) {
		return
	}
	o.sent, o.last = true, key
	select {
	case <-o.ch:
	default:
	}
	select {
	case o.ch <- info:
	default: // cannot happen: the buffer was just emptied, and only offer sends
	}
}

// close closes the channel once.
func (o *observer) close() {
	if o.closed {
		return
	}
	o.closed = true
	o.stop()
	close(o.ch)
}

// LeaderFunc is leader work under lease. ctx is cancelled when the term
// ends (see Lease) or Run's context is; the work should return promptly.
type LeaderFunc func(ctx context.Context, lease *Lease) error

// Run campaigns for the election and calls fn each time this process
// becomes leader, until ctx is cancelled (then it returns nil) or the
// coordinator stops (ErrClosed). The lease is released only after fn has
// returned for the last time in a term.
//
// If fn fails (an error, or a panic as a *PanicError) while the term is
// valid, it is reported and called again under the same term after a
// backoff. Once fn returns nil while the term is valid, the term's work is
// done: the lease is released, and Run waits before campaigning again,
// giving other processes a chance. RunOptions tunes the waits and reports.
func (e *Election) Run(ctx context.Context, fn LeaderFunc, opts *RunOptions[*Lease]) error {
	r, err := newTermLoop(e.t.shared, "leader work", opts)
	if err != nil {
		return fmt.Errorf("coordination: run election %q: %w", e.key, err)
	}
	return runTerms(ctx, e.key, e.Campaign, fn, r)
}

// runTerms is the loop of Election.Run and Semaphore.Run: a term from
// acquire, fn under it (runTerm), and again, until ctx is cancelled (nil)
// or acquire fails otherwise. key names what is acquired in errors.
func runTerms(ctx context.Context, key string, acquire func(context.Context) (*Lease, error), fn LeaderFunc, r *termLoop[*Lease]) error {
	for {
		l, err := acquire(ctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case r.opts.RetryBusy && errors.Is(err, ErrBusy):
			// Code outside this Run campaigns for the same election.
			if !sleepCtx(ctx, r.busy(key, fmt.Errorf("campaign for %q: %w", key, err))) {
				return nil
			}
			continue
		default:
			return err
		}
		finished := runTerm(ctx, l, fn, r)
		if ctx.Err() != nil {
			return nil
		}
		if finished && !sleepCtx(ctx, r.afterFinished()) {
			return nil
		}
	}
}

// runTerm runs fn for one term and releases the lease after it has
// returned for the last time, never before. It reports whether fn
// finished its work for the term.
func runTerm(ctx context.Context, l *Lease, fn LeaderFunc, r *termLoop[*Lease]) (finished bool) {
	work, cancel := context.WithCancelCause(l.Context())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer func() {
		stop()
		cause := termCause(ctx, l, finished)
		cancel(cause)
		// A failed release is logged and emitted by Release; the lease
		// then expires after TTL.
		_ = l.Release(ctx)
		r.end(l, cause)
	}()
	return r.work(work, l, l.Valid, l.name, l.epoch, func(ctx context.Context) error { return fn(ctx, l) })
}
