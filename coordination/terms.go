package coordination

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// termSet owns the terms this process holds and everything that decides
// them: the campaigns waiting for a lease, the elections and their
// observers, the leases being attempted, the releases in flight, the
// give-backs of acquires that may have committed, the hold-offs after a
// resign and the health state. One goroutine (loop) owns all of it, in a
// termState no other goroutine sees. Other goroutines hand it operations
// (call) and do their I/O themselves, so the loop never waits on the
// database, and nothing it owns needs a lock.
type termSet struct {
	*shared
	store  leaseOps
	resign resignStore
	keeper *keeper
	fencer *fencer

	ops     chan func(*termState)
	stop    chan struct{} // closed by Run once the session has ended
	started chan struct{} // closed when the loop runs
	stopped chan struct{} // closed when it has returned
	drained chan struct{} // closed once, after shutdown began, no term is held or being released

	health healthView // the health state, for readers outside the loop
}

func newTermSet(sh *shared, st leaseOps, rs resignStore, k *keeper, f *fencer) *termSet {
	t := &termSet{shared: sh, store: st, resign: rs, keeper: k, fencer: f,
		ops: make(chan func(*termState)), stop: make(chan struct{}), started: make(chan struct{}),
		stopped: make(chan struct{}), drained: make(chan struct{})}
	t.health.init(sh.cfg.HealthCheck != nil)
	return t
}

// woke hands the loop the names a wake-up named.
func (t *termSet) woke(names []string) { t.call(func(st *termState) { st.woke(names) }) }

// call runs op on the loop and waits until it has run. It returns false,
// without running op, once the loop has stopped.
func (t *termSet) call(op func(*termState)) bool {
	done := make(chan struct{})
	select {
	case t.ops <- func(st *termState) { defer close(done); op(st) }:
		<-done
		return true
	case <-t.stopped:
		return false
	}
}

// callCtx is call for a caller that may come before Run: it waits for the
// loop within ctx, and returns ErrClosed once the loop has stopped.
func (t *termSet) callCtx(ctx context.Context, op func(*termState)) error {
	done := make(chan struct{})
	select {
	case t.ops <- func(st *termState) { defer close(done); op(st) }:
		<-done
		return nil
	case <-t.stopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// query is call for a read that has a zero answer before Run and after
// it: it reports false at once when the loop does not run.
func (t *termSet) query(op func(*termState)) bool {
	select {
	case <-t.started:
	default:
		return false
	}
	return t.call(op)
}

// termState is the loop's state.
type termState struct {
	t      *termSet
	ctx    context.Context // Run's: the I/O the loop starts stops with it
	parent context.Context // of the lease contexts: Run's, without its cancellation
	wg     sync.WaitGroup  // the goroutines the loop started

	held    map[string]*heldTerm // by lease name
	leases  map[string]*heldTerm // every unreleased lease, by name: held or ended
	watched map[*session]func() bool
	closing bool

	elections  map[string]*electionState
	campaigns  map[string]*campaign
	attempting map[string]struct{} // leases an acquire of this process is attempting
	holdOffs   map[string]time.Time
	unsure     map[string]unsureAcquire
	releases   releaseQueue
	campaign   campaignState
	healthSt   healthState
	resigns    resignState
}

// heldTerm is one term of a lease this process holds or held, and the
// Lease handed out for it.
type heldTerm struct {
	name          string
	epoch         int64
	sess          *session
	ctx           context.Context
	cancel        context.CancelCauseFunc
	attrs         metric.MeasurementOption
	lease         *Lease
	held          bool // false once ended: lost, resigned, stepped down
	confirmedLost bool // the database showed it over: its release sends nothing
	election      *electionState
	span          trace.Span // the term's, from hold to drop
}

// loop runs until Run closes stop. ctx is Run's: when it ends, the
// campaigns and the I/O they started stop.
func (t *termSet) loop(ctx context.Context, ready <-chan struct{}) {
	st := &termState{
		t: t, ctx: ctx, parent: context.WithoutCancel(ctx),
		held: make(map[string]*heldTerm), leases: make(map[string]*heldTerm), watched: make(map[*session]func() bool),
		elections: make(map[string]*electionState), campaigns: make(map[string]*campaign),
		attempting: make(map[string]struct{}), holdOffs: make(map[string]time.Time), unsure: make(map[string]unsureAcquire),
	}
	st.campaign.init()
	st.healthSt.init(t.cfg)
	st.healthSt.begin(st)
	close(t.started)
	defer st.exit()
	for {
		select {
		case op := <-t.ops:
			op(st)
		case <-ready:
			ready = nil
			st.campaign.ready = true
			st.wakeRound()
			st.healthSt.start()
		case <-st.campaign.timer.C():
			st.campaign.timer.disarm()
			st.campaign.due = true
			st.nextCampaign()
		case <-t.keeper.noticed:
			st.readResigns()
		case r := <-t.keeper.rebinds:
			r.reply <- st.keep(r.s, r.shown)
		case <-st.healthSt.tick.C():
			st.healthSt.tick.disarm()
			st.healthTick()
		case <-st.healthSt.overrun.C():
			st.healthSt.overrun.disarm()
			st.healthOverran()
		case <-st.releases.flush.C():
			st.releases.flush.disarm()
			st.sendReleases(true)
		case <-t.stop:
			return
		}
	}
}

// exit ends the loop: queued releases are failed, observers closed, and
// the goroutines the loop started are waited for.
func (st *termState) exit() {
	close(st.t.stopped)
	st.releases.fail(st.t, ErrClosed)
	st.closeCampaigns()
	st.healthSt.stop(st.t)
	st.wg.Wait()
}

// spawn runs fn in a goroutine the loop waits for on exit.
func (st *termState) spawn(fn func()) { st.wg.Go(fn) }

// hold starts a term of name at epoch under session s for g, unless
// shutdown has begun (ErrClosed) or s is no longer trusted
// (an error wrapping ErrLeaseLost).
func (st *termState) hold(name string, epoch int64, s *session, g grantee) (*Lease, error) {
	if st.closing {
		return nil, ErrClosed
	}
	if !s.attach() {
		return nil, errSessionLost
	}
	st.watch(s)
	ctx, span := st.t.tracer.Start(s.ctx, spanTerm, trace.WithNewRoot(), termAttrs(name, epoch),
		trace.WithAttributes(attribute.String(attrHolder, st.t.holder)))
	ctx, cancel := context.WithCancelCause(ctx)
	l := &Lease{t: st.t, f: st.t.fencer, name: name, epoch: epoch, sess: s, ctx: ctx, onRelease: g.onRelease}
	tm := &heldTerm{name: name, epoch: epoch, sess: s, ctx: ctx, cancel: cancel, attrs: g.attrs, lease: l, held: true, election: g.es, span: span}
	st.held[name] = tm
	st.leases[name] = tm
	st.t.metrics.acquired()
	st.t.log.Log(grantLevel(name), "acquired lease", zap.String("lease", name), zap.Int64("epoch", epoch))
	st.t.events.emit(Event{Kind: EventElected, Key: name, Holder: st.t.holder, Epoch: epoch})
	return l, nil
}

// watch makes the end of s end the terms under it (sessionOver).
func (st *termState) watch(s *session) {
	if _, ok := st.watched[s]; ok {
		return
	}
	t := st.t
	st.watched[s] = context.AfterFunc(s.ctx, func() { t.call(func(st *termState) { st.sessionOver(s) }) })
}

// sessionOver ends every term held under s, which its keeper ended.
func (st *termState) sessionOver(s *session) {
	delete(st.watched, s)
	for _, tm := range st.held {
		if tm.sess == s {
			st.lose(tm, nil, 0)
		}
	}
}

// drop takes tm out of the held terms.
func (st *termState) drop(tm *heldTerm) {
	if !tm.held {
		return
	}
	tm.held = false
	delete(st.held, tm.name)
	tm.sess.detach()
	tm.span.End()
}

// settle follows a change to the held terms: a shutdown's releases wait
// for them, and the drain ends with the last.
func (st *termState) settle() {
	st.sendReleases(false)
	st.checkDrained()
}

// lose ends a held term with cause (why for its metrics). A term whose
// session ended takes the session's cause; if the database showed the
// session gone, its release sends nothing.
func (st *termState) lose(tm *heldTerm, cause error, why lossCause) {
	if !tm.held {
		return
	}
	if w, over := tm.sess.over(); over {
		cause, why = context.Cause(tm.sess.ctx), w
		tm.confirmedLost = w == lossSessionGone
	}
	tm.span.SetAttributes(attribute.String(attrTermEnd, why.String()))
	if why != lossResigned && why != lossUnhealthy {
		tm.span.SetStatus(codes.Error, fmt.Sprint("lost: ", cause))
	}
	st.drop(tm)
	defer st.settle()
	tm.cancel(cause)
	t := st.t
	t.metrics.lost(why)
	fields := []zap.Field{zap.String("lease", tm.name), zap.Int64("epoch", tm.epoch), zap.Error(cause)}
	if why == lossResigned || why == lossUnhealthy {
		t.log.Info("stepping down from lease", fields...)
	} else {
		t.log.Warn("lost lease", fields...)
	}
	t.events.emit(Event{Kind: EventLost, Key: tm.name, Holder: t.holder, Epoch: tm.epoch, Err: cause})
}

// keep is the check of the terms of s after a failover (failover.go).
func (st *termState) keep(s *session, shown map[string]int64) rebound {
	var r rebound
	for _, tm := range st.held {
		if tm.sess != s {
			continue
		}
		if epoch, ok := shown[tm.name]; ok && epoch == tm.epoch {
			delete(shown, tm.name)
			r.kept++
			continue
		}
		r.dropped++
		st.lose(tm, errLostInFailover, lossFailover)
	}
	r.unknown = len(shown)
	if s.acquiring.Load() > 0 {
		return r // the terms of the acquire under way may not have been handed over yet
	}
	for name, epoch := range shown {
		r.stray = append(r.stray, store.Term{Name: name, Epoch: epoch})
	}
	return r
}

// shutdown begins the shutdown: no campaign, observer or new term from
// now on, and every lease context cancelled with ErrClosed.
func (st *termState) shutdown() {
	st.closing = true
	st.closeCampaigns()
	for _, tm := range st.held {
		tm.cancel(ErrClosed)
	}
	st.settle()
}

// checkDrained closes drained once shutdown has begun and no term is held
// or being released.
func (st *termState) checkDrained() {
	if !st.closing || len(st.held) > 0 || st.releases.pending() > 0 {
		return
	}
	select {
	case <-st.t.drained:
	default:
		close(st.t.drained)
	}
}

// abandon gives up on the terms whose work did not return within the
// shutdown timeout. They are not released: the work may still be acting.
// It reports whether there were any.
func (st *termState) abandon() bool {
	t := st.t
	abandoned := len(st.held) > 0
	for _, tm := range st.held {
		err := fmt.Errorf("%w: leader work did not return within ShutdownTimeout (%v); the lease is not released and expires after TTL (%v)",
			ErrClosed, t.cfg.ShutdownTimeout, t.cfg.TTL)
		t.log.Error("leader work still running at shutdown timeout", zap.String("lease", tm.name), zap.Int64("epoch", tm.epoch), zap.Error(err))
		tm.held, tm.confirmedLost = false, true
		delete(st.held, tm.name)
		t.metrics.lost(lossShutdownTimeout)
		t.events.emit(Event{Kind: EventLost, Key: tm.name, Holder: t.holder, Epoch: tm.epoch, Err: err})
	}
	return abandoned
}

// valid reports whether tm is held and trusted now.
func (tm *heldTerm) valid() bool { return tm.held && tm.ctx.Err() == nil && tm.sess.trusted() }

// tokens returns the tokens of the leases held and trusted now, by name.
func (st *termState) tokens() []Token {
	out := make([]Token, 0, len(st.held))
	for _, tm := range st.held {
		if tm.valid() {
			out = append(out, Token{Key: tm.name, Epoch: tm.epoch})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// leads reports whether the lease name is held and trusted now.
func (st *termState) leads(name string) bool {
	tm := st.held[name]
	return tm != nil && tm.valid()
}

// holds reports whether this process has a term of name at epoch.
func (st *termState) holds(name string, epoch int64) bool {
	tm := st.held[name]
	return tm != nil && tm.epoch == epoch
}

// sessionOf returns the session of the term tk when it is held and
// trusted, and nil otherwise.
func (st *termState) sessionOf(tk Token) *session {
	if tm := st.held[tk.Key]; tm != nil && tm.epoch == tk.Epoch && tm.valid() {
		return tm.sess
	}
	return nil
}

// observe observes the gauges of the held leases and the trust left. It
// returns the names held, and the epoch last seen of each election known
// to the loop, for the gauges of the elections not held.
func (st *termState) observe(o metric.Observer, m *metrics) (held map[string]bool, seen map[string]int64) {
	held = make(map[string]bool, len(st.held))
	var trust time.Time
	for name, tm := range st.held {
		held[name] = true
		valid := tm.valid()
		o.ObserveInt64(m.held, boolInt(valid), tm.attrs)
		o.ObserveInt64(m.epoch, tm.epoch, tm.attrs)
		if d := tm.sess.trustDeadline(); valid && d.After(trust) {
			trust = d
		}
	}
	var left time.Duration
	if !trust.IsZero() {
		left = max(time.Until(trust), 0)
	}
	o.ObserveFloat64(m.trustRemaining, seconds(left))
	seen = make(map[string]int64)
	for name, es := range st.elections {
		if es.seen && es.seenEpoch > 0 {
			seen[name] = es.seenEpoch
		}
	}
	return held, seen
}
