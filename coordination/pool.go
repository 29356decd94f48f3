package coordination

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// A Pool splits work across every live process that runs it: each member
// gets an Assignment {Index, Count, Generation, Epoch}, where the indexes
// of one generation are distinct and cover 0..Count-1, and Count is the
// number of members in that generation.
//
// # Rows
//
// A pool is rows of the lease table. Each member holds a lease named
// "pool/<key>/member/<instance>", so membership is renewed by the same
// single statement as every other lease of the process and has the same
// trust deadline. The row "pool/<key>/generation" holds the current
// generation in its epoch and the member list of that generation in its
// data, in index order. Each member row's data is the member's
// acknowledgement: the newest generation for which it has stopped all work
// of older generations.
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
// A rebalance costs one barrier: after a graceful leave or a join about
// one PollInterval, after a crash TTL plus about one PollInterval. While a
// barrier is pending, members read four times as often.
type Pool struct {
	c            *Coordinator
	scope        Scope
	name         string
	key          string // "global/<name>" or "cluster/<cluster>/<name>"
	genRow       string
	memberPrefix string
	me           string // member id: the instance id
	poll         time.Duration

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

// PoolConfig tunes a pool. The zero value is valid.
type PoolConfig struct {
	// PollInterval is how often a member reads the pool; four times as
	// often while a rebalance is pending. It sets the rebalance bounds
	// (see RebalanceBound and CrashRebalanceBound). Must be between
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
		c: c, scope: scope, name: name, key: key,
		genRow:       "pool/" + key + "/generation",
		memberPrefix: "pool/" + key + "/member/",
		me:           c.id.Instance,
		poll:         poll,
	}, nil
}

// Name returns the pool's key ("global/<name>" or "cluster/<c>/<name>").
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
	row, ok, err := c.store.Fence(tx, a.p.genRow)
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
	rows, err := p.c.store.List(ctx, "pool/"+p.key+"/")
	if err != nil {
		return PoolState{}, fmt.Errorf("coordination: read pool %q: %w", p.key, err)
	}
	st := PoolState{Pool: p.key}
	for _, r := range rows {
		st.DBNow = microsTime(r.NowUS)
		switch {
		case r.Name == p.genRow:
			st.Generation = r.Epoch
			if r.Data != "" {
				st.List = strings.Split(r.Data, ",")
			}
		case strings.HasPrefix(r.Name, p.memberPrefix):
			ack, _ := strconv.ParseInt(r.Data, 10, 64)
			st.Members = append(st.Members, Member{
				ID: strings.TrimPrefix(r.Name, p.memberPrefix), Holder: r.Holder, Ack: ack, Live: r.Live(),
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
// its own goroutine and should run until its ctx ends; if it returns
// earlier its index stays idle until the next generation (the workers
// package restarts it instead). A panic in fn is recovered and logged.
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
		settled := m.step(ctx)
		wait := p.poll
		if !settled {
			wait = p.poll / 4
		}
		timer.Reset(jitterSmall(wait))
	}
}

// jitterSmall returns d plus a random 0-10% of d.
func jitterSmall(d time.Duration) time.Duration { return d + rand.N(d/10+1) }

// poolMember is the state of one Run: owned by its goroutine.
type poolMember struct {
	p    *Pool
	fn   AssignmentFunc
	log  *zap.Logger
	mem  *Lease // membership; nil until joined
	ack  int64
	work *poolWork
}

// lost returns a channel closed when the membership's term ends.
func (m *poolMember) lost() <-chan struct{} {
	if m.mem == nil {
		return nil
	}
	return m.mem.Done()
}

// step runs one round of the member protocol. It reports whether the
// member is settled (working in the current generation, or correctly idle).
func (m *poolMember) step(ctx context.Context) bool {
	p, c := m.p, m.p.c
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.RenewInterval)
	defer cancel()

	// Membership: (re)join after a loss, once the old work has returned.
	if m.mem != nil && !m.mem.Valid() {
		m.stopWork(errors.New("membership lost"))
		_ = m.mem.Release(ctx)
		m.mem = nil
	}
	if m.mem == nil {
		if err := c.store.EnsureRow(opCtx, p.genRow); err != nil {
			m.fail("create pool row", err)
			return false
		}
		l, err := c.acquireDirect(opCtx, p.memberPrefix+p.me)
		if err != nil {
			m.fail("join", err)
			return false
		}
		m.mem, m.ack = l, -1
		m.log.Info("joined pool", zap.Int64("epoch", l.Epoch()))
	}

	st, err := p.State(opCtx)
	if err != nil {
		m.fail("read", err)
		return false
	}

	// Revoke: stop work of older generations, then acknowledge.
	if m.work != nil && m.work.gen < st.Generation {
		m.stopWork(errSuperseded)
	}
	if m.ack < st.Generation {
		ok, err := c.store.SetData(opCtx, c.holder, store.Term{Name: m.mem.name, Epoch: m.mem.epoch}, strconv.FormatInt(st.Generation, 10))
		if err != nil {
			m.fail("acknowledge", err)
			return false
		}
		if !ok {
			return false // membership is over; the next step rejoins
		}
		m.ack = st.Generation
	}

	// Publish a new generation when the live members differ from the list.
	live := st.live()
	live[p.me] = Member{ID: p.me, Holder: c.holder, Ack: m.ack, Live: true}
	next := nextList(st.List, live)
	if !slices.Equal(next, st.List) {
		ok, err := c.store.Publish(opCtx, p.genRow, st.Generation, strings.Join(next, ","))
		if err != nil {
			m.fail("publish", err)
		} else if ok {
			m.log.Info("published generation", zap.Int64("generation", st.Generation+1), zap.Strings("members", next))
			m.pruneDead(opCtx)
		}
		return false // read again soon, as everyone else will
	}

	// Assign: start work once every live member acknowledged this generation.
	index := slices.Index(st.List, p.me)
	if m.work != nil || index < 0 {
		return true
	}
	for _, mb := range live {
		if mb.Ack < st.Generation {
			return false
		}
	}
	m.startWork(ctx, Assignment{
		Pool: p.key, Index: index, Count: len(st.List), Generation: st.Generation, Epoch: m.mem.epoch,
		Members: slices.Clone(st.List), p: p, member: m.mem,
	})
	return true
}

func (m *poolMember) fail(op string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	err = fmt.Errorf("pool %q: %s: %w", m.p.key, op, err)
	m.log.Warn("pool step failed; retrying", zap.Error(err))
	m.p.c.events.emit(Event{Kind: EventError, Lease: m.p.key, Err: err})
}

// startWork runs fn for one assignment in its own goroutine.
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
		defer func() {
			if r := recover(); r != nil {
				m.log.Error("pool work panicked", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			}
		}()
		if err := m.fn(wctx, a); err != nil && wctx.Err() == nil {
			m.log.Error("pool work returned an error; its index is idle until the next generation",
				zap.Int64("generation", a.Generation), zap.Int("index", a.Index), zap.Error(err))
		}
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

// leave ends membership on Run's return: stop the work (bounded), publish
// a generation without this member, release the membership.
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
	if st, err := p.State(opCtx); err == nil {
		if i := slices.Index(st.List, p.me); i >= 0 {
			next := slices.Delete(slices.Clone(st.List), i, i+1)
			if ok, err := c.store.Publish(opCtx, p.genRow, st.Generation, strings.Join(next, ",")); err == nil && ok {
				m.log.Info("left pool", zap.Int64("generation", st.Generation+1), zap.Strings("members", next))
			}
		}
	}
	_ = m.mem.Release(opCtx)
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
	n, err := c.store.PruneDead(ctx, m.p.memberPrefix, deadMemberGrace*c.cfg.TTL)
	if err != nil {
		m.fail("prune dead members", err)
		return
	}
	if n > 0 {
		m.log.Info("pruned dead member rows", zap.Int64("rows", n))
	}
}
