package workers

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
)

// PartitionFunc is the work of one member of a partitioned worker's pool
// for one generation: the items whose index, by your own rule (for example
// id % a.Count == a.Index), belong to this member. ctx ends when a new
// generation supersedes this one, when membership is lost, or when the host
// shuts down; the function must return promptly then.
//
// Call a.Valid() before each unit of work and a.Fence(tx) inside each
// transaction that commits work: a fenced transaction commits only while
// this assignment is current, so no item is ever processed by two members,
// across failovers and rebalances alike.
//
// Returning an error, or panicking, while the assignment is current makes
// the host call the function again after Config.RestartBackoff. Returning
// nil means the member's share of this generation is done; it idles until
// the next generation.
type PartitionFunc func(ctx context.Context, a coordination.Assignment) error

// PartitionConfig tunes a partitioned worker. The zero value is valid. Who
// shares the work (one cluster, or every cluster) is not a setting: it is
// the constructor's name, ClusterPartitioned or GlobalPartitioned, as for
// singletons.
type PartitionConfig struct {
	// PollInterval is how often each member reads the pool; four times as
	// often during a rebalance. It sets the rebalance bounds
	// (coordination.RebalanceBound, coordination.CrashRebalanceBound).
	// Must be between
	// coordination.MinPollInterval (10ms) and MaxPollInterval (24h).
	// Defaults to the coordinator's RetryInterval, or MinPollInterval when
	// that is shorter.
	PollInterval time.Duration
}

// ClusterPartitioned returns a worker that runs fn on every live process
// of this process's cluster (identity.Identity.Cluster), each with a
// distinct index of the pool's count: each cluster splits the work among
// its own members, pool "cluster/<cluster>/<name>". No index is ever worked
// on by two processes at overlapping times: a new generation starts only
// after every member has stopped the previous one (see coordination.Pool).
func ClusterPartitioned(name string, fn PartitionFunc, cfg PartitionConfig) Worker {
	return &partitioned{name: name, scope: coordination.ClusterScope, fn: fn, cfg: cfg}
}

// GlobalPartitioned returns a worker that runs fn on every live process of
// every cluster that shares the database, each with a distinct index of
// the pool's count, pool "global/<name>". No index is ever worked on by two
// processes at overlapping times, as for ClusterPartitioned.
func GlobalPartitioned(name string, fn PartitionFunc, cfg PartitionConfig) Worker {
	return &partitioned{name: name, scope: coordination.GlobalScope, fn: fn, cfg: cfg}
}

type partitioned struct {
	name  string
	scope coordination.Scope
	fn    PartitionFunc
	cfg   PartitionConfig
}

func (p *partitioned) Name() string { return p.name }
func (p *partitioned) Kind() Kind   { return KindPartitioned }

func (p *partitioned) validate() error {
	if p.fn == nil {
		return fmt.Errorf("%w: partitioned worker %q has a nil function", ErrInvalidWorker, p.name)
	}
	if err := (coordination.PoolConfig{PollInterval: p.cfg.PollInterval}).Validate(); err != nil {
		return fmt.Errorf("%w: partitioned worker %q: %w", ErrInvalidWorker, p.name, err)
	}
	return nil
}

func (p *partitioned) bind(h *Host, st *workerState) error {
	pool, err := h.coord.Pool(p.scope, p.name, coordination.PoolConfig{PollInterval: p.cfg.PollInterval})
	if err != nil {
		return err
	}
	st.coordPool = pool
	h.byPool[pool.Key()] = st
	return nil
}

// run is one membership of the pool until ctx is cancelled, on the pool's
// term loop (coordination.Pool.Run): the restarts, the backoff and the
// panic policy are that loop's.
func (p *partitioned) run(ctx context.Context, h *Host) error {
	st := h.stateOf(p)
	pool := st.coordPool
	st.mu.Lock()
	st.ref = pool
	st.mu.Unlock()
	return pool.Run(ctx, coordination.AssignmentFunc(p.fn), coordination.RunOptions[coordination.Assignment]{
		Backoff:    h.cfg.RestartBackoff,
		MaxBackoff: h.cfg.MaxRestartBackoff,
		// Code outside the host runs the same pool in this process:
		// report it, and try again after the backoff.
		RetryBusy: true,
		OnTermStart: func(a coordination.Assignment) {
			st.setPool(&PoolStatus{Worker: p.name, Assignment: a, Members: a.Members})
			h.emit(Event{Kind: EventAssignmentChanged, Worker: p.name, Lease: a.Pool, Epoch: a.Epoch, Assignment: &a})
		},
		OnTermEnd: func(a coordination.Assignment, cause error) {
			if cause == nil {
				st.log.Info("partition work finished for this generation", zap.String("pool", a.Pool),
					zap.Int64("generation", a.Generation), zap.Int("index", a.Index), zap.Int("count", a.Count))
			}
			st.setPool(nil)
		},
		OnError: func(a coordination.Assignment, err error, retryIn time.Duration) {
			if a.Pool == "" { // a refused join
				h.reportError(st, pool.Key(), 0, err, retryIn)
				return
			}
			h.reportError(st, a.Pool, a.Epoch, err, retryIn)
		},
	})
}
