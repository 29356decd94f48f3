package workers

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/leasehold/leasehold/coordination"
)

// Status is what a host is doing right now, as this process sees it.
type Status struct {
	// Holder is this process's holder string ("node/cluster/instance").
	Holder string
	// Leading lists the terms this process holds and trusts now, one per
	// leading worker, in the order given to NewHost.
	Leading []Leading
	// Pools lists every partitioned worker, in the order given to NewHost.
	Pools []PoolStatus
}

// Leading is one term a worker holds.
type Leading struct {
	Worker string
	// Kind is the worker's constructor, in words: "cluster-singleton",
	// "global-singleton", "limited" or "scheduled".
	Kind string
	// Key is the full lease name, such as "global/billing".
	Key string
	// Epoch is the term's fencing epoch.
	Epoch int64
}

// PoolStatus is a partitioned worker's view of its pool.
type PoolStatus struct {
	Worker string
	// Assignments are what this process works on now, in order; none
	// during a rebalance.
	Assignments []coordination.Assignment
	// Pool is the pool as the database sees it now.
	Pool coordination.PoolState
}

// Status reports the terms this process leads and trusts, the assignments
// of its partitioned workers, from memory, and each pool as the database
// sees it, one query per partitioned worker.
func (h *Host) Status(ctx context.Context) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	s := Status{Holder: h.coord.Holder()}
	for _, st := range h.states {
		st.mu.Lock()
		term, assigned := st.term, slices.Collect(maps.Values(st.assigned))
		st.mu.Unlock()
		if term != nil && term.Valid() {
			s.Leading = append(s.Leading, Leading{Worker: st.w.Name(), Kind: st.w.kind().String(), Key: term.Key(), Epoch: term.Epoch()})
		}
		if st.pool == nil {
			continue
		}
		slices.SortFunc(assigned, func(a, b coordination.Assignment) int { return a.Index - b.Index })
		state, err := st.pool.State(ctx)
		if err != nil {
			return s, fmt.Errorf("workers: status of partitioned worker %q: %w", st.w.Name(), err)
		}
		s.Pools = append(s.Pools, PoolStatus{Worker: st.w.Name(), Assignments: assigned, Pool: state})
	}
	return s, nil
}
