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

// A Pool splits work across every live process that runs it: each member
// gets an Assignment {Index, Count, Generation, Epoch}, where the indexes
// of one generation are distinct and cover 0..Count-1, and Count is the
// number of members in that generation.
//
// # Rows
//
// A pool is rows of the lease table, where <key> is the pool's Name. Each
// member holds a lease named "pool|<key>|member|<member id>", so membership
// is renewed by the same single statement as every other lease of the
// process and has the same trust deadline. The row "pool|<key>|generation"
// holds the current generation in its epoch and the member list of that
// generation in its data, in index order. Each member row's data is the
// member's acknowledgement: the newest generation for which it has stopped
// all work of older generations. Names never contain '|', so the rows of
// one pool can never be read, counted or pruned as rows of another pool
// or of an election, however the names nest ("a", "a/member/x").
//
// # Revoke, then assign
//
// Every member reads the pool every PollInterval. When the live members
// differ from the published list, the member that notices publishes the
// next generation by compare-and-set on the generation number; the list
// keeps the order of members that stay and appends joiners, so indexes are
// sticky. On seeing a newer generation, a member cancels its work, waits
// for it to return, and acknowledges. It starts work in the new generation
// only when every live member row acknowledges it. A member whose row has
// expired has passed its own trust deadline, so the context of its work
// was cancelled by then. Hence no index is ever assigned to two members at
// overlapping times, and Count always matches the list the indexes came
// from. Work that ignores its cancelled context and goes on writing is no
// longer assigned: Assignment.Fence refuses its transactions.
//
// A rebalance costs one barrier. While a barrier is pending, members read
// four times as often, and every member also reads just after another
// member's row would expire unless renewed. Every member works in the new
// generation within RebalanceBound (1.25 PollInterval) of a join or a
// graceful leave, and within CrashRebalanceBound (TTL + PollInterval/4 +
// 2ms) of a crash, plus the time of a few statements and of the work
// returning once cancelled.
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
	// MinPollInterval is the shortest PollInterval accepted. Every read
	// fetches all of the pool's rows, and during a rebalance a member reads
	// four times per PollInterval.
	MinPollInterval = 10 * time.Millisecond
	// MaxPollInterval is the longest PollInterval accepted, MaxTTL: a
	// rebalance takes about one PollInterval, so a longer one has no use.
	MaxPollInterval = MaxTTL
)

// RebalanceBound returns how long after a member joins or leaves
// gracefully every member of a settled pool polling every poll works in
// the new generation, at most: poll + poll/4. The other members notice the
// new generation on their next read, at most one poll later, and
// acknowledge it; each then sees every acknowledgement on its next read,
// which comes a quarter poll later while a rebalance is pending. The
// bound leaves out the time the members' statements take and the time
// their work takes to return once cancelled.
func RebalanceBound(poll time.Duration) time.Duration { return poll + poll/4 }

// CrashRebalanceBound returns how long after a member of a settled pool
// crashes every other member works in a generation without it, at most:
// ttl + poll/4 + 2ms, for the coordinator's TTL and the pool's poll
// interval. The crashed member's row expires by the database clock at most
// ttl after its last renewal, hence after the crash. Every member has read
// that expiry time and reads the pool again just after it (2ms later, for
// SQLite's millisecond clock), however far its next poll is. The first of
// them publishes the next generation and acknowledges it, the others
// acknowledge it on the same read (reading again at once when they lose
// the race to publish), and each sees every acknowledgement on its next
// read, a quarter poll later. The bound leaves out, as RebalanceBound
// does, the time of the statements and of the work returning.
func CrashRebalanceBound(ttl, poll time.Duration) time.Duration {
	return ttl + poll/4 + membership.ExpiryMargin
}

// PoolConfig tunes a pool. The zero value is valid.
type PoolConfig struct {
	// PollInterval is how often a member reads the pool; four times as
	// often while a rebalance is pending, and also just after another
	// member's row would expire, when that comes first. It sets the
	// rebalance bounds (see RebalanceBound and CrashRebalanceBound).
	// Must be between
	// MinPollInterval (10ms) and MaxPollInterval (24h). Defaults to the
	// coordinator's RetryInterval, or MinPollInterval when that is
	// shorter.
	PollInterval time.Duration

	// Partitions, when set, makes the pool sticky: it has this many
	// partitions, spread over the live members so that a join or a leave
	// moves only what balance requires and the partitions that do not
	// move keep running. Run it with RunPartitions (see Partition). Every
	// member of a pool must set the same value. Must be between 0 and
	// MaxPartitions (4096). Defaults to 0: the pool gives each member an
	// index of a count (Run).
	Partitions int

	// MemberID, with Partitions, makes this process a static member: its
	// stable identity in the pool, the same after a restart (a pod name
	// of a StatefulSet, say), which no other live process of the pool
	// may use. A static member that stops, or crashes, keeps its
	// partitions for one TTL after its membership ended; when it comes
	// back within that time it gets them back without a rebalance. Only
	// after that are they spread over the others. 1 to MaxMemberIDLen
	// (64) bytes of ASCII letters, digits, '.', '_' and '-'. Defaults to
	// none: a dynamic member, whose partitions move as soon as it leaves.
	MemberID string
}

// Bounds of PoolConfig.Partitions and PoolConfig.MemberID.
const (
	// MaxPartitions is the most partitions a sticky pool may have: the
	// partition map of a generation is one row's data, read by every
	// fenced transaction.
	MaxPartitions = 4096
	// MaxMemberIDLen is the longest static member id accepted.
	MaxMemberIDLen = 64
)

// Validate checks the config. A zero PollInterval takes its default; any
// other must lie between MinPollInterval and MaxPollInterval. The error
// wraps ErrInvalidConfig and names the field and its value.
func (cfg PoolConfig) Validate() error {
	switch p := cfg.PollInterval; {
	case p == 0:
	case p < 0:
		return fmt.Errorf("%w: PollInterval (%v) must not be negative", ErrInvalidConfig, p)
	case p < MinPollInterval:
		return fmt.Errorf("%w: PollInterval (%v) must be at least %v", ErrInvalidConfig, p, MinPollInterval)
	case p > MaxPollInterval:
		return fmt.Errorf("%w: PollInterval (%v) must be at most %v", ErrInvalidConfig, p, MaxPollInterval)
	}
	return cfg.validateSticky()
}

// runAssignment runs fn for one assignment of Run, in the assignment's
// goroutine, under the panic policy (term.go), and calls OnTermEnd once
// fn has returned for the last time. work ends with the assignment.
func runAssignment(r *termLoop[Assignment], work context.Context, a Assignment, fn AssignmentFunc) {
	finished := r.work(work, a, a.Valid, a.Pool, a.Epoch, a.Pool, func(ctx context.Context) error { return fn(ctx, a) })
	r.end(a, workEnd(work, finished))
}

// workEnd is the cause OnTermEnd gets for the work of an assignment or a
// partition under the context work: nil when the work finished, and
// otherwise the cause of work.
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

// Pool returns the pool with the given scope and name (checked by
// ValidateName). Pools are separate from elections of the same name. cfg
// is checked by PoolConfig.Validate.
func (c *Coordinator) Pool(scope Scope, name string, cfg PoolConfig) (*Pool, error) {
	key, err := leaseName(scope, c.id.Cluster, name)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pool %q: %w", key, err)
	}
	poll := cfg.PollInterval
	if poll == 0 {
		poll = max(c.cfg.RetryInterval, MinPollInterval)
	}
	return &Pool{
		deps: c.pools, scope: scope, name: name, key: key, rows: poolRowsFor(key),
		poll: poll, attrs: c.metrics.poolAttrs(key),
		partitions: cfg.Partitions, static: cfg.MemberID,
	}, nil
}

// Key returns the pool's key ("global/<name>" or "cluster/<c>/<name>"),
// the same string as the key of an election of that scope and name. The
// pool's rows are named after it but never equal it (see the type's doc).
func (p *Pool) Key() string { return p.key }

// Assignment is one member's share of one generation of a pool.
type Assignment struct {
	Pool       string   // the pool's key
	Index      int      // this member's index, 0 <= Index < Count
	Count      int      // number of members in this generation
	Generation int64    // the generation; it only grows
	Epoch      int64    // epoch of this member's membership lease
	Members    []string // member ids in index order (Member.ID)

	p      *Pool
	member *Lease
}

// Valid reports whether this process still trusts its membership. Like
// Lease.Valid it reads the clock itself; call it before each unit of work.
// It does not see a newer generation published a moment ago: Fence does.
func (a Assignment) Valid() bool { return a.member != nil && a.member.Valid() }

// Fence asserts, inside the caller's transaction tx, that this assignment
// is still current: the pool is at this generation and this process holds
// its membership at this epoch, unexpired by the database clock. It locks
// both rows until tx ends, so no new generation can be published while a
// fenced transaction is in flight. On failure it returns an error wrapping
// ErrFenced and the caller must roll back. Like Lease.Fence, it refuses a
// tx that is nil or not inside a transaction with an error wrapping
// ErrNotInTransaction.
func (a Assignment) Fence(tx *gorm.DB) error {
	if err := requireTransaction(tx, fmt.Sprintf("pool %q generation %d", a.Pool, a.Generation)); err != nil {
		return err
	}
	fail := func(reason string) error {
		return &FenceError{Name: a.Pool, Epoch: a.Epoch, Pool: true, Generation: a.Generation, Reason: reason}
	}
	if a.p == nil {
		return fail("zero Assignment")
	}
	if !a.Valid() {
		return fail("this process no longer trusts its membership")
	}
	row, ok, err := a.p.deps.store.FenceGeneration(tx, a.p.rows.Generation)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of pool %q: %w", a.Pool, err)
	}
	if !ok || row.Epoch != a.Generation {
		return fail(fmt.Sprintf("the pool is at generation %d", row.Epoch))
	}
	return a.member.fence(tx)
}

// AssignmentFunc is the work of one member for one generation. ctx ends
// when the generation is superseded, membership is lost, or the pool stops.
type AssignmentFunc func(ctx context.Context, a Assignment) error

// Member is one member row as the database sees it.
type Member struct {
	ID     string // member id: the instance id, with ".<n>" from the process's second join of the pool on
	Holder string // node/cluster/instance
	Ack    int64  // the newest generation it acknowledged
	Live   bool   // held and unexpired by the database clock
	// ExpiresAt is when the membership expires unless renewed, by the
	// database clock, in UTC; zero for a row never held.
	ExpiresAt time.Time
}

// PoolState is a pool as the database sees it.
type PoolState struct {
	Pool       string
	Generation int64
	List       []string // member ids of the current generation, in index order
	Members    []Member // every member row, live or not, by id
	DBNow      time.Time
	// HoldUntil is, after a failover of the database, when the pool may
	// publish and start work again, by the database clock; zero when
	// there is no hold-off (docs/design.md, "Failover of the database").
	HoldUntil time.Time
}

// State reads the pool.
func (p *Pool) State(ctx context.Context) (PoolState, error) {
	st, err := membership.Read(ctx, p.deps.store, p.key, p.rows)
	if err != nil {
		return PoolState{}, err
	}
	return poolStateFrom(p.key, st), nil
}

// Current returns the assignment this process is working on, if any.
func (p *Pool) Current() (Assignment, bool) {
	if r := p.deps.handles.run(p.key); r != nil {
		if a := r.current.Load(); a != nil {
			return *a, true
		}
	}
	return Assignment{}, false
}

// Run makes this process a member of the pool until ctx is cancelled, and
// calls fn with each assignment once its barrier has passed. fn runs in
// its own goroutine and should run until its ctx ends. If it returns an
// error or panics while the assignment is current, the error (a
// *PanicError for a panic) is logged and reported as an EventError, and fn
// is called again after RetryInterval, doubling with each consecutive
// failure up to 30s, as Election.Run does. If it returns nil, its index
// stays idle until the next generation. Run is the one membership loop of
// leasehold: the workers package's partitioned workers run on it too.
//
// On cancellation Run stops the work, waits for it (at most
// ShutdownTimeout), publishes a generation without this member so the
// others rebalance at once, and releases the membership. If the work does
// not return in time, the membership is not released and expires after
// TTL. Run returns nil then, ErrBusy if the pool already runs in this
// process, and ErrClosed if the coordinator stopped first.
//
// opts, at most one, changes the backoff, reports failures elsewhere, and
// calls back at the start and end of each assignment (see RunOptions); an
// invalid one makes Run return an error wrapping ErrInvalidConfig at once.
func (p *Pool) Run(ctx context.Context, fn AssignmentFunc, opts ...RunOptions[Assignment]) error {
	r, err := newTermLoop(p.deps.shared, "pool work", opts)
	if err != nil {
		return fmt.Errorf("coordination: run pool %q: %w", p.key, err)
	}
	if p.partitions > 0 {
		return fmt.Errorf("coordination: run pool %q: %w: the pool has Partitions (%d); run it with RunPartitions",
			p.key, ErrInvalidConfig, p.partitions)
	}
	run := &poolRun{p: p, fn: fn, run: r, wake: make(chan struct{}, 1)}
	switch err := r.enter(ctx, p.key, func() error { return p.deps.handles.enter(run) }); {
	case errors.Is(err, errStopped):
		return nil
	case err != nil:
		return err
	}
	defer p.deps.handles.leave(run)
	return p.drive(ctx, run)
}

// drive steps the membership of one Run or RunPartitions, which is the
// pool's running one in this process, until ctx is cancelled or the
// coordinator stops.
func (p *Pool) drive(ctx context.Context, r *poolRun) error {
	// The pool's rows live in the coordinator's tables: wait until it has
	// migrated them.
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
