package coordination

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/term"
)

// A Pool splits work across every live process that runs it: each member
// gets an Assignment {Index, Count, Generation, Epoch}, where the indexes
// of one generation are distinct and cover 0..Count-1, and Count is the
// number of members in that generation.
//
// # Rows
//
// A pool is rows of the lease table, where <key> is the pool's Name. Each
// member holds a lease named "pool|<key>|member|<instance>", so membership
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
	c     *Coordinator
	scope Scope
	name  string
	key   string   // "global/<name>" or "cluster/<cluster>/<name>"
	rows  poolRows // the names of its rows
	me    string   // member id: the instance id
	poll  time.Duration

	// Guarded by c.mu.
	busy    bool
	current *Assignment
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
	return ttl + poll/4 + expiryMargin
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
}

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
	return nil
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
		c: c, scope: scope, name: name, key: key, rows: poolRowsFor(key),
		me:   c.id.Instance,
		poll: poll,
	}, nil
}

// Name returns the pool's key ("global/<name>" or "cluster/<c>/<name>"),
// the same string as the key of an election of that scope and name. The
// pool's rows are named after it but never equal it (see the type's doc).
func (p *Pool) Name() string { return p.key }

// Assignment is one member's share of one generation of a pool.
type Assignment struct {
	Pool       string   // the pool's key
	Index      int      // this member's index, 0 <= Index < Count
	Count      int      // number of members in this generation
	Generation int64    // the generation; it only grows
	Epoch      int64    // epoch of this member's membership lease
	Members    []string // member ids (instance ids) in index order

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
	c := a.p.c
	row, ok, err := c.store.Fence(tx, a.p.rows.generation)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of pool %q: %w", a.Pool, err)
	}
	if !ok || row.Epoch != a.Generation {
		return fail(fmt.Sprintf("the pool is at generation %d", row.Epoch))
	}
	return c.CheckFence(tx, a.member.Token())
}

// AssignmentFunc is the work of one member for one generation. ctx ends
// when the generation is superseded, membership is lost, or the pool stops.
type AssignmentFunc func(ctx context.Context, a Assignment) error

// Member is one member row as the database sees it.
type Member struct {
	ID     string // instance id
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
}

// live returns the live member ids.
func (s PoolState) live() map[string]Member {
	out := make(map[string]Member)
	for _, m := range s.Members {
		if m.Live {
			out[m.ID] = m
		}
	}
	return out
}

// State reads the pool.
func (p *Pool) State(ctx context.Context) (PoolState, error) {
	rows, err := p.c.store.List(ctx, p.rows.prefix)
	if err != nil {
		return PoolState{}, fmt.Errorf("coordination: read pool %q: %w", p.key, err)
	}
	st := PoolState{Pool: p.key}
	for _, r := range rows {
		st.DBNow = r.Now
		if r.Name == p.rows.generation {
			st.Generation = r.Epoch
			if r.Data != "" {
				st.List = strings.Split(r.Data, ",")
			}
		} else if id, ok := p.rows.memberID(r.Name); ok {
			ack, _ := strconv.ParseInt(r.Data, 10, 64)
			st.Members = append(st.Members, Member{
				ID: id, Holder: r.Holder, Ack: ack, Live: r.Live(), ExpiresAt: r.ExpiresAt,
			})
		}
	}
	return st, nil
}

// Current returns the assignment this process is working on, if any.
func (p *Pool) Current() (Assignment, bool) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.current == nil {
		return Assignment{}, false
	}
	return *p.current, true
}

// nextList is the member list for a new generation: members of the
// current list that are still live, in their order, then live members not
// in it, by id.
func nextList(list []string, live map[string]Member) []string {
	out := make([]string, 0, len(live))
	in := make(map[string]bool, len(list))
	for _, id := range list {
		in[id] = true
		if _, ok := live[id]; ok {
			out = append(out, id)
		}
	}
	var joiners []string
	for id := range live {
		if !in[id] {
			joiners = append(joiners, id)
		}
	}
	sort.Strings(joiners)
	return append(out, joiners...)
}

// poolWork is the member's running work for one generation.
type poolWork struct {
	gen    int64
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// errSuperseded is the cause of a work context ended by a new generation.
var errSuperseded = errors.New("coordination: pool generation superseded")

// Run makes this process a member of the pool until ctx is cancelled, and
// calls fn with each assignment once its barrier has passed. fn runs in
// its own goroutine and should run until its ctx ends. If it returns an
// error or panics while the assignment is current, the error (a
// *PanicError for a panic) is logged and reported as an EventError, and fn
// is called again after RetryInterval, doubling with each consecutive
// failure up to 30s, as Election.Run does. If it returns nil, its index
// stays idle until the next generation.
//
// On cancellation Run stops the work, waits for it (at most
// ShutdownTimeout), publishes a generation without this member so the
// others rebalance at once, and releases the membership. If the work does
// not return in time, the membership is not released and expires after
// TTL. Run returns nil then, ErrBusy if the pool already runs in this
// process, and ErrClosed if the coordinator stopped first.
func (p *Pool) Run(ctx context.Context, fn AssignmentFunc) error {
	c := p.c
	c.mu.Lock()
	if p.busy {
		c.mu.Unlock()
		return fmt.Errorf("%w: pool %q", ErrBusy, p.key)
	}
	p.busy = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		p.busy, p.current = false, nil
		c.mu.Unlock()
	}()

	// The pool's rows live in the coordinator's tables: wait until it has
	// migrated them.
	select {
	case <-c.ready:
	case <-c.closing:
		return ErrClosed
	case <-ctx.Done():
		return nil
	}
	log := c.log.With(zap.String("pool", p.key))
	m := &poolMember{p: p, fn: fn, log: log}
	defer m.leave(ctx)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.closing:
			return ErrClosed
		case <-m.lost():
		case <-timer.C:
		}
		began := time.Now()
		settled := m.step(ctx)
		timer.Reset(time.Until(p.nextRead(began, settled, m.expiry)))
	}
}

// nextRead returns when the read after the one whose step began at began
// starts: one PollInterval later when settled, a quarter of it while a
// rebalance is pending, each shortened by a random 0-10% so that members
// do not act in step yet never wait longer than the interval. When
// another member's row would expire before then (expiry, if not zero),
// the read comes at that expiry instead, so a crashed member is noticed
// at once rather than up to a poll later.
func (p *Pool) nextRead(began time.Time, settled bool, expiry time.Time) time.Time {
	wait := p.poll
	if !settled {
		wait = p.poll / 4
	}
	next := began.Add(jitterBelow(wait))
	if !expiry.IsZero() && expiry.Before(next) {
		next = expiry
	}
	return next
}

// jitterBelow returns d less a random 0-10% of d: within [0.9d, d].
func jitterBelow(d time.Duration) time.Duration { return d - rand.N(d/10+1) }

// expiryMargin is added to a member row's expiry, converted from the
// database clock to this process's clock, before the read that is to see
// it expired. It covers SQLite's clock, which has millisecond resolution.
const expiryMargin = 2 * time.Millisecond

// poolMember is the state of one Run: owned by its goroutine.
type poolMember struct {
	p    *Pool
	fn   AssignmentFunc
	log  *zap.Logger
	mem  *Lease // membership; nil until joined
	ack  int64
	work *poolWork
	// expiry is the moment, on this process's clock, just after the first
	// other live member row seen by the last read expires unless it is
	// renewed; zero when there is none.
	expiry time.Time
}

// lost returns a channel closed when the membership's term ends.
func (m *poolMember) lost() <-chan struct{} {
	if m.mem == nil {
		return nil
	}
	return m.mem.Done()
}

// maxReadsPerStep bounds the reads of one step: a member that loses the
// race to publish reads again at once, since the winner's generation is
// already there to acknowledge.
const maxReadsPerStep = 3

// step runs one round of the member protocol. It reports whether the
// member is settled (working in the current generation, or correctly idle).
func (m *poolMember) step(ctx context.Context) bool {
	p, c := m.p, m.p.c
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.RenewInterval)
	defer cancel()
	m.expiry = time.Time{}

	// Membership: (re)join after a loss, once the old work has returned.
	if m.mem != nil && !m.mem.Valid() {
		m.stopWork(errors.New("membership lost"))
		_ = m.mem.Release(ctx)
		m.mem = nil
	}
	if m.mem == nil {
		if err := c.store.EnsureRows(opCtx, []string{p.rows.generation}); err != nil {
			m.fail("create pool row", err)
			return false
		}
		l, err := c.acquireDirect(opCtx, p.rows.member(p.me))
		if err != nil {
			m.fail("join", err)
			return false
		}
		m.mem, m.ack = l, -1
		m.log.Info("joined pool", zap.Int64("epoch", l.Epoch()))
	}
	for range maxReadsPerStep - 1 {
		if settled, again := m.round(ctx, opCtx); !again {
			return settled
		}
	}
	settled, _ := m.round(ctx, opCtx)
	return settled
}

// round reads the pool and acts on it once: revoke, publish, assign. It
// reports whether the member is settled, and whether it lost a race to
// publish and should read again at once.
func (m *poolMember) round(ctx, opCtx context.Context) (settled, again bool) {
	p, c := m.p, m.p.c
	st, err := p.State(opCtx)
	if err != nil {
		m.fail("read", err)
		return false, false
	}
	m.noteExpiry(st, time.Now())

	// Revoke: stop work of older generations, then acknowledge.
	if !m.acknowledge(opCtx, st.Generation) {
		return false, false
	}

	// Publish a new generation when the live members differ from the list.
	live := st.live()
	live[p.me] = Member{ID: p.me, Holder: c.holder, Ack: m.ack, Live: true}
	next := nextList(st.List, live)
	if !slices.Equal(next, st.List) {
		ok, err := c.store.Publish(opCtx, p.rows.generation, st.Generation, strings.Join(next, ","))
		switch {
		case err != nil:
			m.fail("publish", err)
			return false, false
		case !ok:
			return false, true // another member published first
		}
		m.log.Info("published generation", zap.Int64("generation", st.Generation+1), zap.Strings("members", next))
		// The publisher acknowledges its generation at once rather than on
		// its next read: the others need not wait a read longer for it.
		m.acknowledge(opCtx, st.Generation+1)
		m.pruneDead(opCtx)
		return false, false // read again soon, as everyone else will
	}

	// Assign: start work once every live member acknowledged this generation.
	index := slices.Index(st.List, p.me)
	if m.work != nil || index < 0 {
		return true, false
	}
	for _, mb := range live {
		if mb.Ack < st.Generation {
			return false, false
		}
	}
	m.startWork(ctx, Assignment{
		Pool: p.key, Index: index, Count: len(st.List), Generation: st.Generation, Epoch: m.mem.epoch,
		Members: slices.Clone(st.List), p: p, member: m.mem,
	})
	return true, false
}

// acknowledge stops work of generations older than gen and records in the
// member row that this member has, unless it already did. It reports
// whether the member row now acknowledges gen.
func (m *poolMember) acknowledge(ctx context.Context, gen int64) bool {
	c := m.p.c
	if m.work != nil && m.work.gen < gen {
		m.stopWork(errSuperseded)
	}
	if m.ack >= gen {
		return true
	}
	ok, err := c.store.SetData(ctx, m.mem.sess.id, store.Term{Name: m.mem.name, Epoch: m.mem.epoch}, strconv.FormatInt(gen, 10))
	if err != nil {
		m.fail("acknowledge", err)
		return false
	}
	if !ok {
		return false // membership is over; the next step rejoins
	}
	m.ack = gen
	return true
}

// noteExpiry records when the first other live member row of st expires
// unless renewed, converted to this process's clock. readEnd is taken
// after the read returned, so the database clock was read before it and
// the converted moment is never early.
func (m *poolMember) noteExpiry(st PoolState, readEnd time.Time) {
	for _, mb := range st.Members {
		if !mb.Live || mb.ID == m.p.me || mb.ExpiresAt.IsZero() {
			continue
		}
		at := readEnd.Add(mb.ExpiresAt.Sub(st.DBNow) + expiryMargin)
		if m.expiry.IsZero() || at.Before(m.expiry) {
			m.expiry = at
		}
	}
}

func (m *poolMember) fail(op string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	err = fmt.Errorf("pool %q: %s: %w", m.p.key, op, err)
	m.log.Warn("pool step failed; retrying", zap.Error(err))
	m.p.c.events.emit(Event{Kind: EventError, Lease: m.p.key, Err: err})
}

// startWork runs fn for one assignment in its own goroutine, under the
// policy Election.Run follows too: fn is called again after an error or a
// panic while the assignment is current, and a nil return leaves the
// index idle until the next generation.
func (m *poolMember) startWork(ctx context.Context, a Assignment) {
	c := m.p.c
	wctx, cancel := context.WithCancelCause(a.member.Context())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	w := &poolWork{gen: a.Generation, cancel: cancel, done: make(chan struct{})}
	m.work = w
	c.mu.Lock()
	m.p.current = &a
	c.mu.Unlock()
	m.log.Info("assignment", zap.Int64("generation", a.Generation), zap.Int("index", a.Index), zap.Int("count", a.Count))
	go func() {
		defer close(w.done)
		defer stop()
		term.Run(wctx, a.Valid, func(ctx context.Context) error { return m.fn(ctx, a) },
			c.workPolicy("pool work", a.Pool, a.Epoch))
	}()
}

// stopWork cancels the running work and waits for it to return. It keeps
// waiting however long that takes: acknowledging a new generation while
// old work still runs would let two members own one index. It logs loudly
// every ShutdownTimeout.
func (m *poolMember) stopWork(cause error) {
	w := m.work
	if w == nil {
		return
	}
	w.cancel(cause)
	m.waitWork(w, 0)
	m.work = nil
	c := m.p.c
	c.mu.Lock()
	m.p.current = nil
	c.mu.Unlock()
}

// waitWork waits for w to return; with limit > 0 it gives up after limit
// and reports false.
func (m *poolMember) waitWork(w *poolWork, limit time.Duration) bool {
	every := m.p.c.cfg.ShutdownTimeout
	t := time.NewTimer(every)
	defer t.Stop()
	var waited time.Duration
	for {
		select {
		case <-w.done:
			return true
		case <-t.C:
			waited += every
			m.log.Error("pool work has not returned after cancellation; the pool cannot rebalance until it does",
				zap.Int64("generation", w.gen), zap.Duration("waited", waited))
			if limit > 0 && waited >= limit {
				return false
			}
			t.Reset(every)
		}
	}
}

// leave ends membership on Run's return: stop the work (bounded), release
// the membership, publish a generation without this member. Releasing
// first means no member can read this one as live and not listed, and
// publish it back into the list.
func (m *poolMember) leave(ctx context.Context) {
	c, p := m.p.c, m.p
	if w := m.work; w != nil {
		w.cancel(ErrClosed)
		if !m.waitWork(w, c.cfg.ShutdownTimeout) {
			m.log.Error("pool work did not return within ShutdownTimeout; membership is not released and expires after TTL",
				zap.Duration("shutdown_timeout", c.cfg.ShutdownTimeout))
			c.events.emit(Event{Kind: EventError, Lease: p.key, Err: fmt.Errorf("%w: pool %q work did not return within ShutdownTimeout", ErrClosed, p.key)})
			return
		}
		m.work = nil
	}
	if m.mem == nil {
		return
	}
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ShutdownTimeout)
	defer cancel()
	_ = m.mem.Release(opCtx)
	if st, err := p.State(opCtx); err == nil {
		if i := slices.Index(st.List, p.me); i >= 0 {
			next := slices.Delete(slices.Clone(st.List), i, i+1)
			if ok, err := c.store.Publish(opCtx, p.rows.generation, st.Generation, strings.Join(next, ",")); err == nil && ok {
				m.log.Info("left pool", zap.Int64("generation", st.Generation+1), zap.Strings("members", next))
			}
		}
	}
}

// deadMemberGrace is how long, in TTLs, an expired member row is kept
// before it is pruned; released rows go at once. A row is only a record of
// a process start that has ended: its instance id never returns.
const deadMemberGrace = 10

// pruneDead deletes member rows of processes that left or died, so the
// pool's reads stay small however often processes restart. It runs after
// a publish, that is, only when membership changed.
func (m *poolMember) pruneDead(ctx context.Context) {
	c := m.p.c
	n, err := c.store.PruneDead(ctx, m.p.rows.members, deadMemberGrace*c.cfg.TTL)
	if err != nil {
		m.fail("prune dead members", err)
		return
	}
	if n > 0 {
		m.log.Info("pruned dead member rows", zap.Int64("rows", n))
	}
}
