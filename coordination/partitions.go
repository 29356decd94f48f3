package coordination

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

// Partition is one partition of a sticky pool (PoolConfig.Partitions),
// owned by this member. A member works on each of its partitions in a
// call of its own (PartitionFunc), and a rebalance stops only the calls of
// the partitions that move.
//
// # Moves
//
// The pool's generation row holds, for each partition, its owner and the
// generation since which the owner has held it without a break (Since).
// When the members taking part change, the member that notices publishes
// the next generation, whose owners change only as balance requires: a
// join of the (N+1)-th member moves at most ceil(P/(N+1)) partitions, all
// to the joiner, and a leave moves only the leaver's (docs/design.md,
// "Sticky partitions"). A member that sees the generation cancels the
// work of the partitions it lost, waits for it to return, and
// acknowledges; the work of the others goes on. A member starts a
// partition it gained only when the member that had it (and any earlier
// owner that had not yet let it go) acknowledged the generation that took
// it away, or its membership expired by the database clock. So no
// partition is worked on by two members at overlapping times, and no
// rebalance waits for the partitions that do not move, nor for members
// that give up nothing the starting member gains.
//
// # Static members
//
// A member with PoolConfig.MemberID keeps its partitions for one TTL
// after its membership ended: a process restarted under the same
// MemberID within that time (a rolling deploy) gets them back with the
// same Since, and the others see no rebalance at all. Its crash moves its
// partitions one TTL later than a dynamic member's.
type Partition struct {
	Pool      string // the pool's key
	Partition int    // the partition, 0 <= Partition < Count
	Count     int    // the pool's number of partitions (PoolConfig.Partitions)
	Since     int64  // the generation from which this member has owned it without a break
	Epoch     int64  // epoch of this member's membership lease
	Member    string // this member's id (a static one starts with "s:")

	p      *Pool
	member *Lease
}

// Valid reports whether this process still trusts its membership. Like
// Lease.Valid it reads the clock itself; call it before each unit of work.
// It does not see a generation published a moment ago that moved the
// partition: Fence does.
func (pt Partition) Valid() bool { return pt.member != nil && pt.member.Valid() }

// Fence asserts, inside the caller's transaction tx, that this member
// still owns the partition: the pool's current generation gives it to
// this member with the same Since, and this process holds its membership
// at this epoch, unexpired by the database clock. It stays valid across
// generations that do not move the partition. It locks the pool's
// generation row and the member row until tx ends, so the partition
// cannot move while a fenced transaction is in flight. On failure it
// returns an error wrapping ErrFenced and the caller must roll back. Like
// Lease.Fence, it refuses a tx that is nil or not inside a transaction
// with an error wrapping ErrNotInTransaction.
func (pt Partition) Fence(tx *gorm.DB) error {
	if err := requireTransaction(tx, fmt.Sprintf("pool %q partition %d", pt.Pool, pt.Partition)); err != nil {
		return err
	}
	fail := func(reason string) error {
		return &FenceError{Name: pt.Pool, Epoch: pt.Epoch, Pool: true, Generation: pt.Since,
			Reason: fmt.Sprintf("partition %d: %s", pt.Partition, reason)}
	}
	if pt.p == nil {
		return fail("zero Partition")
	}
	if !pt.Valid() {
		return fail("this process no longer trusts its membership")
	}
	row, ok, err := pt.p.deps.store.FenceGeneration(tx, pt.p.rows.Generation)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of pool %q partition %d: %w", pt.Pool, pt.Partition, err)
	}
	if !ok || !membership.IsMap(row.Data) {
		return fail("the pool has no partition map")
	}
	pm, err := membership.DecodeMap(row.Data)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of pool %q partition %d: %w", pt.Pool, pt.Partition, err)
	}
	if pt.Partition < 0 || pt.Partition >= len(pm.Owner) {
		return fail(fmt.Sprintf("the pool has %d partitions", len(pm.Owner)))
	}
	if o, s := pm.Owner[pt.Partition], pm.Since[pt.Partition]; o != pt.Member || s != pt.Since {
		return fail(fmt.Sprintf("generation %d gives it to %q since generation %d", row.Epoch, o, s))
	}
	return pt.member.fence(tx)
}

// share is the partition's share of the pool's keys: the keys whose
// floor modulo Count is Partition, and the buckets [Partition*Buckets/Count,
// (Partition+1)*Buckets/Count). The partitions of a pool cover every key
// and every bucket once; with Count at most MaxPartitions (= Buckets)
// each owns at least one bucket.
func (pt Partition) share() (share, error) {
	switch {
	case pt.Count < 1:
		return share{}, fmt.Errorf("partition of pool %q: Count (%d) must be at least 1", pt.Pool, pt.Count)
	case pt.Partition < 0 || pt.Partition >= pt.Count:
		return share{}, fmt.Errorf("partition of pool %q: Partition (%d) must lie in [0, Count (%d))", pt.Pool, pt.Partition, pt.Count)
	}
	return share{mod: pt.Count, parts: []int{pt.Partition}}, nil
}

// Owns reports whether key belongs to this partition under Scope's rule:
// its floor modulo Count is Partition (-7 belongs to partition 2 of 3).
// It is false for a Partition with no valid Partition and Count.
func (pt Partition) Owns(key int64) bool {
	s, err := pt.share()
	return err == nil && s.owns(key)
}

// OwnsBucket reports whether the bucket (from Bucket or IntBucket)
// belongs to this partition under BucketScope's rule: it lies in
// [Partition*Buckets/Count, (Partition+1)*Buckets/Count).
func (pt Partition) OwnsBucket(bucket int) bool {
	s, err := pt.share()
	return err == nil && s.ownsBucket(bucket)
}

// Scope is a gorm scope that selects the rows of this partition by the
// integer column named column: those whose key's floor modulo Count is
// Partition, as Owns decides, negative keys included. The scopes of a
// pool's partitions select every row with a non-NULL key exactly once,
// whoever owns them, so a partition's rows stay its own across
// rebalances:
//
//	db.Scopes(pt.Scope("id")).Where("state = ?", "pending").Find(&orders)
//
// The predicate, ((id % Count) + Count) % Count = Partition, cannot use an
// index on the column itself. Count is fixed for the pool, so an index on
// that expression (or a stored generated column of it) could serve it;
// BucketScope over an indexed bucket column serves every pool size.
// Errors are Assignment.Scope's.
func (pt Partition) Scope(column string) func(*gorm.DB) *gorm.DB {
	return modScope(column, pt.share)
}

// BucketScope is a gorm scope that selects the rows of this partition by a
// bucket column, which holds Bucket(key) or IntBucket(key): those whose
// bucket lies in [Partition*Buckets/Count, (Partition+1)*Buckets/Count),
// as OwnsBucket decides. The predicate is a range, which an index ending
// in the bucket column serves, as for Assignment.BucketScope. Errors are
// Assignment.Scope's.
func (pt Partition) BucketScope(column string) func(*gorm.DB) *gorm.DB {
	return bucketScope(column, pt.share)
}

// PartitionFunc is the work of one member on one partition of a sticky
// pool. ctx ends when the partition moves to another member, membership
// is lost, or the pool stops; not when other partitions move.
type PartitionFunc func(ctx context.Context, pt Partition) error

// RunPartitions makes this process a member of the sticky pool
// (PoolConfig.Partitions) until ctx is cancelled, and calls fn for each
// partition this member owns, each in its own goroutine, once no other
// member works on it. fn should run until its ctx ends. Each partition
// this member starts working on is a term of its own: if fn returns an
// error or panics while the partition is owned, the error (a *PanicError
// for a panic) is logged and reported as an EventError, and fn is called
// again after the backoff (RunOptions.Backoff, by default RetryInterval,
// doubling with each consecutive failure of that partition up to
// MaxBackoff, by default 30s). If it returns nil, the partition stays
// idle until it moves away and back. opts, at most one, sets the backoff,
// RetryBusy and the callbacks of each partition's term; the callbacks of
// different partitions run on their own goroutines, so they may overlap.
//
// On cancellation RunPartitions stops the work of every partition, waits
// for it (at most ShutdownTimeout), and releases the membership; a
// dynamic member then publishes a generation without itself so the
// others take its partitions at once, and a static one (MemberID) leaves
// them for one TTL to its restart. If the work does not return in time,
// the membership is not released and expires after TTL. It returns nil
// then, ErrBusy if the pool already runs in this process (unless
// RetryBusy), ErrClosed if the coordinator stopped first, and an error
// wrapping ErrInvalidConfig for a pool without Partitions (use Run) or
// invalid options.
func (p *Pool) RunPartitions(ctx context.Context, fn PartitionFunc, opts ...RunOptions[Partition]) error {
	if p.partitions == 0 {
		return fmt.Errorf("coordination: run pool %q: %w: RunPartitions needs PoolConfig.Partitions; run the pool with Run",
			p.key, ErrInvalidConfig)
	}
	if fn == nil {
		return fmt.Errorf("coordination: run pool %q: %w: PartitionFunc is nil", p.key, ErrInvalidConfig)
	}
	loop, err := newTermLoop(p.deps.shared, "pool work", opts)
	if err != nil {
		return fmt.Errorf("coordination: run pool %q: %w", p.key, err)
	}
	run := &poolRun{p: p, wake: make(chan struct{}, 1)}
	run.parts = &partitionRun{p: p, fn: fn, loop: loop}
	switch err := loop.enter(ctx, p.key, func() error { return p.deps.handles.enter(run) }); {
	case errors.Is(err, errStopped):
		return nil
	case err != nil:
		return err
	}
	defer p.deps.handles.leave(run)
	return p.drive(ctx, run)
}

// partitionRun starts the work of RunPartitions' partitions.
type partitionRun struct {
	p    *Pool
	fn   PartitionFunc
	loop *termLoop[Partition] // RunPartitions' options; each partition has a backoff of its own
}

// StartPartition returns the work of one partition: fn on the term loop
// Election.Run and Pool.Run follow too, with a backoff of the partition's
// own.
func (r *partitionRun) StartPartition(a membership.PartitionAssignment) func(ctx context.Context) {
	p := r.p
	lease := a.Lease.(memberLease).Lease
	pt := Partition{
		Pool: p.key, Partition: a.Partition, Count: a.Count, Since: a.Since, Epoch: a.Lease.Epoch(),
		Member: a.Member, p: p, member: lease,
	}
	return func(ctx context.Context) {
		log := p.deps.log.With(zap.String("pool", p.key), zap.Int("partition", pt.Partition), zap.Int64("epoch", pt.Epoch))
		finished := r.loop.workWith(ctx, r.loop.newBackoff(), pt, pt.Valid,
			func(ctx context.Context) error { return r.fn(ctx, pt) },
			func(err error) error {
				return fmt.Errorf("pool work for %q partition %d since generation %d: %w", p.key, pt.Partition, pt.Since, err)
			}, log, Event{Lease: p.key, Pool: p.key, Epoch: pt.Epoch})
		r.loop.end(pt, workEnd(ctx, finished))
	}
}

// PartitionStopped needs nothing: the member keeps the set of running
// partitions.
func (r *partitionRun) PartitionStopped(int) {}

// validateSticky checks Partitions and MemberID (PoolConfig.Validate).
func (cfg PoolConfig) validateSticky() error {
	switch n := cfg.Partitions; {
	case n < 0:
		return fmt.Errorf("%w: Partitions (%d) must not be negative", ErrInvalidConfig, n)
	case n > MaxPartitions:
		return fmt.Errorf("%w: Partitions (%d) must be at most %d", ErrInvalidConfig, n, MaxPartitions)
	}
	id := cfg.MemberID
	switch {
	case id == "":
		return nil
	case cfg.Partitions == 0:
		return fmt.Errorf("%w: MemberID (%q) needs Partitions: only a sticky pool has static members", ErrInvalidConfig, id)
	case len(id) > MaxMemberIDLen:
		return fmt.Errorf("%w: MemberID (%q) is %d bytes long; the limit is %d", ErrInvalidConfig, id, len(id), MaxMemberIDLen)
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
