package coordination

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// termSet owns the terms this process holds: the set of held leases by
// name, each lease's state, and the count of releases still on their way
// to the database. A term's trust is its session's, which the session
// keeper owns: termSet's lock is taken before the keeper's, never after.
//
// The campaigner hands it new terms (hold); the keeper, the resign reader
// and the health gate end them (loseSession, keep, resign, stepDown); a
// Lease ends its own (Lease.Release); Run drains it on shutdown.
type termSet struct {
	*shared
	keeper     *keeper
	releaser   *releaser
	fencer     *fencer
	campaigner *campaigner // told when a term of an election is released (idle)

	dropped chan struct{} // buffered 1: a term left the set (releaser.awaitReleases)

	mu        sync.Mutex
	parent    context.Context // of every lease context: Run's, without its cancellation
	held      map[string]*Lease
	releasing int // releases queued or being sent
}

func newTermSet(sh *shared) *termSet {
	return &termSet{shared: sh, dropped: make(chan struct{}, 1), held: make(map[string]*Lease)}
}

// wire gives the set the owners its leases call.
func (t *termSet) wire(k *keeper, r *releaser, f *fencer, cp *campaigner) {
	t.keeper, t.releaser, t.fencer, t.campaigner = k, r, f, cp
}

// start notes Run's context, the parent of every lease context.
func (t *termSet) start(parent context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.parent = parent
}

// hold starts a term under session s, unless the coordinator is shutting
// down (ErrClosed) or s lost this process's trust (ErrSessionLost): the
// lease rides on the session's renewals and shares its trust deadline. e
// is the election the term is of, nil for a pool membership.
func (t *termSet) hold(name string, epoch int64, s *session, e *Election) (*Lease, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closingNow() {
		return nil, ErrClosed
	}
	if !t.keeper.attach(s) {
		return nil, ErrSessionLost
	}
	lctx, cancel := context.WithCancelCause(t.parent)
	l := &Lease{t: t, name: name, epoch: epoch, ctx: lctx, cancel: cancel, sess: s, election: e}
	if e != nil {
		l.attrs = e.attrs
	} else {
		l.attrs = t.metrics.leaseAttrs(name)
	}
	t.held[name] = l
	t.metrics.acquired()
	t.log.Info("acquired lease", zap.String("lease", name), zap.Int64("epoch", epoch))
	t.events.emit(Event{Kind: EventElected, Lease: name, Holder: t.holder, Epoch: epoch})
	return l, nil
}

// dropLocked takes l out of the held set. t.mu must be held.
func (t *termSet) dropLocked(l *Lease) {
	if t.held[l.name] == l {
		delete(t.held, l.name)
		t.keeper.detach(l.sess)
		poke(t.dropped)
	}
}

// loseLocked ends a held term; why is the cause its metrics report.
// t.mu must be held.
func (t *termSet) loseLocked(l *Lease, cause error, why lossCause) {
	if l.state != stateHeld {
		return
	}
	l.state = stateLost
	t.dropLocked(l)
	l.cancel(cause)
	t.metrics.lost(why)
	if why == lossResigned || why == lossUnhealthy {
		t.log.Info("stepping down from lease", zap.String("lease", l.name), zap.Int64("epoch", l.epoch), zap.Error(cause))
	} else {
		t.log.Warn("lost lease", zap.String("lease", l.name), zap.Int64("epoch", l.epoch), zap.Error(cause))
	}
	t.events.emit(Event{Kind: EventLost, Lease: l.name, Holder: t.holder, Epoch: l.epoch, Err: cause})
	t.keeper.wakeRenewal()
}

// loseSession ends every term held under s, which the keeper has ended.
// A session gone (why is lossSessionGone) is one the database showed
// over, so its terms need no release.
func (t *termSet) loseSession(s *session, cause error, why lossCause) {
	t.mu.Lock()
	defer t.mu.Unlock()
	confirmed := why == lossSessionGone
	for _, l := range t.held {
		if l.sess == s {
			l.confirmedLost = confirmed
			t.loseLocked(l, cause, why)
		}
	}
}

// keep is the check of a session's terms after a failover (keeper.
// keepTerms): each term of s that shown does not have at its epoch ends
// now, with cause lossFailover, and each it has is taken out of shown,
// which is left with the terms the database shows but this process does
// not hold.
func (t *termSet) keep(s *session, shown map[string]int64) (kept, dropped int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.held {
		if l.sess != s {
			continue
		}
		if epoch, ok := shown[l.name]; ok && epoch == l.epoch {
			delete(shown, l.name)
			kept++
			continue
		}
		dropped++
		t.loseLocked(l, errLostInFailover, lossFailover)
	}
	return kept, dropped
}

// electionsOf returns the names of the terms of elections held under s:
// those a resign request may end.
func (t *termSet) electionsOf(s *session) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for name, l := range t.held {
		if l.sess == s && l.election != nil {
			names = append(names, name)
		}
	}
	return names
}

// resign ends, with ErrResigned, the terms of s that resign requests name
// (terms). holdOff is called first, without t.mu, with the names of the
// terms to end: the process then does not take them again for a while,
// however soon their work returns.
func (t *termSet) resign(s *session, terms []store.Term, holdOff func(name string)) {
	current := func(tm store.Term) *Lease {
		if l := t.held[tm.Name]; l != nil && l.sess == s && l.epoch == tm.Epoch {
			return l
		}
		return nil // a request for a term that is over already
	}
	t.mu.Lock()
	ending := slices.DeleteFunc(slices.Clone(terms), func(tm store.Term) bool { return current(tm) == nil })
	t.mu.Unlock()
	for _, tm := range ending {
		holdOff(tm.Name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tm := range ending {
		if l := current(tm); l != nil {
			t.loseLocked(l, fmt.Errorf("%w: lease %q epoch %d: another process asked this holder to hand the lease over",
				ErrResigned, tm.Name, tm.Epoch), lossResigned)
		}
	}
}

// stepDown ends every term held with cause, after failed health checks;
// first says whether this is the check that reached HealthFailures,
// which is logged.
func (t *termSet) stepDown(cause, last error, failures int, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if first {
		t.log.Warn("stepping down: health checks keep failing", zap.Int("failures", failures), zap.Int("leases", len(t.held)),
			zap.Error(last))
		t.events.emit(Event{Kind: EventError, Err: cause})
	}
	for _, l := range t.held {
		t.loseLocked(l, cause, lossUnhealthy)
	}
}

// cancelAll cancels every lease context with ErrClosed, at the start of
// shutdown.
func (t *termSet) cancelAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.held {
		l.cancel(ErrClosed)
	}
}

// count counts the leases still to be renewed or being released: the
// drain ends when it reaches zero.
func (t *termSet) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held) + t.releasing
}

// left counts the leases held, their releases not queued yet.
func (t *termSet) left() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}

// abandon gives up on terms whose work did not return within the
// shutdown timeout. They are not released: the work may still be acting.
// It reports whether there were any.
func (t *termSet) abandon() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	abandoned := len(t.held) > 0
	for _, l := range t.held {
		err := fmt.Errorf("%w: leader work did not return within ShutdownTimeout (%v); the lease is not released and expires after TTL (%v)",
			ErrClosed, t.cfg.ShutdownTimeout, t.cfg.TTL)
		t.log.Error("leader work still running at shutdown timeout", zap.String("lease", l.name),
			zap.Int64("epoch", l.epoch), zap.Error(err))
		l.state = stateLost
		delete(t.held, l.name)
		t.metrics.lost(lossShutdownTimeout)
		t.events.emit(Event{Kind: EventLost, Lease: l.name, Holder: t.holder, Epoch: l.epoch, Err: err})
	}
	return abandoned
}

// tokens returns the tokens of the leases held and trusted now, by name.
func (t *termSet) tokens() []Token {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Token, 0, len(t.held))
	for _, l := range t.held {
		if l.validLocked() {
			out = append(out, l.Token())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// leads reports whether the lease name is held and trusted now.
func (t *termSet) leads(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.held[name]
	return l != nil && l.validLocked()
}

// holds reports whether this process has a term of the lease name at
// epoch, trusted or not.
func (t *termSet) holds(name string, epoch int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.held[name]
	return l != nil && l.epoch == epoch
}

// sessionOf returns the session of the term tk when this process holds
// and trusts it, and nil otherwise.
func (t *termSet) sessionOf(tk Token) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.held[tk.Name]; l != nil && l.epoch == tk.Epoch && l.validLocked() {
		return l.sess
	}
	return nil
}

// heldState fills in what Coordinator.Renewal reports of the terms: how
// many are held and trusted.
func (t *termSet) heldState(st *RenewalState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.held {
		if l.validLocked() {
			st.Held++
		}
	}
}

// observe observes the gauges of the held leases and the trust left, and
// returns the names held, whose elections need no gauge of their own.
func (t *termSet) observe(o metric.Observer, m *metrics) map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make(map[string]bool, len(t.held))
	var trust time.Time // the trust deadline of the leases held and trusted
	for name, l := range t.held {
		names[name] = true
		valid := l.validLocked()
		o.ObserveInt64(m.held, boolInt(valid), l.attrs)
		o.ObserveInt64(m.epoch, l.epoch, l.attrs)
		if d := t.keeper.deadline(l.sess); valid && d.After(trust) {
			trust = d
		}
	}
	var left time.Duration
	if !trust.IsZero() {
		left = max(time.Until(trust), 0)
	}
	o.ObserveFloat64(m.trustRemaining, seconds(left))
	return names
}
