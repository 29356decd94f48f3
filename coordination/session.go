package coordination

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
)

// A session is one row of the session table that every lease and pool
// membership of this process rides on: a lease row names the session that
// holds it, and is live while that session is unexpired by the database
// clock. One renewal of the session row per tick therefore keeps every
// lease alive, at a cost that does not grow with their number.
//
// Session ids are random and never reused. A session the database shows
// expired is never renewed again (the renewal matches unexpired rows only),
// so a process that lost its session, for example by a pause longer than
// TTL, can never revive leases that others may have taken meanwhile; it
// starts a new session for its next acquire.
//
// The holder trusts all leases of a session until the session's trust
// deadline: the start of the last successful renewal (or of the session's
// creation) plus TTL - Margin, on the monotonic clock. A lease acquired
// under the session gets that deadline too, which is conservative: the
// session row outlives it in the database.

// keeper is the session keeper: it owns the session this process's terms
// ride on (the session row, its renewal loop, its trust deadline, the
// rebind after a failover of the database) and the state of each session
// object. Its lock is the innermost: the term set takes it while holding
// its own, and the keeper never calls another owner while holding it.
type keeper struct {
	*shared
	store    sessionStore
	terms    *termSet
	renewals renewals // outcomes of the renewal loop's statements (Renewal)

	wake       chan struct{}   // buffered 1: wakes the renewal loop
	resignWake chan<- struct{} // wakes the resign reader (resign.go)

	// create serialises starting and topping up the session
	// (ensureSession).
	create sync.Mutex

	mu   sync.Mutex
	sess *session // the current session; nil before the first acquire and after a loss
}

func newKeeper(sh *shared, st sessionStore, t *termSet) *keeper {
	return &keeper{shared: sh, store: st, terms: t, wake: make(chan struct{}, 1)}
}

// session is the in-memory state of one session. Its fields but id are
// guarded by keeper.mu.
type session struct {
	id       string
	deadline time.Time // trust deadline, with a monotonic reading
	timer    *time.Timer
	dead     bool
	held     int // leases held under it
	busy     int // acquires under way with it
	// fenceRenewals counts renewals of the session committed inside fenced
	// transactions since the renewal loop last read the row (SQLite).
	fenceRenewals int
	// notice is the session's notice counter as the last renewal returned
	// it, and handled the value whose resign requests have been read
	// (resign.go).
	notice, handled int64
}

// using marks s as in use by an acquire until the returned func is
// called: the renewal loop renews a session while it holds leases or an
// acquire is under way with it, so that a long acquire does not outlive it.
func (k *keeper) using(s *session) (done func()) {
	k.mu.Lock()
	s.busy++
	k.mu.Unlock()
	return func() {
		k.mu.Lock()
		s.busy--
		k.mu.Unlock()
	}
}

// lose marks the session over for this process.
func (s *session) lose() {
	s.dead = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// trustedLocked reports whether the session may still be acted under.
func (s *session) trustedLocked() bool { return !s.dead && time.Now().Before(s.deadline) }

// trusted reports whether s may still be acted under.
func (k *keeper) trusted(s *session) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return s.trustedLocked()
}

// deadline returns the trust deadline of s.
func (k *keeper) deadline(s *session) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return s.deadline
}

// attach counts a term started under s, if s is still trusted; it
// reports whether it was. detach uncounts one.
func (k *keeper) attach(s *session) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !s.trustedLocked() {
		return false
	}
	s.held++
	return true
}

func (k *keeper) detach(s *session) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s.held--
}

// wakeRenewal wakes the renewal loop: a term ended, or a release reached
// the database, which may end a drain.
func (k *keeper) wakeRenewal() { poke(k.wake) }

// sessionID returns the id of the current session, or "" when there is
// none.
func (k *keeper) sessionID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sess == nil {
		return ""
	}
	return k.sess.id
}

// ensureSession returns a session to acquire under, with at least one
// RenewInterval of trust left: the current one, renewed first when it is
// close to its deadline, or a new one.
func (k *keeper) ensureSession(ctx context.Context) (*session, error) {
	k.create.Lock()
	defer k.create.Unlock()
	k.mu.Lock()
	s := k.sess
	var left time.Duration
	alive := s != nil && !s.dead
	if alive {
		left = time.Until(s.deadline)
	}
	k.mu.Unlock()
	if alive && left > k.cfg.RenewInterval {
		return s, nil
	}
	if alive {
		start := time.Now()
		ok, notice, err := k.renewSession(ctx, s)
		k.metrics.renewal(time.Since(start), err)
		if err != nil {
			return nil, fmt.Errorf("renew session: %w", err)
		}
		if ok && k.sessionRenewed(s, start, notice) {
			return s, nil
		}
		if !ok {
			k.sessionGone(s)
		}
	}
	id := uuid.NewString()
	start := time.Now()
	if err := k.store.CreateSession(ctx, id, k.holder, k.cfg.TTL); err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	ns := &session{id: id, deadline: start.Add(k.cfg.trustWindow())}
	d := time.Until(ns.deadline)
	if d <= 0 {
		return nil, fmt.Errorf("start session: the statement took longer than the trust window (TTL - Margin = %v)", k.cfg.trustWindow())
	}
	ns.timer = time.AfterFunc(d, func() { k.sessionDeadline(ns) })
	k.sess = ns
	k.log.Info("started session", zap.String("session", id))
	return ns, nil
}

// sessionRenewed moves the trust deadline of s to start + TTL - Margin
// after a renewal attempted at start succeeded, and notes the notice
// counter it returned. A renewal that comes back after the trust deadline
// does not revive the session: it is over, though the database extended
// it, and the releases of its leases give them back. It reports whether s
// is still trusted.
func (k *keeper) sessionRenewed(s *session, start time.Time, notice int64) bool {
	k.mu.Lock()
	if s.dead {
		k.mu.Unlock()
		return false
	}
	now := time.Now()
	if !now.Before(s.deadline) {
		k.mu.Unlock()
		k.loseSession(s, fmt.Errorf("%w: trust deadline passed before the renewal completed", ErrLeaseLost), lossLateRenewal)
		return false
	}
	defer k.mu.Unlock()
	k.metrics.headroom(s.deadline.Sub(now))
	if d := start.Add(k.cfg.trustWindow()); d.After(s.deadline) {
		s.deadline = d
		s.timer.Reset(d.Sub(now))
	}
	k.noticedLocked(s, notice)
	return true
}

// sessionGone ends s after the database showed it expired: every lease it
// held is free in the database already.
func (k *keeper) sessionGone(s *session) {
	k.loseSession(s, fmt.Errorf("%w: the database shows this process's session expired", ErrLeaseLost), lossSessionGone)
}

// sessionDeadline runs when the trust deadline timer of s fires.
func (k *keeper) sessionDeadline(s *session) {
	k.mu.Lock()
	if s.dead {
		k.mu.Unlock()
		return
	}
	if d := time.Until(s.deadline); d > 0 {
		s.timer.Reset(d) // a renewal moved the deadline while the timer fired
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	k.loseSession(s, fmt.Errorf("%w: trust deadline passed without a successful renewal", ErrLeaseLost), lossTrustDeadline)
}

// loseSession ends s, then every term held under it (termSet.loseSession).
// A session gone (why is lossSessionGone) is one the database showed
// over, so its terms need no release. Whoever ends s first ends its terms;
// later calls do nothing.
func (k *keeper) loseSession(s *session, cause error, why lossCause) {
	k.mu.Lock()
	if s.dead {
		k.mu.Unlock()
		return
	}
	s.lose()
	if k.sess == s {
		k.sess = nil
	}
	held := s.held
	k.mu.Unlock()
	if held > 0 {
		k.log.Warn("lost session", zap.String("session", s.id), zap.Int("leases", held), zap.Error(cause))
	}
	k.terms.loseSession(s, cause, why)
}

// renewedInFence notes a renewal of s committed inside a fenced
// transaction, and the notice counter it returned.
func (k *keeper) renewedInFence(s *session, notice int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s.fenceRenewals++
	k.noticedLocked(s, notice)
}

// noticedLocked notes the notice counter a renewal of s returned, and
// wakes the resign reader when requests are left to read. The counter
// only grows, so an older value that arrives late is ignored. k.mu must
// be held.
func (k *keeper) noticedLocked(s *session, notice int64) {
	s.notice = max(s.notice, notice)
	if s.notice != s.handled {
		select {
		case k.resignWake <- struct{}{}:
		default:
		}
	}
}

// pendingNotice returns the current session and its notice counter when
// it has resign requests not read yet.
func (k *keeper) pendingNotice() (s *session, notice int64, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s = k.sess
	if s == nil || s.dead || s.notice == s.handled {
		return nil, 0, false
	}
	return s, s.notice, true
}

// handledNotice notes that the requests of s up to notice have been
// read, unless an acquire is under way on s: it may have committed terms
// that are not in the term set yet, and a request for one of them would
// go unread if the notice counted as handled now. It is read again after
// the next renewal.
func (k *keeper) handledNotice(s *session, notice int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.busy == 0 {
		s.handled = notice
	}
}

// trustDeadline fills in Renewal's TrustDeadline: the current session's.
func (k *keeper) trustDeadline(st *RenewalState) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.sess; s != nil && !s.dead {
		st.TrustDeadline = s.deadline
	}
}

// end deletes the session row once Run is done with it, so that it does
// not linger until it expires. A session under which work was abandoned
// is left to expire after TTL instead: deleting it would free leases that
// work may still act under.
func (k *keeper) end(abandoned bool) {
	k.mu.Lock()
	s := k.sess
	k.sess = nil
	if s != nil {
		s.lose()
	}
	k.mu.Unlock()
	if s == nil || abandoned {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.ShutdownTimeout)
	defer cancel()
	if err := k.store.EndSession(ctx, s.id, k.cfg.sessionPrune()); err != nil {
		k.log.Warn("could not delete the session row; it expires after TTL", zap.String("session", s.id), zap.Error(err))
	}
}

// renewOutcome is how a renewal attempt ended.
type renewOutcome int

const (
	renewed         renewOutcome = iota // renewed, or nothing to renew
	renewedInFences                     // the statement failed, but fenced transactions renewed the session
	renewFailed                         // try again soon
)

// renewLoop renews the session of the held leases with one statement per
// tick, retries failures with backoff, and runs the bounded drain on
// shutdown: when ctx is done it calls shutdown, which cancels every lease
// context, and renews on until the term set is empty or ShutdownTimeout
// has passed. It never waits on campaign statements, which run in their
// own goroutine. It reports whether work was abandoned at the shutdown
// timeout.
func (k *keeper) renewLoop(ctx context.Context, shutdown func()) (abandoned bool) {
	io := context.WithoutCancel(ctx)
	timer := time.NewTimer(k.cfg.RenewInterval)
	defer timer.Stop()
	done := ctx.Done()
	var drain <-chan time.Time
	failures := 0
	for {
		select {
		case <-done:
			done = nil
			shutdown()
			t := time.NewTimer(k.cfg.ShutdownTimeout)
			defer t.Stop()
			drain = t.C
			if k.terms.count() == 0 {
				return false
			}
			continue
		case <-drain:
			return k.terms.abandon()
		case <-k.wake:
			if done == nil && k.terms.count() == 0 {
				return false
			}
			continue
		case <-timer.C:
		}
		switch k.renewOnce(io) {
		case renewed:
			failures = 0
			timer.Reset(k.cfg.RenewInterval)
		case renewedInFences:
			// Try the statement again, early enough that its wait and a
			// read of the row still fit before the deadline.
			failures = 0
			timer.Reset(min(k.cfg.RenewInterval, k.halfTrustLeft()))
		default:
			failures++
			timer.Reset(k.cfg.backoff(failures))
		}
	}
}

// renewOnce sends the one renewal statement of a tick, for the session of
// the held leases. Nothing is sent when nothing is held or being acquired:
// an idle follower only reads.
func (k *keeper) renewOnce(ctx context.Context) renewOutcome {
	k.mu.Lock()
	s := k.sess
	if s == nil || s.dead || (s.held == 0 && s.busy == 0) {
		k.mu.Unlock()
		return renewed
	}
	n, deadline := s.held, s.deadline
	k.mu.Unlock()
	afterRenew := k.signals.afterRenew.Load()
	start := time.Now()
	left := deadline.Sub(start)
	if left <= 0 {
		// The deadline has passed; its timer ends the session.
		return renewFailed
	}
	// A slow renewal that succeeds within the trust window beats a retry,
	// but a statement stuck on a dead connection must leave time for one
	// more attempt on another: half the trust left, or RenewInterval when
	// that is longer, never past the deadline.
	timeout := min(left, max(k.cfg.RenewInterval, left/2))
	serial := k.store.SerializesWriters()
	var stopWatch func() bool
	if serial {
		stopWatch = k.watchRenewal(ctx, s)
	}
	opCtx, cancel := context.WithTimeout(ctx, timeout)
	ok, notice, err := k.renewSession(opCtx, s)
	cancel()
	k.metrics.renewal(time.Since(start), err)
	covered := false
	if serial {
		covered = stopWatch()
	}
	if afterRenew != nil {
		lost := 0
		if err == nil && !ok {
			lost = n
		}
		defer (*afterRenew)(n, lost, err)
	}
	switch {
	case err != nil:
		if serial && (k.trustFromSession(ctx, s) || covered) {
			k.log.Debug("renewal waited for a writer; fenced transactions renewed the session",
				zap.Error(err), zap.Int("leases", n))
			k.renewals.succeeded()
			return renewedInFences
		}
		k.renewals.failed(err)
		k.log.Warn("renewal failed; retrying until the trust deadline", zap.Error(err),
			zap.Int("leases", n), zap.Duration("trust_left", time.Until(deadline)))
		k.events.emit(Event{Kind: EventError, Err: fmt.Errorf("renew the session of %d leases: %w", n, err)})
		return renewFailed
	case !ok:
		// The statement worked but renewed nothing: no success to
		// report, and no failure of the database either.
		k.sessionGone(s)
		return renewed
	default:
		k.sessionRenewed(s, start, notice)
	}
	k.renewals.succeeded()
	return renewed
}
