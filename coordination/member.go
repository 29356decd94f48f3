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

	"github.com/leasehold/leasehold/internal/store"
)

// The member protocol of a pool: one poolMember per Pool.Run, which joins,
// reads the pool, revokes, acknowledges, publishes and assigns, as the
// Pool type's documentation describes.

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
	run  *termLoop[Assignment] // Run's term loop: options and backoff
	log  *zap.Logger
	me   string // member id of the current membership (memberID)
	mem  *Lease // membership; nil until joined
	ack  int64
	work *poolWork
	// expiry is the moment, on this process's clock, just after the first
	// other live member row seen by the last read expires unless it is
	// renewed; zero when there is none.
	expiry time.Time
	// gen is the generation of the last read; settledGen the one the
	// member was last settled in, and unsettledSince the start of the
	// first step since then that left it unsettled (see noteSettled).
	gen, settledGen int64
	unsettledSince  time.Time
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
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.poolStepTimeout())
	defer cancel()
	m.expiry = time.Time{}

	// Membership: (re)join after a loss, once the old work has returned.
	if m.mem != nil && !m.mem.Valid() {
		m.stopWork(errors.New("membership lost"))
		_ = m.mem.Release(ctx)
		m.mem = nil
	}
	if m.mem == nil {
		if c.health.unhealthyNow() {
			return false // rejoin once a health check passes (stepdown.go)
		}
		if err := c.store.EnsureRows(opCtx, []string{p.rows.generation}); err != nil {
			m.fail("create pool row", err)
			return false
		}
		me := c.pools.memberID(p.key)
		l, err := c.campaigner.acquireDirect(opCtx, p.rows.member(me))
		if err != nil {
			m.fail("join", err)
			return false
		}
		m.me, m.mem, m.ack = me, l, -1
		m.log.Info("joined pool", zap.Int64("epoch", l.Epoch()))
		c.notify(opCtx, l.name)
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
	m.gen = st.Generation
	c.pools.noteRead(p, st.Generation, len(st.List))

	// Revoke: stop work of older generations, then acknowledge.
	if !m.acknowledge(opCtx, st.Generation) {
		return false, false
	}

	// After a failover of the database, the generations the old primary
	// published last may be lost while members still work in them: no
	// publish and no new work until the hold-off has passed, by when every
	// membership the old primary granted has passed its trust deadline.
	if st.heldOff() {
		return false, false
	}

	// Publish a new generation when the live members differ from the
	// list, or when the generation is below the floor of a failover (the
	// next one goes above it, so no generation is numbered twice).
	live := st.live()
	live[m.me] = Member{ID: m.me, Holder: c.holder, Ack: m.ack, Live: true}
	next := nextList(st.List, live)
	if !slices.Equal(next, st.List) || st.Generation < st.floor {
		published := max(st.Generation, st.floor) + 1
		ok, err := c.store.Publish(opCtx, p.rows.generation, st.Generation, strings.Join(next, ","))
		switch {
		case err != nil:
			m.fail("publish", err)
			return false, false
		case !ok:
			return false, true // another member published first
		}
		m.log.Info("published generation", zap.Int64("generation", published), zap.Strings("members", next))
		// The publisher acknowledges its generation at once rather than on
		// its next read: the others need not wait a read longer for it.
		m.acknowledge(opCtx, published)
		m.pruneDead(opCtx)
		return false, false // read again soon, as everyone else will
	}

	// Assign: start work once every live member acknowledged this generation.
	index := slices.Index(st.List, m.me)
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
	// Wakes the other members: to the new generation, when this member
	// just published it; to starting their work, when this was the last
	// acknowledgement missing.
	c.notify(ctx, m.mem.name)
	return true
}

// noteExpiry records when the first other live member row of st expires
// unless renewed, converted to this process's clock. readEnd is taken
// after the read returned, so the database clock was read before it and
// the converted moment is never early.
func (m *poolMember) noteExpiry(st PoolState, readEnd time.Time) {
	for _, mb := range st.Members {
		if !mb.Live || mb.ID == m.me || mb.ExpiresAt.IsZero() {
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
	m.p.c.events.emit(Event{Kind: EventError, Lease: m.p.key, Pool: m.p.key, Err: err})
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
	c.pools.setCurrent(m.p, &a)
	m.log.Info("assignment", zap.Int64("generation", a.Generation), zap.Int("index", a.Index), zap.Int("count", a.Count))
	go func() {
		defer close(w.done)
		defer stop()
		runAssignment(m.run, wctx, a, m.fn)
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
	m.p.c.pools.setCurrent(m.p, nil)
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
			c.events.emit(Event{Kind: EventError, Lease: p.key, Pool: p.key, Err: fmt.Errorf("%w: pool %q work did not return within ShutdownTimeout", ErrClosed, p.key)})
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
		if i := slices.Index(st.List, m.me); i >= 0 {
			next := slices.Delete(slices.Clone(st.List), i, i+1)
			if ok, err := c.store.Publish(opCtx, p.rows.generation, st.Generation, strings.Join(next, ",")); err == nil && ok {
				m.log.Info("left pool", zap.Int64("generation", max(st.Generation, st.floor)+1), zap.Strings("members", next))
			}
		}
	}
}

// pruneDead deletes member rows of processes that left or died, so the
// pool's reads stay small however often processes restart. It runs after
// a publish, that is, only when membership changed.
func (m *poolMember) pruneDead(ctx context.Context) {
	c := m.p.c
	n, err := c.store.PruneDead(ctx, m.p.rows.members, c.cfg.deadMemberPrune())
	if err != nil {
		m.fail("prune dead members", err)
		return
	}
	if n > 0 {
		m.log.Info("pruned dead member rows", zap.Int64("rows", n))
	}
}
