package workers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
)

// StickyConfig tunes a sticky partitioned worker (ClusterSticky,
// GlobalSticky). Partitions is required; the rest may be left zero.
type StickyConfig struct {
	// Partitions is the pool's fixed number of partitions, from 1 to
	// coordination.MaxPartitions (coordination.PoolConfig.Partitions).
	// Every process of the pool must give the same number.
	Partitions int
	// MemberID, when set, makes this process a static member of the pool
	// (coordination.PoolConfig.MemberID): restarted under the same id
	// within a TTL, as in a rolling deploy, it gets its partitions back
	// without a rebalance. It must be unique among the pool's live
	// processes, such as a StatefulSet pod's name.
	MemberID string
	// PollInterval is as for PartitionConfig.
	PollInterval time.Duration
}

// ClusterSticky returns a worker that spreads cfg.Partitions fixed
// partitions over the live processes of this process's cluster, pool
// "cluster/<cluster>/<name>", and runs fn for each partition this process
// owns, each in a goroutine of its own (coordination.Pool.RunPartitions).
// A process joining or leaving moves only the partitions balance requires,
// and the partitions that do not move keep running through the rebalance.
// No partition is worked on by two processes at overlapping times; fence
// each commit with the Partition's Fence.
//
// It is a partitioned worker (KindPartitioned): its name is shared with
// the ClusterPartitioned workers of the host, and a pool runs either by
// index and count or sticky, never both (coordination.ErrPoolMode).
//
// fn runs on the term loop the other workers run on, one term per
// partition: an error or a panic while the partition is owned is reported
// as EventWorkerError and fn is called again after Config.RestartBackoff;
// nil leaves the partition idle until it moves away and back.
func ClusterSticky(name string, fn coordination.PartitionFunc, cfg StickyConfig) Worker {
	return &sticky{name: name, scope: coordination.ClusterScope, fn: fn, cfg: cfg}
}

// GlobalSticky is ClusterSticky over the live processes of every cluster
// that shares the database, pool "global/<name>".
func GlobalSticky(name string, fn coordination.PartitionFunc, cfg StickyConfig) Worker {
	return &sticky{name: name, scope: coordination.GlobalScope, fn: fn, cfg: cfg}
}

// sticky is a worker of ClusterSticky or GlobalSticky. It holds no state
// of its own, so one value may be given to several hosts.
type sticky struct {
	name  string
	scope coordination.Scope
	fn    coordination.PartitionFunc
	cfg   StickyConfig
}

func (w *sticky) Name() string { return w.name }
func (w *sticky) Kind() Kind   { return KindPartitioned }

// poolConfig is the pool w runs.
func (w *sticky) poolConfig() coordination.PoolConfig {
	return coordination.PoolConfig{PollInterval: w.cfg.PollInterval, Partitions: w.cfg.Partitions, MemberID: w.cfg.MemberID}
}

func (w *sticky) validate() error {
	if w.fn == nil {
		return fmt.Errorf("%w: sticky partitioned worker %q has a nil function", ErrInvalidWorker, w.name)
	}
	if w.cfg.Partitions == 0 {
		return fmt.Errorf("%w: sticky partitioned worker %q: StickyConfig.Partitions is 0; it must be from 1 to %d",
			ErrInvalidWorker, w.name, coordination.MaxPartitions)
	}
	if err := w.poolConfig().Validate(); err != nil {
		return fmt.Errorf("%w: sticky partitioned worker %q: %w", ErrInvalidWorker, w.name, err)
	}
	return nil
}

func (w *sticky) bind(h *Host, st *workerState) error {
	pool, err := h.coord.Pool(w.scope, w.name, w.poolConfig())
	if err != nil {
		return err
	}
	st.coordPool = pool
	st.parts = make(map[int]coordination.Partition)
	h.byPool[pool.Key()] = st
	return nil
}

// run is one membership of the pool until ctx is cancelled, on the pool's
// term loop (coordination.Pool.RunPartitions).
func (w *sticky) run(ctx context.Context, h *Host) error {
	st := h.stateOf(w)
	pool := st.coordPool
	st.mu.Lock()
	st.ref = pool
	st.mu.Unlock()
	return pool.RunPartitions(ctx, w.fn, coordination.RunOptions[coordination.Partition]{
		Backoff:    h.cfg.RestartBackoff,
		MaxBackoff: h.cfg.MaxRestartBackoff,
		// Code outside the host runs the same pool in this process:
		// report it, and try again after the backoff.
		RetryBusy: true,
		OnTermStart: func(pt coordination.Partition) {
			st.setPartition(pt, true)
			st.log.Info("started partition", zap.String("pool", pt.Pool), zap.Int("partition", pt.Partition),
				zap.Int64("since", pt.Since), zap.Int64("epoch", pt.Epoch))
			h.emit(Event{Kind: EventPartitionStarted, Worker: w.name, Lease: pt.Pool, Epoch: pt.Epoch, Partition: &pt})
		},
		OnTermEnd: func(pt coordination.Partition, cause error) {
			st.setPartition(pt, false)
			st.log.Info("stopped partition", zap.String("pool", pt.Pool), zap.Int("partition", pt.Partition),
				zap.Int64("since", pt.Since), zap.NamedError("cause", cause))
			h.emit(Event{Kind: EventPartitionStopped, Worker: w.name, Lease: pt.Pool, Epoch: pt.Epoch, Partition: &pt, Err: cause})
		},
		OnError: func(pt coordination.Partition, err error, retryIn time.Duration) {
			if pt.Pool == "" { // a refused run
				h.reportError(st, pool.Key(), 0, err, retryIn)
				return
			}
			h.reportError(st, pt.Pool, pt.Epoch, fmt.Errorf("partition %d: %w", pt.Partition, err), retryIn)
		},
	})
}

// setPartition records that the sticky worker works on pt now (on), or no
// longer.
func (st *workerState) setPartition(pt coordination.Partition, on bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if on {
		st.parts[pt.Partition] = pt
	} else if cur, ok := st.parts[pt.Partition]; ok && cur.Since == pt.Since {
		delete(st.parts, pt.Partition)
	}
}

// partitions returns the partitions a sticky worker works on now, in
// order; nil for other workers.
func (st *workerState) partitions() []coordination.Partition {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.parts == nil {
		return nil
	}
	out := slices.Collect(maps.Values(st.parts))
	slices.SortFunc(out, func(a, b coordination.Partition) int { return a.Partition - b.Partition })
	return out
}
