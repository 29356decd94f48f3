package coordination

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

// partitionRun starts the work of a sticky pool's partitions, each a term
// with a backoff of its own.
type partitionRun struct {
	p    *Pool
	fn   AssignmentFunc
	loop *termLoop[Assignment]
}

// StartPartition returns the work of one partition: fn on Run's term loop.
func (r *partitionRun) StartPartition(a membership.PartitionAssignment) func(ctx context.Context) {
	p := r.p
	pt := Assignment{
		Key: p.key, Index: a.Partition, Count: a.Count, Generation: a.Since, Epoch: a.Lease.Epoch(),
		p: p, member: a.Lease.(memberLease).Lease, memberID: a.Member,
	}
	return func(ctx context.Context) {
		log := p.deps.log.With(zap.String("pool", p.key), zap.Int("partition", pt.Index), zap.Int64("epoch", pt.Epoch))
		finished := r.loop.workWith(ctx, r.loop.newBackoff(), pt, pt.Valid,
			func(ctx context.Context) error { return r.fn(ctx, pt) },
			func(err error) error {
				return fmt.Errorf("pool work for %q partition %d since generation %d: %w", p.key, pt.Index, pt.Generation, err)
			}, log, Event{Key: p.key, Epoch: pt.Epoch})
		r.loop.end(pt, workEnd(ctx, finished))
	}
}

// PartitionStopped needs nothing: the member keeps the running partitions.
func (r *partitionRun) PartitionStopped(int) {}

// validateSticky checks Partitions and MemberID.
func (cfg PoolConfig) validateSticky() error {
	switch n := cfg.Partitions; {
	case n < 0:
		return fmt.Errorf("%w: Partitions (%d) must not be negative", ErrInvalidConfig, n)
	case n > maxPartitions:
		return fmt.Errorf("%w: Partitions (%d) must be at most %d", ErrInvalidConfig, n, maxPartitions)
	}
	id := cfg.MemberID
	switch {
	case id == "":
		return nil
	case cfg.Partitions == 0:
		return fmt.Errorf("%w: MemberID (%q) needs Partitions: only a sticky pool has static members", ErrInvalidConfig, id)
	case len(id) > maxMemberIDLen:
		return fmt.Errorf("%w: MemberID (%q) is %d bytes long; the limit is %d", ErrInvalidConfig, id, len(id), maxMemberIDLen)
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9') || b == '.' || b == '_' || b == '-' {
			continue
		}
		return fmt.Errorf("%w: MemberID (%q) has %q at byte %d; allowed are ASCII letters, digits, '.', '_' and '-'",
			ErrInvalidConfig, id, rune(b), i)
	}
	return nil
}
