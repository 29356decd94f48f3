package coordination

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/metric"
)

// Election is one named election of a coordinator: a lease that at most
// one process holds at a time. Get it with Coordinator.Election; the same
// scope and name always return the same Election. It is safe for
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

// Election returns the election with the given scope and name. The name
// is checked by ValidateName.
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

// Scope returns the election's scope.
func (e *Election) Scope() Scope { return e.scope }

// Campaign blocks until this process holds the lease, ctx is done, or the
// coordinator stops (ErrClosed). The coordinator tries at once and then
// every RetryInterval (plus at most 25ms of jitter), and at once when a
// release of the lease is notified; campaigns for many names share one read
// per attempt. The caller must Release the returned lease after the work
// done under it has returned.
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

// TryAcquire makes exactly one attempt to take the election's lease and
// returns at once. It takes the lease when the database shows it free,
// expired by the database clock, or held by a session that has expired,
// and then returns a Lease just like Campaign's: a new term whose epoch
// the acquiring statement incremented, riding on the process's session
// and trusted until that session's deadline. The caller must Release it
// after the work done under it has returned.
//
// When another live holder has the lease, TryAcquire changes nothing in
// the database and returns an error wrapping ErrNotAcquired that names the
// lease, its holder and its epoch; so it does when a resign prefers
// another holder for the lease, or this process holds off after resigning
// it. It costs one read then, and otherwise the read and the acquire, plus
// a statement to create the lease's row the first time and one to start
// or renew the session when it needs one.
//
// When this process stops trusting its own session while the lease is
// being taken (the session's trust deadline passed without a successful
// renewal, or a renewal found it gone), TryAcquire gives back whatever the
// acquire took and returns an error wrapping ErrSessionLost, never
// ErrNotAcquired: the lease may well be free, and a later attempt starts a
// new session.
//
// An attempt whose acquire statement failed returns that error, never a
// lease; if the statement committed nonetheless, the epoch it took is
// never used: this process gives the grant back, unless its next acquire
// takes the lease again first, under a new epoch. An attempt made while
// this process is giving that grant back returns an error wrapping ErrBusy
// (try again), not ErrNotAcquired: no other holder has the lease.
//
// Like Campaign, TryAcquire waits, within ctx, for the coordinator to be
// ready, and returns ErrClosed once it is stopping or has stopped. It
// returns an error wrapping ErrBusy while a Campaign or Run of the same
// Election is in progress in this process, or a Lease of it has not been
// released; and while it runs, a Campaign or Run of the Election gets
// ErrBusy. The attempt is bounded by ctx and by a timeout of its own, as
// long as a campaign round over one name.
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
// For a lease never acquired it returns a LeaseInfo with only Name set.
func (e *Election) Leader(ctx context.Context) (LeaseInfo, error) {
	r, exists, err := readOne(ctx, e.t.store, e.key)
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("coordination: read lease %q: %w", e.key, err)
	}
	if !exists {
		return LeaseInfo{Name: e.key}, nil
	}
	return leaseInfo(r, e.t.holder), nil
}

// Observe follows who leads the election without campaigning for it: the
// returned channel carries the lease as the database shows it, first as
// soon as it has been read and then each time the holder or the epoch
// changes. Holder is empty, and Live false, when nobody holds the lease:
// it was released, expired by the database clock, or never acquired; the
// values describe the last term then (Epoch is 0 for a lease never
// acquired). Mine reports whether the holder is this process.
//
// The lease is read by the coordinator's campaign loop, in the one
// statement per thousand names that already reads every lease this
// process campaigns for, every RetryInterval (with jitter) and on a
// release notification: observing adds
// no statement per name, and any number of observers of any number of
// elections share that read.
//
// Values are hints, for dashboards, routing and logs; act as leader only
// under a Lease. The channel holds at most one value: when the observer
// has not taken the previous one, the newer value replaces it, so the
// observer always comes to the latest state the loop read but may miss
// the ones in between, and a term that began and ended between two reads
// is never seen. Each change also emits EventLeaderChanged to
// Subscribe.
//
// The channel is closed when ctx is done or the coordinator stops. Observe
// returns ErrClosed once the coordinator is stopping or has stopped.
// Called before Run, it waits for Run to start, within ctx. Observe may
// be called any number of times, alongside Campaign, Run and TryAcquire
// of the same election.
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

// LeaderFunc is leader work. ctx is cancelled when the term ends (trust
// deadline, confirmed loss, coordinator shutdown) or Run's context is
// cancelled; lease gives the epoch for fencing and the synchronous Valid
// check. It should return promptly once ctx is done.
type LeaderFunc func(ctx context.Context, lease *Lease) error

// Run campaigns for the election and calls fn each time this process
// becomes leader, until ctx is cancelled (then it returns nil) or the
// coordinator stops (ErrClosed). After fn returns for the last time in a
// term, and only then, the lease is released, so a follower can take over
// on its next attempt. Run is the one term loop of leasehold: the workers
// package's singleton workers run on it too.
//
// If fn returns an error or panics while the term is still valid, the
// error (a *PanicError for a panic, with its stack) is logged and reported
// as an EventError, and fn is called again under the same term after
// RetryInterval, doubling with each consecutive failure up to 30s. When fn
// returns nil while the term is valid, its work for the term is done: the
// lease is released and Run waits one RetryInterval (with jitter) before
// campaigning again, giving other processes a fair chance.
//
// opts, at most one, changes the backoff, reports failures elsewhere, and
// calls back at the start and end of each term (see RunOptions); an
// invalid one makes Run return an error wrapping ErrInvalidConfig at once.
func (e *Election) Run(ctx context.Context, fn LeaderFunc, opts ...RunOptions[*Lease]) error {
	r, err := newTermLoop(e.t.shared, "leader work", opts)
	if err != nil {
		return fmt.Errorf("coordination: run election %q: %w", e.key, err)
	}
	return runTerms(ctx, e.key, e.Campaign, fn, r)
}

// runTerms is the loop of Election.Run and Semaphore.Run: it waits for a
// term with acquire, runs fn for it (runTerm), and waits again, until ctx
// is cancelled (nil) or acquire fails otherwise. key names what is
// acquired in errors.
func runTerms(ctx context.Context, key string, acquire func(context.Context) (*Lease, error), fn LeaderFunc, r *termLoop[*Lease]) error {
	for {
		l, err := acquire(ctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case r.opts.RetryBusy && errors.Is(err, ErrBusy):
			// Code outside this Run campaigns for the same election.
			if !sleepCtx(ctx, r.busy(key, "", fmt.Errorf("campaign for %q: %w", key, err))) {
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
	return r.work(work, l, l.Valid, l.name, l.epoch, "", func(ctx context.Context) error { return fn(ctx, l) })
}
