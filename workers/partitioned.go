package workers

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
)

// ClusterPartitioned returns a worker that splits the work of fn over the
// live processes of this cluster, pool "cluster/<cluster>/<name>", on
// coordination.Pool.Run: each gets an index of the pool's count, or, with
// cfg.Partitions (the same in every process), each partition it owns in a
// call of its own. A function that returns an error or panics while its
// assignment is current is called again after Config.RestartBackoff; one
// that returns nil leaves the assignment idle until the next generation,
// or until the partition moves away and back.
func ClusterPartitioned(name string, fn coordination.AssignmentFunc, cfg coordination.PoolConfig) Worker {
	return &partitioned{name: name, scope: coordination.ClusterScope, fn: fn, cfg: cfg}
}

// GlobalPartitioned is ClusterPartitioned over the live processes of
// every cluster that shares the database: pool "global/<name>".
func GlobalPartitioned(name string, fn coordination.AssignmentFunc, cfg coordination.PoolConfig) Worker {
	return &partitioned{name: name, scope: coordination.GlobalScope, fn: fn, cfg: cfg}
}

type partitioned struct {
	name  string
	scope coordination.Scope
	fn    coordination.AssignmentFunc
	cfg   coordination.PoolConfig
}

func (p *partitioned) Name() string { return p.name }
func (p *partitioned) kind() kind   { return kindPartitioned }

func (p *partitioned) validate() error {
	if p.fn == nil {
		return fmt.Errorf("%w: partitioned worker %q has a nil function", coordination.ErrInvalidConfig, p.name)
	}
	return nil
}

func (p *partitioned) bind(h *Host, st *workerState) error {
	pool, err := h.coord.Pool(p.scope, p.name, p.cfg)
	if err != nil {
		return err
	}
	st.pool = pool
	st.assigned = make(map[int]coordination.Assignment)
	return nil
}

// run is one membership of the pool until ctx is cancelled, on the pool's
// term loop (coordination.Pool.Run).
func (p *partitioned) run(ctx context.Context, h *Host) error {
	st := h.stateOf(p)
	pool := st.pool
	return pool.Run(ctx, p.fn, &coordination.RunOptions[coordination.Assignment]{
		Backoff:    h.cfg.RestartBackoff,
		MaxBackoff: h.cfg.MaxRestartBackoff,
		// Code outside the host may run the same pool in this process.
		RetryBusy: true,
		OnTermStart: func(a coordination.Assignment) {
			st.setAssigned(a, true)
			st.log.Info("started assignment", zap.String("pool", a.Key), zap.Int("index", a.Index),
				zap.Int("count", a.Count), zap.Int64("generation", a.Generation), zap.Int64("epoch", a.Epoch))
			h.emit(Event{Kind: EventAssignmentStarted, Worker: p.name, Key: a.Key, Epoch: a.Epoch, Assignment: &a})
		},
		OnTermEnd: func(a coordination.Assignment, cause error) {
			st.setAssigned(a, false)
			st.log.Info("stopped assignment", zap.String("pool", a.Key), zap.Int("index", a.Index),
				zap.Int64("generation", a.Generation), zap.NamedError("cause", cause))
			h.emit(Event{Kind: EventAssignmentStopped, Worker: p.name, Key: a.Key, Epoch: a.Epoch, Assignment: &a, Err: cause})
		},
		OnError: func(a coordination.Assignment, err error, retryIn time.Duration) {
			if a.Key == "" { // a refused run
				h.reportError(st, pool.Key(), 0, err, retryIn)
				return
			}
			h.reportError(st, a.Key, a.Epoch, fmt.Errorf("index %d: %w", a.Index, err), retryIn)
		},
	})
}

// setAssigned records that the worker works on a now (on), or no longer.
func (st *workerState) setAssigned(a coordination.Assignment, on bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if on {
		st.assigned[a.Index] = a
	} else if cur, ok := st.assigned[a.Index]; ok && cur.Generation == a.Generation {
		delete(st.assigned, a.Index)
	}
}
