package workers

import (
	"context"
	"fmt"
	"slices"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// Status is what a host is doing right now, as this process sees it.
type Status struct {
	// Holder is this process's holder string, as written into leases
	// ("node/cluster/instance").
	Holder string
	// Identity is this process's identity.
	Identity identity.Identity
	// Leading lists the terms this process holds and trusts now, one per
	// leading singleton or scheduled worker, in the order the workers were
	// given to NewHost.
	Leading []Leading
	// Pools lists the current assignment of every partitioned worker that
	// has one, in the order the workers were given to NewHost.
	Pools []PoolStatus
}

// Leading is one term a singleton or scheduled worker holds.
type Leading struct {
	Worker string
	Kind   Kind
	// Lease is the full lease name, such as "global/billing".
	Lease string
	// Epoch is the term's fencing epoch.
	Epoch int64
}

// PoolStatus is a partitioned worker's view of its pool.
type PoolStatus struct {
	Worker string
	// Assignment is this process's share of the work; the zero value
	// while it has none (during a rebalance).
	Assignment Assignment
	// Members are the ids of the pool's members, in index order, for the
	// generation of Assignment: Members[Assignment.Index] is this process.
	Members []string
	// Partitions are the partitions a sticky worker (ClusterSticky,
	// GlobalSticky) works on now, in order; Assignment and Members are
	// then zero. Empty for a worker by index and count.
	Partitions []coordination.Partition
	// Pool is the pool as the database sees it now: its generation and
	// every member row with its holder, whether it is live by the database
	// clock, and the generation it acknowledged. Status reads it.
	Pool coordination.PoolState
}

// Assignment is one process's share of a partitioned worker's work: index
// Index of Count, in pool generation Generation, made under fencing epoch
// Epoch. It is coordination.Assignment, with Valid and Fence.
type Assignment = coordination.Assignment

// Status reports the terms this process leads, the assignments of its
// partitioned workers, and each pool as the database sees it. Leading and
// assignments come from this process's memory (a term counts only while
// Lease.Valid reports true); the pools are read from the database, one
// query per partitioned worker.
func (h *Host) Status(ctx context.Context) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	s := Status{Holder: h.coord.Holder(), Identity: h.coord.Identity()}
	for _, st := range h.states {
		st.mu.Lock()
		term, pool, ref := st.term, st.pool, st.ref
		st.mu.Unlock()
		if term != nil && term.Valid() {
			s.Leading = append(s.Leading, Leading{Worker: st.w.Name(), Kind: st.w.Kind(), Lease: term.Key(), Epoch: term.Epoch()})
		}
		if ref == nil {
			continue
		}
		p := PoolStatus{Worker: st.w.Name(), Partitions: st.partitions()}
		if pool != nil {
			p = *pool
			p.Members = slices.Clone(p.Members)
		}
		state, err := ref.State(ctx)
		if err != nil {
			return s, fmt.Errorf("workers: status of partitioned worker %q: %w", st.w.Name(), err)
		}
		p.Pool = state
		s.Pools = append(s.Pools, p)
	}
	return s, nil
}
