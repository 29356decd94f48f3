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
// race to publish reads the winner's generation again at once.
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
	// expiry is when, on this process's clock, the first other live member
	// row of the last read expires unless renewed; zero for none.
	expiry time.Time
	// gen is the generation of the last read; settledGen and
	// unsettledSince follow the rebalance time (NoteSettled).
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
// member is settled: working in the current generation, or correctly
// idle. A step whose statement fails is not settled, and the next waits
// for its backoff (NextRead, Failing).
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
		// No wake-up: the publish of the generation that lists this
		// member wakes the others.
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
	// list, or when the generation is below a failover's floor. After a
	// failover, no publish and no new work until the hold-off has passed.
	live := st.live()
	live[m.me] = Row{ID: m.me, Holder: m.cfg.Holder, Live: true} // acknowledged below
	next := nextList(st.List, live)
	publish := !slices.Equal(next, st.List) || st.Generation < st.Floor
	stays := !publish && !st.heldOff()

	// Revoke: stop work of older generations, then acknowledge, waking the
	// collector when the generation stays.
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
		// The publisher acknowledges its generation at once, then wakes
		// every member to it.
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
		// Every acknowledgement is in: wake the others to start.
		m.cfg.Notifier.Notify(opCtx, m.mem.Key())
	}
	m.startWork(ctx, Assignment{
		Index: index, Count: len(st.List), Generation: st.Generation,
		Members: slices.Clone(st.List), Lease: m.mem,
	})
	return true, false
}

// acknowledge stops work of generations older than gen and records that
// in the member row, waking the name wake unless it is "". It reports
// whether the member row now acknowledges gen.
func (m *Member) acknowledge(ctx context.Context, gen int64, wake string) bool {
	if m.work != nil && m.work.gen < gen {
		m.stopWork(errSuperseded)
	}
	return m.recordAck(ctx, gen, wake, nil)
}

// collector returns the member that gathers the acknowledgements of the
// generation whose member list is list, and wakes every member once it
// sees them all: the first of the list, "" for an empty list.
func collector(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}

// collectorWake returns the wake-up an acknowledgement of list's
// generation sends: the collector's, or "" when that is this member or
// there is none.
func (m *Member) collectorWake(list []string) string {
	if c := collector(list); c != "" && c != m.me {
		return m.cfg.Rows.Wake(c)
	}
	return ""
}

// recordAck records in the member row that this member acknowledges gen,
// unless it already did, with the wake-up wakeName unless it is "", then
// calls wake unless it is nil. It reports whether the row acknowledges gen.
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

// fail records and reports a failed statement of the step under way,
// unless the step's context was cancelled: the run is ending.
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

// stopWork cancels the running work and waits for it to return, however
// long that takes, logging every ShutdownTimeout: acknowledging while old
// work runs would let two members own one index.
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
// generation without this member, and wake the others to it. Work that
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
	// Whatever the publish below does, the others read the pool now.
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

// pruneDead deletes member rows of processes that left or died, after a
// publish: only when membership changed.
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

// NoteSettled follows the member's steps, begun at began, for the
// rebalance time: from the first step that leaves the member unsettled to
// the one that settles it in another generation (Reporter.Rebalanced).
func (m *Member) NoteSettled(began time.Time, settled bool) {
	if !settled {
		if m.unsettledSince.IsZero() {
			m.unsettledSince = began
		}
		return
	}
	if m.gen != m.settledGen {
		m.cfg.Reporter.Rebalanced(m.cfg.Now().Sub(cmp.Or(m.unsettledSince, began)), m.gen)
		m.settledGen = m.gen
	}
	m.unsettledSince = time.Time{}
}
