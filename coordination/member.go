package coordination

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

// poolRun is what one Pool.Run hands its membership.Member from the
// coordinator: joining, member ids, wake-ups, the term loop for the work,
// events and metrics.
type poolRun struct {
	p    *Pool
	fn   AssignmentFunc
	run  *termLoop[Assignment] // Run's term loop: options and backoff
	wake chan struct{}         // buffered 1: a wake-up for the pool's rows
	// parts runs a sticky pool's partitions; nil otherwise.
	parts membership.PartitionWorker

	// Written by the run's goroutine; read by wake-ups and the metrics.
	member  atomic.Pointer[string]     // the member id of the last join
	current atomic.Pointer[Assignment] // the assignment worked on, nil for none
	read    atomic.Pointer[poolRead]   // the current generation at the last read
}

// poolRead is what a run's last read saw.
type poolRead struct {
	generation int64
	members    int
}

// key returns the pool's key.
func (r *poolRun) key() string { return r.p.key }

// wokenBy reports whether a wake-up for the pool's row name concerns the
// run: one for a single member only if that member is the run's.
func (r *poolRun) wokenBy(name string) bool {
	id, one := r.p.rows.WakeFor(name)
	return !one || id == r.memberID()
}

// observe observes the pool's gauges once the run has read the pool.
func (r *poolRun) observe(o metric.Observer, m *metrics) {
	read := r.read.Load()
	if read == nil {
		return
	}
	attrs := r.p.attrs
	o.ObserveInt64(m.poolGeneration, read.generation, attrs)
	o.ObserveInt64(m.poolMembers, int64(read.members), attrs)
	o.ObserveInt64(m.poolAssigned, boolInt(r.current.Load() != nil), attrs)
}

// memberID returns the member id of the run's last join, "" before one.
func (r *poolRun) memberID() string {
	if id := r.member.Load(); id != nil {
		return *id
	}
	return ""
}

// newMember returns the membership of one Run, logging to log.
func (r *poolRun) newMember(log *zap.Logger) *membership.Member {
	p, d := r.p, r.p.deps
	return membership.New(membership.Config{
		Pool: p.key, Rows: p.rows, Holder: d.holder, Poll: p.poll,
		StepTimeout:     d.cfg.poolStepTimeout(),
		ShutdownTimeout: d.cfg.ShutdownTimeout,
		PruneAfter:      d.cfg.deadMemberPrune(),
		Store:           d.store,
		Joiner:          r, Notifier: r, Worker: r, Reporter: r,
		Log: log,

		Partitions: p.partitions, Parts: r.parts,
		Static: p.static != "", AwayGrace: d.cfg.TTL,
	})
}

// memberLease is a membership as the protocol sees it: a Lease, and the
// session that holds it, which acknowledgements are written under.
type memberLease struct{ *Lease }

func (l memberLease) Session() string { return l.sessionID() }

// MayJoin holds off joining while the health checks fail.
func (r *poolRun) MayJoin() bool { return !r.p.deps.terms.health.unhealthy() }

// NewID returns a member id never used in this pool by this process, or a
// static member's fixed id, whose row is not pruned while it may come
// back.
func (r *poolRun) NewID() string {
	if r.p.static != "" {
		return membership.StaticPrefix + r.p.static
	}
	return r.p.deps.handles.memberID(r.p.key)
}

// Join takes the member row on the one acquire path.
func (r *poolRun) Join(ctx context.Context, row string) (membership.Lease, error) {
	l, err := r.p.deps.terms.acquireDirect(ctx, row)
	if err != nil {
		return nil, err
	}
	if id, ok := r.p.rows.MemberID(row); ok {
		r.member.Store(&id)
	}
	return memberLease{l}, nil
}

// Notify announces a change to the pool's row to the other processes.
func (r *poolRun) Notify(ctx context.Context, row string) { r.p.deps.wakes.notify(ctx, row) }

// Start records the assignment as the pool's current one and returns its
// work: fn on Run's term loop.
func (r *poolRun) Start(w membership.Assignment) func(ctx context.Context) {
	p := r.p
	a := Assignment{
		Key: p.key, Index: w.Index, Count: w.Count, Generation: w.Generation, Epoch: w.Lease.Epoch(),
		Members: w.Members, p: p, member: w.Lease.(memberLease).Lease,
	}
	r.current.Store(&a)
	return func(ctx context.Context) { runAssignment(r.run, ctx, a, r.fn) }
}

// Stopped records that the pool works on no assignment.
func (r *poolRun) Stopped() { r.current.Store(nil) }

// Read records the generation and member count of the run's last read.
func (r *poolRun) Read(generation int64, members int) {
	r.read.Store(&poolRead{generation: generation, members: members})
}

// Failed reports a failure of the member as an EventError.
func (r *poolRun) Failed(err error) {
	r.p.deps.events.emit(Event{Kind: EventError, Key: r.p.key, Err: poolModeError(err)})
}

// Rebalanced records a rebalance time in the pool's histogram, and as a
// span, ending now, of the move into generation.
func (r *poolRun) Rebalanced(d time.Duration, generation int64) {
	r.p.deps.metrics.rebalanced(r.p, d)
	rebalanceSpan(r.p.deps.tracer, r.p.key, generation, d)
}
