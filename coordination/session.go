package coordination

import (
	"context"
	"fmt"
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

// session is the in-memory state of one session. deadline, held and
// fenceRenewals are guarded by Coordinator.mu.
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
func (c *Coordinator) using(s *session) (done func()) {
	c.mu.Lock()
	s.busy++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		s.busy--
		c.mu.Unlock()
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

// ensureSession returns a session to acquire under, with at least one
// RenewInterval of trust left: the current one, renewed first when it is
// close to its deadline, or a new one.
func (c *Coordinator) ensureSession(ctx context.Context) (*session, error) {
	c.sessMu.Lock()
	defer c.sessMu.Unlock()
	c.mu.Lock()
	s := c.sess
	var left time.Duration
	alive := s != nil && !s.dead
	if alive {
		left = time.Until(s.deadline)
	}
	c.mu.Unlock()
	if alive && left > c.cfg.RenewInterval {
		return s, nil
	}
	if alive {
		start := time.Now()
		ok, notice, err := c.renewSession(ctx, s)
		c.metrics.renewal(time.Since(start), err)
		if err != nil {
			return nil, fmt.Errorf("renew session: %w", err)
		}
		if ok && c.sessionRenewed(s, start, notice) {
			return s, nil
		}
		if !ok {
			c.sessionGone(s)
		}
	}
	id := uuid.NewString()
	start := time.Now()
	if err := c.store.CreateSession(ctx, id, c.holder, c.cfg.TTL); err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := &session{id: id, deadline: start.Add(c.cfg.trustWindow())}
	d := time.Until(ns.deadline)
	if d <= 0 {
		return nil, fmt.Errorf("start session: the statement took longer than the trust window (TTL - Margin = %v)", c.cfg.trustWindow())
	}
	ns.timer = time.AfterFunc(d, func() { c.sessionDeadline(ns) })
	c.sess = ns
	c.log.Info("started session", zap.String("session", id))
	return ns, nil
}

// sessionRenewed moves the trust deadline of s to start + TTL - Margin
// after a renewal attempted at start succeeded, and notes the notice
// counter it returned. A renewal that comes back after the trust deadline
// does not revive the session: it is over, though the database extended
// it, and the releases of its leases give them back. It reports whether s
// is still trusted.
func (c *Coordinator) sessionRenewed(s *session, start time.Time, notice int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.dead {
		return false
	}
	now := time.Now()
	if !now.Before(s.deadline) {
		c.loseSessionLocked(s, fmt.Errorf("%w: trust deadline passed before the renewal completed", ErrLeaseLost), lossLateRenewal)
		return false
	}
	c.metrics.headroom(s.deadline.Sub(now))
	if d := start.Add(c.cfg.trustWindow()); d.After(s.deadline) {
		s.deadline = d
		s.timer.Reset(d.Sub(now))
	}
	c.noticedLocked(s, notice)
	return true
}

// sessionGone ends s after the database showed it expired: every lease it
// held is free in the database already.
func (c *Coordinator) sessionGone(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loseSessionLocked(s, fmt.Errorf("%w: the database shows this process's session expired", ErrLeaseLost), lossSessionGone)
}

// sessionDeadline runs when the trust deadline timer of s fires.
func (c *Coordinator) sessionDeadline(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.dead {
		return
	}
	if d := time.Until(s.deadline); d > 0 {
		s.timer.Reset(d) // a renewal moved the deadline while the timer fired
		return
	}
	c.loseSessionLocked(s, fmt.Errorf("%w: trust deadline passed without a successful renewal", ErrLeaseLost), lossTrustDeadline)
}

// loseSessionLocked ends s and every term held under it. A session gone
// (why is lossSessionGone) is one the database showed over, so its terms
// need no release. c.mu must be held.
func (c *Coordinator) loseSessionLocked(s *session, cause error, why lossCause) {
	if s.dead {
		return
	}
	confirmed := why == lossSessionGone
	s.lose()
	if c.sess == s {
		c.sess = nil
	}
	if s.held > 0 {
		c.log.Warn("lost session", zap.String("session", s.id), zap.Int("leases", s.held), zap.Error(cause))
	}
	for _, l := range c.held {
		if l.sess == s {
			l.confirmedLost = confirmed
			c.loseLocked(l, cause, why)
		}
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
// shutdown. It never waits on campaign statements, which run in their own
// goroutine. It reports whether work was abandoned at the shutdown
// timeout.
func (c *Coordinator) renewLoop(ctx context.Context) (abandoned bool) {
	io := context.WithoutCancel(ctx)
	timer := time.NewTimer(c.cfg.RenewInterval)
	defer timer.Stop()
	done := ctx.Done()
	var drain <-chan time.Time
	failures := 0
	for {
		select {
		case <-done:
			done = nil
			c.beginShutdown()
			t := time.NewTimer(c.cfg.ShutdownTimeout)
			defer t.Stop()
			drain = t.C
			if c.heldCount() == 0 {
				return false
			}
			continue
		case <-drain:
			return c.abandon()
		case <-c.renewWake:
			if done == nil && c.heldCount() == 0 {
				return false
			}
			continue
		case <-timer.C:
		}
		switch c.renewOnce(io) {
		case renewed:
			failures = 0
			timer.Reset(c.cfg.RenewInterval)
		case renewedInFences:
			// Try the statement again, early enough that its wait and a
			// read of the row still fit before the deadline.
			failures = 0
			timer.Reset(min(c.cfg.RenewInterval, c.halfTrustLeft()))
		default:
			failures++
			timer.Reset(c.cfg.backoff(failures))
		}
	}
}

// renewOnce sends the one renewal statement of a tick, for the session of
// the held leases. Nothing is sent when nothing is held or being acquired:
// an idle follower only reads.
func (c *Coordinator) renewOnce(ctx context.Context) renewOutcome {
	c.mu.Lock()
	s := c.sess
	if s == nil || s.dead || (s.held == 0 && s.busy == 0) {
		c.mu.Unlock()
		return renewed
	}
	n, deadline, afterRenew := s.held, s.deadline, c.afterRenew
	c.mu.Unlock()
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
	timeout := min(left, max(c.cfg.RenewInterval, left/2))
	serial := c.store.SerializesWriters()
	var stopWatch func() bool
	if serial {
		stopWatch = c.watchRenewal(ctx, s)
	}
	opCtx, cancel := context.WithTimeout(ctx, timeout)
	ok, notice, err := c.renewSession(opCtx, s)
	cancel()
	c.metrics.renewal(time.Since(start), err)
	covered := false
	if serial {
		covered = stopWatch()
	}
	if afterRenew != nil {
		lost := 0
		if err == nil && !ok {
			lost = n
		}
		defer afterRenew(n, lost, err)
	}
	switch {
	case err != nil:
		if serial && (c.trustFromSession(ctx, s) || covered) {
			c.log.Debug("renewal waited for a writer; fenced transactions renewed the session",
				zap.Error(err), zap.Int("leases", n))
			c.renewals.succeeded()
			return renewedInFences
		}
		c.renewals.failed(err)
		c.log.Warn("renewal failed; retrying until the trust deadline", zap.Error(err),
			zap.Int("leases", n), zap.Duration("trust_left", time.Until(deadline)))
		c.events.emit(Event{Kind: EventError, Err: fmt.Errorf("renew the session of %d leases: %w", n, err)})
		return renewFailed
	case !ok:
		// The statement worked but renewed nothing: no success to
		// report, and no failure of the database either.
		c.sessionGone(s)
		return renewed
	default:
		c.sessionRenewed(s, start, notice)
	}
	c.renewals.succeeded()
	return renewed
}
