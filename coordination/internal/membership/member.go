package membership

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// errSuperseded is the cause of a work context ended by a new generation.
var errSuperseded = errors.New("leasehold: pool generation superseded")

// ErrMode is wrapped by the failure of a member whose pool is run in the
// other mode (index and count, or sticky partitions, or another number
// of partitions) by a live member.
var ErrMode = errors.New("leasehold: pool is run in another mode")

// maxReadsPerStep bounds the reads of one step: a member that loses the
// race to publish reads again at once, since the winner's generation is
// already there to acknowledge.
const maxReadsPerStep = 3

// Member is the state of one membership run: owned by the goroutine that
// calls its methods.
type Member struct {
	cfg  Config
	me   string // member id of the current membership (Joiner.NewID)
	mem  Lease  // membership; nil until joined
	ack  int64
	work *work
	// parts is the running work of a sticky pool's partitions, by
	// partition; each work's gen is the partition's Since.
	parts map[int]*work
	// expiry is the moment, on this process's clock, just after the first
	// other live member row seen by the last read expires unless it is
	// renewed; zero when there is none.
	expiry time.Time
	// gen is the generation of the last read; settledGen the one the
	// member was last settled in, and unsettledSince the start of the
	// first step since then that left it unsettled (see NoteSettled).
	gen, settledGen int64
	unsettledSince  time.Time
	// outage follows the failed steps: the wait after each, and their log.
	outage outage
}

// work is the member's running work for one generation.
type work struct {
	gen    int64
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// New returns a member that has not joined yet: its first Step joins.
func New(cfg Config) *Member {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Member{cfg: cfg, outage: newOutage(cfg)}
}

// Lost returns a channel closed when the membership's term ends; nil
// while there is none.
func (m *Member) Lost() <-chan struct{} {
	if m.mem == nil {
		return nil
	}
	return m.mem.Context().Done()
}

// Step runs one round of the member protocol. It reports whether the
// member is settled (working in the current generation, or correctly idle).
// A step whose statement fails is not settled either, and the next waits
// for its backoff (NextRead, Failing). A step that sent statements, all
// of which succeeded, ends an outage; one that sent none (while the
// health checks hold off a join), or whose ctx ended, neither fails nor
// succeeds.
func (m *Member) Step(ctx context.Context) bool {
	defer func() { m.outage.stepEnded(m.cfg.Now(), m.mem != nil && ctx.Err() == nil) }()
	opCtx, cancel := context.WithTimeout(ctx, m.cfg.StepTimeout)
	defer cancel()
	m.expiry = time.Time{}

	// Membership: (re)join after a loss, once the old work has returned.
	if m.mem != nil && !m.mem.Valid() {
		m.stopWork(errors.New("membership lost"))
		m.stopParts(nil, errors.New("membership lost"))
		_ = m.mem.Release(ctx)
		m.mem = nil
	}
	if m.mem == nil {
		if !m.cfg.Joiner.MayJoin() {
			return false // rejoin once a health check passes
		}
		if err := m.cfg.Store.EnsureRows(opCtx, []string{m.cfg.Rows.Generation}); err != nil {
			m.fail("create pool row", err)
			return false
		}
		if !m.mayJoinMode(opCtx) {
			return false
		}
		me := m.cfg.Joiner.NewID()
		l, err := m.cfg.Joiner.Join(opCtx, m.cfg.Rows.Member(me))
		if err != nil {
			m.fail("join", err)
			return false
		}
		m.me, m.mem, m.ack = me, l, -1
		// No wake-up: the rounds below publish the generation that lists
		// this member, and that publish wakes the others. Woken by the
		// join itself, they would all race to publish it.
		m.cfg.Log.Info("joined pool", zap.Int64("epoch", l.Epoch()))
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
func (m *Member) round(ctx, opCtx context.Context) (settled, again bool) {
	if m.cfg.Partitions > 0 {
		return m.stickyRound(ctx, opCtx)
	}
	st, err := Read(opCtx, m.cfg.Store, m.cfg.Pool, m.cfg.Rows)
	if err != nil {
		m.fail("read", err)
		return false, false
	}
	if id, ok := st.liveListed(m.me); ok && st.Map != nil {
		m.fail("read", fmt.Errorf("%w: the pool has %d partitions and its member %s is live; this member runs it by index and count",
			ErrMode, len(st.Map.Owner), id))
		return false, false
	}
	m.noteExpiry(st, m.cfg.Now())
	m.gen = st.Generation
	m.cfg.Reporter.Read(st.Generation, len(st.List))

	// Publish a new generation when the live members differ from the
	// list, or when the generation is below the floor of a failover (the
	// next one goes above it, so no generation is numbered twice). After
	// a failover of the database, the generations the old primary
	// published last may be lost while members still work in them: no
	// publish and no new work until the hold-off has passed, by when every
	// membership the old primary granted has passed its trust deadline.
	live := st.live()
	live[m.me] = Row{ID: m.me, Holder: m.cfg.Holder, Live: true} // acknowledged below
	next := nextList(st.List, live)
	publish := !slices.Equal(next, st.List) || st.Generation < st.Floor
	stays := !publish && !st.heldOff()

	// Revoke: stop work of older generations, then acknowledge. A new
	// acknowledgement of a generation that stays wakes the member that
	// gathers them, with the same statement where the store can.
	wasAcked := m.ack >= st.Generation
	wake := ""
	if stays && !wasAcked {
		wake = m.collectorWake(st.List)
	}
	if !m.acknowledge(opCtx, st.Generation, wake) {
		return false, false
	}
	if st.heldOff() {
		return false, false
	}
	if publish {
		published := max(st.Generation, st.Floor) + 1
		ok, err := m.cfg.Store.Publish(opCtx, m.cfg.Rows.Generation, st.Generation, strings.Join(next, ","))
		switch {
		case err != nil:
			m.fail("publish", err)
			return false, false
		case !ok:
			return false, true // another member published first
		}
		m.cfg.Log.Info("published generation", zap.Int64("generation", published), zap.Strings("members", next))
		// The publisher acknowledges its generation at once rather than on
		// its next read: the others need not wait a read longer for it.
		// Then it wakes every member, to the new generation.
		m.acknowledge(opCtx, published, "")
		m.cfg.Notifier.Notify(opCtx, m.mem.Key())
		m.pruneDead(opCtx)
		return false, false // read again soon, as everyone else will
	}

	// Assign: start work once every live member acknowledged this generation.
	index := slices.Index(st.List, m.me)
	if m.work != nil || index < 0 {
		return true, false
	}
	for id, mb := range live {
		if id != m.me && mb.Ack < st.Generation { // this member's is in: acknowledge returned true
			return false, false
		}
	}
	if collector(st.List) == m.me && len(live) > 1 {
		// Every acknowledgement is in, and the others' woke only this
		// member: wake them all to start.
		m.cfg.Notifier.Notify(opCtx, m.mem.Key())
	}
	m.startWork(ctx, Assignment{
		Index: index, Count: len(st.List), Generation: st.Generation,
		Members: slices.Clone(st.List), Lease: m.mem,
	})
	return true, false
}

// acknowledge stops work of generations older than gen and records in the
// member row that this member has, unless it already did. A new
// acknowledgement wakes the name wake, unless it is "" (round decides
// whom: collectorWake). It reports whether the member row now
// acknowledges gen.
func (m *Member) acknowledge(ctx context.Context, gen int64, wake string) bool {
	if m.work != nil && m.work.gen < gen {
		m.stopWork(errSuperseded)
	}
	return m.recordAck(ctx, gen, wake, nil)
}

// collector returns the member that gathers the acknowledgements of the
// generation whose member list is list: the first of the list, "" for an
// empty list. Every member of a generation waits for every live member's
// acknowledgement before it starts, so an acknowledgement does not wake
// them all: it wakes the collector alone (Rows.Wake), which reads the pool
// on each, and wakes every member once it sees them all (round). Twenty
// members acknowledging a generation then make one member read the pool
// up to twenty times, rather than twenty members up to twenty times each.
// A lost wake-up, or a collector that is gone, leaves the others to find
// the acknowledgements at their next read, a quarter poll later.
func collector(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}

// collectorWake returns the wake-up that an acknowledgement of the
// generation of the member list list sends: the one of the member
// gathering its acknowledgements (Rows.Wake). It is "", waking nobody,
// when that is this member, which the others' wake, and for a list
// without members, in whose generation nobody works.
func (m *Member) collectorWake(list []string) string {
	if c := collector(list); c != "" && c != m.me {
		return m.cfg.Rows.Wake(c)
	}
	return ""
}

// recordAck records in the member row that this member acknowledges gen,
// unless it already did, with the wake-up wakeName unless it is "" (one
// statement where the store can: Store.SetData), and then calls wake
// unless it is nil. It reports whether the member row now acknowledges
// gen.
func (m *Member) recordAck(ctx context.Context, gen int64, wakeName string, wake func()) bool {
	if m.ack >= gen {
		return true
	}
	ok, err := m.cfg.Store.SetData(ctx, m.mem.Session(), store.Term{Name: m.mem.Key(), Epoch: m.mem.Epoch()}, strconv.FormatInt(gen, 10), wakeName)
	if err != nil {
		m.fail("acknowledge", err)
		return false
	}
	if !ok {
		return false // membership is over; the next step rejoins
	}
	m.ack = gen
	if wake != nil {
		wake()
	}
	return true
}

// fail records a failed statement of the step under way, unless the
// step's context was cancelled: the run is ending. The log warns once per
// outage (outage.failed); every failure is reported, for the programs
// that follow the events.
func (m *Member) fail(op string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	err = fmt.Errorf("pool %q: %s: %w", m.cfg.Pool, op, err)
	m.outage.failed(err)
	m.cfg.Reporter.Failed(err)
}

// startWork runs the work of one assignment in its own goroutine, under a
// context that ends with the membership's term, with ctx, or when the
// member stops it.
func (m *Member) startWork(ctx context.Context, a Assignment) {
	wctx, cancel := context.WithCancelCause(a.Lease.Context())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	w := &work{gen: a.Generation, cancel: cancel, done: make(chan struct{})}
	m.work = w
	run := m.cfg.Worker.Start(a)
	m.cfg.Log.Info("assignment", zap.Int64("generation", a.Generation), zap.Int("index", a.Index), zap.Int("count", a.Count))
	go func() {
		defer close(w.done)
		defer stop()
		run(wctx)
	}()
}

// stopWork cancels the running work and waits for it to return. It keeps
// waiting however long that takes: acknowledging a new generation while
// old work still runs would let two members own one index. It logs loudly
// every ShutdownTimeout.
func (m *Member) stopWork(cause error) {
	w := m.work
	if w == nil {
		return
	}
	w.cancel(cause)
	m.waitWork(w, 0)
	m.work = nil
	m.cfg.Worker.Stopped()
}

// waitWork waits for w to return; with limit > 0 it gives up after limit
// and reports false.
func (m *Member) waitWork(w *work, limit time.Duration) bool {
	every := m.cfg.ShutdownTimeout
	t := time.NewTimer(every)
	defer t.Stop()
	var waited time.Duration
	for {
		select {
		case <-w.done:
			return true
		case <-t.C:
			waited += every
			m.cfg.Log.Error("pool work has not returned after cancellation; the pool cannot rebalance until it does",
				zap.Int64("generation", w.gen), zap.Duration("waited", waited))
			if limit > 0 && waited >= limit {
				return false
			}
			t.Reset(every)
		}
	}
}

// Leave ends the membership when its run ends: stop the work with cause
// (bounded by ShutdownTimeout), release the membership, publish a
// generation without this member, and wake the others to it. Releasing
// first means no member can read this one as live and not listed, and
// publish it back into the list. The release itself wakes nobody (the
// coordinator's store releases member rows quietly): woken by it, every
// member would race this one to publish the same generation. Work that
// does not return in time is reported as a failure wrapping cause, and
// the membership is not released: it expires.
func (m *Member) Leave(ctx context.Context, cause error) {
	if !m.leaveParts(cause) {
		return
	}
	if w := m.work; w != nil {
		w.cancel(cause)
		if !m.waitWork(w, m.cfg.ShutdownTimeout) {
			m.cfg.Log.Error("pool work did not return within ShutdownTimeout; membership is not released and expires after TTL",
				zap.Duration("shutdown_timeout", m.cfg.ShutdownTimeout))
			m.cfg.Reporter.Failed(fmt.Errorf("%w: pool %q work did not return within ShutdownTimeout", cause, m.cfg.Pool))
			return
		}
		m.work = nil
	}
	if m.mem == nil {
		return
	}
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.ShutdownTimeout)
	defer cancel()
	_ = m.mem.Release(opCtx)
	// Whether this member published the next generation, another did, or
	// the read or the publish failed, the others read the pool now.
	defer m.cfg.Notifier.Notify(opCtx, m.mem.Key())
	if m.cfg.Partitions > 0 {
		m.leaveMap(opCtx)
		return
	}
	if st, err := Read(opCtx, m.cfg.Store, m.cfg.Pool, m.cfg.Rows); err == nil {
		if i := slices.Index(st.List, m.me); i >= 0 {
			next := slices.Delete(slices.Clone(st.List), i, i+1)
			if ok, err := m.cfg.Store.Publish(opCtx, m.cfg.Rows.Generation, st.Generation, strings.Join(next, ",")); err == nil && ok {
				m.cfg.Log.Info("left pool", zap.Int64("generation", max(st.Generation, st.Floor)+1), zap.Strings("members", next))
			}
		}
	}
}

// pruneDead deletes member rows of processes that left or died, so the
// pool's reads stay small however often processes restart. It runs after
// a publish, that is, only when membership changed.
func (m *Member) pruneDead(ctx context.Context) {
	n, err := m.cfg.Store.PruneDead(ctx, m.cfg.Rows.Members, m.cfg.PruneAfter)
	if err != nil {
		m.fail("prune dead members", err)
		return
	}
	if n > 0 {
		m.cfg.Log.Info("pruned dead member rows", zap.Int64("rows", n))
	}
}

// NoteSettled follows the member's steps for the rebalance time: a
// period out of work starts with the first step that leaves the member
// unsettled, and is reported (Reporter.Rebalanced) when a step settles it
// in another generation than the one it was last settled in. A member
// that settles again in the same generation (after a failed read, say)
// reports nothing. began is when the step began.
func (m *Member) NoteSettled(began time.Time, settled bool) {
	if !settled {
		if m.unsettledSince.IsZero() {
			m.unsettledSince = began
		}
		return
	}
	if m.gen != m.settledGen {
		m.cfg.Reporter.Rebalanced(m.cfg.Now().Sub(cmp.Or(m.unsettledSince, began)))
		m.settledGen = m.gen
	}
	m.unsettledSince = time.Time{}
}
