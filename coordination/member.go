package coordination

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

// The member protocol of a pool is package membership: Pool.Run drives one
// membership.Member per run, and poolRun is what it hands that member
// from the coordinator: the health gate and the campaigner to join, the
// pool set for member ids and what Run last saw, the wake-ups, Run's term
// loop for the work, and the events and metrics.
type poolRun struct {
	p   *Pool
	fn  AssignmentFunc
	run *termLoop[Assignment] // Run's term loop: options and backoff
	// parts runs the partitions of RunPartitions; nil for Run.
	parts membership.PartitionWorker
}

// member returns the membership of one Run, logging to log.
func (r *poolRun) member(log *zap.Logger) *membership.Member {
	p, c := r.p, r.p.c
	return membership.New(membership.Config{
		Pool: p.key, Rows: p.rows, Holder: c.holder, Poll: p.poll,
		StepTimeout:     c.cfg.poolStepTimeout(),
		ShutdownTimeout: c.cfg.ShutdownTimeout,
		PruneAfter:      c.cfg.deadMemberPrune(),
		Store:           c.store,
		Joiner:          r, Notifier: r, Worker: r, Reporter: r,
		Log: log,

		Partitions: p.partitions, Parts: r.parts,
		Static: p.static != "", AwayGrace: c.cfg.TTL,
	})
}

// memberLease is a membership as the protocol sees it: a Lease, and the
// session that holds it, which acknowledgements are written under.
type memberLease struct{ *Lease }

func (l memberLease) Session() string { return l.sess.id }

// MayJoin holds off joining while the health checks fail (stepdown.go).
func (r *poolRun) MayJoin() bool { return !r.p.c.health.unhealthyNow() }

// NewID returns a member id never used in this pool by this process
// (poolSet.memberID). A static member's id is always its MemberID after
// membership.StaticPrefix: its row is not pruned while it may come back,
// so its epochs go on growing, and a partition it gets back after its row
// was pruned has a new Since (partitions.go).
func (r *poolRun) NewID() string {
	if r.p.static != "" {
		return membership.StaticPrefix + r.p.static
	}
	return r.p.c.pools.memberID(r.p.key)
}

// Join takes the member row on the campaigner's acquire path.
func (r *poolRun) Join(ctx context.Context, row string) (membership.Lease, error) {
	l, err := r.p.c.campaigner.acquireDirect(ctx, row)
	if err != nil {
		return nil, err
	}
	if id, ok := r.p.rows.MemberID(row); ok {
		r.p.c.pools.joined(r.p, id)
	}
	return memberLease{l}, nil
}

// Notify announces a change to the pool's row to the other processes.
func (r *poolRun) Notify(ctx context.Context, row string) { r.p.c.wakes.notify(ctx, row) }

// Start records the assignment as the pool's current one and returns its
// work: fn under the policy Election.Run follows too, where fn is called
// again after an error or a panic while the assignment is current, and a
// nil return leaves the index idle until the next generation.
func (r *poolRun) Start(w membership.Assignment) func(ctx context.Context) {
	p := r.p
	a := Assignment{
		Pool: p.key, Index: w.Index, Count: w.Count, Generation: w.Generation, Epoch: w.Lease.Epoch(),
		Members: w.Members, p: p, member: w.Lease.(memberLease).Lease,
	}
	p.c.pools.setCurrent(p, &a)
	return func(ctx context.Context) { runAssignment(r.run, ctx, a, r.fn) }
}

// Stopped records that the pool works on no assignment.
func (r *poolRun) Stopped() { r.p.c.pools.setCurrent(r.p, nil) }

// Read records the generation and member count of Run's last read.
func (r *poolRun) Read(generation int64, members int) {
	r.p.c.pools.noteRead(r.p, generation, members)
}

// Failed reports a failure of the member as an EventError.
func (r *poolRun) Failed(err error) {
	r.p.c.events.emit(Event{Kind: EventError, Lease: r.p.key, Pool: r.p.key, Err: err})
}

// Rebalanced records a rebalance time in the pool's histogram.
func (r *poolRun) Rebalanced(d time.Duration) { r.p.c.metrics.rebalanced(r.p, d) }
