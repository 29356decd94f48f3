package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

// A Pool splits work across every live process that runs it. Run by index
// and count, each member gets an Assignment {Index, Count, Generation,
// Epoch}: the indexes of one generation are distinct and cover
// 0..Count-1, and Count is the number of members in it. A join or a leave
// makes a new generation, in which members that stay keep their order and
// joiners come last, so a join moves no index. With
// PoolConfig.Partitions, each member gets the partitions it owns.
//
// No index or partition is ever worked on by two members at overlapping
// times: work in a generation starts once every live member has stopped
// its work of older ones, and Assignment.Fence refuses work that ignores
// its cancelled context. Every member works in the new generation within
// 1.25 PollInterval of a join or a graceful leave, and within TTL +
// PollInterval/4 + 2ms of a crash, plus the time of a few statements and
// of the work returning once cancelled.
type Pool struct {
	deps       *poolDeps
	scope      Scope
	name       string
	key        string          // "global/<name>" or "cluster/<cluster>/<name>"
	rows       membership.Rows // the names of its rows
	poll       time.Duration
	attrs      metric.MeasurementOption // attributes of its metrics; nil when they are off
	partitions int                      // PoolConfig.Partitions
	static     string                   // PoolConfig.MemberID
}

// poolDeps is what every pool of a coordinator is given: the term set it
// joins through, the registry of running pools, its slice of the store
// and the wake-ups.
type poolDeps struct {
	*shared
	terms   *termSet
	handles *handles
	store   poolStore
	wakes   *waker
}

// Bounds of PoolConfig.PollInterval.
const (
	minPollInterval = 10 * time.Millisecond
	maxPollInterval = maxTTL
)

// rebalanceBound is the longest, after a member joins or leaves
// gracefully, until every member of a settled pool polling every poll
// works in the new generation, statements and the work's return left out.
func rebalanceBound(poll time.Duration) time.Duration { return poll + poll/4 }

// crashRebalanceBound is the longest, after a member of a settled pool
// crashes, until every other member works in a generation without it, for
// the coordinator's TTL and the pool's poll, as rebalanceBound counts.
func crashRebalanceBound(ttl, poll time.Duration) time.Duration {
	return ttl + poll/4 + membership.ExpiryMargin
}

// PoolConfig tunes a pool. The zero value is valid; docs/configuration.md
// explains each field.
type PoolConfig struct {
	// PollInterval is how often a member reads the pool, more often during
	// a rebalance; it sets the rebalance bounds (see Pool). 10ms to 24h.
	// Defaults to the coordinator's RetryInterval, or 10ms if that is less.
	PollInterval time.Duration

	// Partitions, when set, makes the pool sticky, of this many partitions:
	// Run calls its function once per partition owned, a join or a leave
	// moves only what balance requires, and partitions that stay keep
	// running. Every member must set the same value. At most 4096. Defaults
	// to 0: each member gets an index of a count.
	Partitions int

	// MemberID, with Partitions, makes this process a static member under
	// this stable id (a StatefulSet pod name, say), which no other live
	// process of the pool may use. It keeps its partitions for one TTL after
	// its membership ends, so a restart within that time gets them back
	// without a rebalance. 1 to 64 bytes of ASCII letters, digits, '.', '_'
	// and '-'. Defaults to none: a dynamic member, whose partitions move as
	// soon as it leaves.
	MemberID string
}

// Bounds of PoolConfig.Partitions and PoolConfig.MemberID.
const (
	maxPartitions  = 4096
	maxMemberIDLen = 64
)

// validate checks cfg; a zero PollInterval takes its default. Errors wrap
// ErrInvalidConfig and name the field and its value.
func (cfg PoolConfig) validate() error {
	switch p := cfg.PollInterval; {
	case p == 0:
	case p < 0:
		return fmt.Errorf("%w: PollInterval (%v) must not be negative", ErrInvalidConfig, p)
	case p < minPollInterval:
		return fmt.Errorf("%w: PollInterval (%v) must be at least %v", ErrInvalidConfig, p, minPollInterval)
	case p > maxPollInterval:
		return fmt.Errorf("%w: PollInterval (%v) must be at most %v", ErrInvalidConfig, p, maxPollInterval)
	}
	return cfg.validateSticky()
}

// runAssignment runs fn for one assignment under the work policy, and
// calls OnTermEnd once fn has returned for the last time. work ends with
// the assignment.
func runAssignment(r *termLoop[Assignment], work context.Context, a Assignment, fn AssignmentFunc) {
	finished := r.work(work, a, a.Valid, a.Key, a.Epoch, func(ctx context.Context) error { return fn(ctx, a) })
	r.end(a, workEnd(work, finished))
}

// workEnd is the cause OnTermEnd gets for an assignment's work: nil when
// it finished, otherwise the cause of work.
func workEnd(work context.Context, finished bool) error {
	if finished {
		return nil
	}
	if cause := context.Cause(work); cause != nil {
		return cause
	}
	// Valid turned false before the deadline timer cancelled the context.
	return fmt.Errorf("%w: trust deadline passed", ErrLeaseLost)
}

// Pool returns the pool with the given scope and name, which is apart from
// an election of the same name. An invalid name or cfg gives an error
// wrapping ErrInvalidConfig.
func (c *Coordinator) Pool(scope Scope, name string, cfg PoolConfig) (*Pool, error) {
	key, err := leaseName(scope, c.id.Cluster, name)
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("pool %q: %w", key, err)
	}
	poll := cfg.PollInterval
	if poll == 0 {
		poll = max(c.cfg.RetryInterval, minPollInterval)
	}
	return &Pool{
		deps: c.pools, scope: scope, name: name, key: key, rows: poolRowsFor(key),
		poll: poll, attrs: c.metrics.poolAttrs(key),
		partitions: cfg.Partitions, static: cfg.MemberID,
	}, nil
}

// Key returns the pool's key ("global/<name>" or "cluster/<c>/<name>"),
// the same string as the key of an election of that scope and name.
func (p *Pool) Key() string { return p.key }

// Assignment is this member's share of a pool: in a pool run by index and
// count, its index of one generation; in a pool with Partitions, one
// partition it owns, which a rebalance moves only when balance requires.
type Assignment struct {
	Key   string // the pool's key
	Index int    // this member's index, or the partition, 0 <= Index < Count
	Count int    // the members of the generation, or the pool's Partitions
	// Generation is the generation the index belongs to; for a partition,
	// the generation from which this member has owned it without a break.
	Generation int64
	Epoch      int64    // epoch of this member's membership lease
	Members    []string // member ids in index order; nil for a partition

	p        *Pool
	member   *Lease
	memberID string // this member's id, which a partition's owner must be
}

// Valid reports whether this process still trusts its membership, as
// Lease.Valid does; a newer generation published a moment ago only Fence
// sees.
func (a Assignment) Valid() bool { return a.member != nil && a.member.Valid() }

// Fence asserts, inside the caller's transaction tx, that this assignment
// is current (the pool is at Generation, or this member owns the
// partition since Generation) and this process holds its membership at
// Epoch, unexpired by the database clock, and locks the pool's generation
// row and the member row until tx ends, as Lease.Fence does, with its
// errors.
func (a Assignment) Fence(tx *gorm.DB) error {
	what := fmt.Sprintf("pool %q generation %d", a.Key, a.Generation)
	if a.memberID != "" {
		what = fmt.Sprintf("pool %q partition %d since generation %d", a.Key, a.Index, a.Generation)
	}
	if err := requireTransaction(tx, what); err != nil {
		return err
	}
	switch {
	case a.p == nil:
		return fenced(what, "zero Assignment")
	case !a.Valid():
		return fenced(what, "this process no longer trusts its membership")
	}
	row, ok, err := a.p.deps.store.FenceGeneration(tx, a.p.rows.Generation)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of %s: %w", what, err)
	}
	if a.memberID == "" {
		if !ok || row.Epoch != a.Generation {
			return fenced(what, fmt.Sprintf("the pool is at generation %d", row.Epoch))
		}
		return a.member.fence(tx)
	}
	if !ok || !membership.IsMap(row.Data) {
		return fenced(what, "the pool has no partition map")
	}
	pm, err := membership.DecodeMap(row.Data)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of %s: %w", what, err)
	}
	if a.Index < 0 || a.Index >= len(pm.Owner) {
		return fenced(what, fmt.Sprintf("the pool has %d partitions", len(pm.Owner)))
	}
	if o, since := pm.Owner[a.Index], pm.Since[a.Index]; o != a.memberID || since != a.Generation {
		return fenced(what, fmt.Sprintf("generation %d gives it to %q since generation %d", row.Epoch, o, since))
	}
	return a.member.fence(tx)
}

// AssignmentFunc is the work of one member on one assignment. ctx ends
// when the assignment does: a newer generation takes the index (or moves
// the partition) away, membership is lost, or the pool stops.
type AssignmentFunc func(ctx context.Context, a Assignment) error

// Member is one member row as the database sees it.
type Member struct {
	ID     string `json:"id"`     // member id: the instance id, with ".<n>" from the process's second join of the pool on
	Holder string `json:"holder"` // node/cluster/instance
	Ack    int64  `json:"ack"`    // the newest generation it acknowledged
	Live   bool   `json:"live"`   // held and unexpired by the database clock
	// ExpiresAt is when the membership expires unless renewed, by the
	// database clock, in UTC; zero for a row never held.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// PoolState is a pool as the database sees it.
type PoolState struct {
	Key          string    `json:"key"`
	Generation   int64     `json:"generation"`
	List         []string  `json:"list"`    // member ids of the current generation, in index order
	Members      []Member  `json:"members"` // every member row, live or not, by id
	DatabaseTime time.Time `json:"database_time,omitzero"`
	// HoldUntil is, after a failover of the database, when the pool may
	// publish and start work again, by the database clock; zero when
	// there is no hold-off (docs/design.md, "Failover of the database").
	HoldUntil time.Time `json:"hold_until,omitzero"`
}

// State reads the pool.
func (p *Pool) State(ctx context.Context) (PoolState, error) {
	st, err := membership.Read(ctx, p.deps.store, p.key, p.rows)
	if err != nil {
		return PoolState{}, err
	}
	return poolStateFrom(p.key, st), nil
}

// Run makes this process a member of the pool until ctx is cancelled, and
// calls fn, in a goroutine of its own, with each assignment once no other
// member works on it: its index of each generation, or each partition it
// owns. fn is called again after failures as under Election.Run; once it
// returns nil, the assignment idles until the next generation (or until
// the partition moves away and back).
//
// On cancellation Run stops the work, waits for it (at most
// ShutdownTimeout) and releases the membership: a dynamic member's work
// moves to the others at once, a static member's after one TTL; work that
// does not return in time keeps the membership until it expires. Run
// returns nil then, ErrBusy if the pool already runs in this process
// (unless RetryBusy), ErrClosed if the coordinator stopped first, and
// ErrInvalidConfig for a nil fn.
func (p *Pool) Run(ctx context.Context, fn AssignmentFunc, opts *RunOptions[Assignment]) error {
	if fn == nil {
		return fmt.Errorf("coordination: run pool %q: %w: AssignmentFunc is nil", p.key, ErrInvalidConfig)
	}
	loop, err := newTermLoop(p.deps.shared, "pool work", opts)
	if err != nil {
		return fmt.Errorf("coordination: run pool %q: %w", p.key, err)
	}
	run := &poolRun{p: p, fn: fn, run: loop, wake: make(chan struct{}, 1)}
	if p.partitions > 0 {
		run.parts = &partitionRun{p: p, fn: fn, loop: loop}
	}
	switch err := loop.enter(ctx, p.key, func() error { return p.deps.handles.enter(run) }); {
	case errors.Is(err, errStopped):
		return nil
	case err != nil:
		return err
	}
	defer p.deps.handles.leave(run)
	return p.drive(ctx, run)
}

// drive steps the membership of one Run until ctx is cancelled or the
// coordinator stops.
func (p *Pool) drive(ctx context.Context, r *poolRun) error {
	// The pool's rows exist once the coordinator has migrated its tables.
	select {
	case <-p.deps.ready:
	case <-p.deps.closing:
		return ErrClosed
	case <-ctx.Done():
		return nil
	}
	m := r.newMember(p.deps.log.With(zap.String("pool", p.key)))
	defer m.Leave(ctx, ErrClosed)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.deps.closing:
			return ErrClosed
		case <-m.Lost(): // once a membership: the step drops it
		case <-r.wake:
			if m.Failing() {
				continue // the read at the end of the backoff sees the change
			}
		case <-timer.C:
		}
		began := time.Now()
		settled := m.Step(ctx)
		m.NoteSettled(began, settled)
		timer.Reset(time.Until(m.NextRead(began, settled)))
	}
}
