package coordination

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/backoff"
	"github.com/leasehold/leasehold/internal/store"
)

// A session is one row of the session table. Every lease and pool
// membership of the process rides on it and is live in the database while
// the session is unexpired by the database clock. Session ids are random
// and never reused, and an expired session is never renewed again.
//
// The keeper's goroutine alone creates, renews and ends it and moves its
// trust deadline; other goroutines use its atomic methods below.
type session struct {
	id   string
	base time.Time // the keeper's monotonic origin of deadlines

	deadline atomic.Int64 // trust deadline, in ns since base
	ctx      context.Context
	cancel   context.CancelCauseFunc
	why      atomic.Int32 // lossCause+1 of the end, 0 while live

	held      atomic.Int64 // terms riding on it (attach, detach)
	acquiring atomic.Int64 // acquires under way with it (keeper.acquire)
	notice    atomic.Int64 // the newest notice counter a renewal returned
	// fenceRenewals counts renewals inside fenced transactions since the
	// keeper last read the row (SQLite).
	fenceRenewals atomic.Int64

	timer *time.Timer // fires at the deadline; the keeper resets it
}

func (s *session) now() int64 { return int64(time.Since(s.base)) }

// trusted reports whether the process may still act under s.
func (s *session) trusted() bool { return s.ctx.Err() == nil && s.now() < s.deadline.Load() }

// trustDeadline returns the trust deadline, on the monotonic clock.
func (s *session) trustDeadline() time.Time { return s.base.Add(time.Duration(s.deadline.Load())) }

// left returns the trust left now.
func (s *session) left() time.Duration { return time.Duration(s.deadline.Load() - s.now()) }

// over reports why s ended; ok is false while it is live.
func (s *session) over() (why lossCause, ok bool) {
	w := s.why.Load()
	return lossCause(w - 1), w != 0
}

// finish ends s with cause, unless it has ended already: the first end
// wins, and every lease context under s is cancelled with its cause.
func (s *session) finish(cause error, why lossCause) bool {
	if !s.why.CompareAndSwap(0, int32(why)+1) {
		return false
	}
	s.cancel(cause)
	s.timer.Stop()
	return true
}

// extend moves the trust deadline to at (ns since base) when that is
// later, unless the deadline has passed or s has ended. It reports
// whether s is still trusted.
func (s *session) extend(at int64) bool {
	for {
		d := s.deadline.Load()
		if s.ctx.Err() != nil || s.now() >= d {
			return false
		}
		if at <= d || s.deadline.CompareAndSwap(d, at) {
			break
		}
	}
	s.timer.Reset(s.left())
	return s.ctx.Err() == nil // the deadline timer may have won the race
}

// attach counts a term started under s, if s is still trusted; detach
// uncounts it.
func (s *session) attach() bool {
	if !s.trusted() {
		return false
	}
	s.held.Add(1)
	return true
}

func (s *session) detach() { s.held.Add(-1) }

// keeper is the session keeper: one goroutine (run) that renews the
// session of the process, one statement per tick, and serves the acquires
// that need a new or fresher session.
type keeper struct {
	*shared
	store sessionStore
	base  time.Time

	current  atomic.Pointer[session]
	stats    atomic.Pointer[renewalStats]
	requests chan chan sessionReply // acquires that need the keeper to renew or start a session
	noticed  chan struct{}          // buffered 1: a renewal returned a notice counter
	rebinds  chan rebind            // the check of a session's terms after a failover (failover.go)
	parent   context.Context        // of every session context: Run's, without its cancellation
}

type sessionReply struct {
	s   *session
	err error
}

// renewalStats are the outcomes of the renewal statements, for Renewal.
type renewalStats struct {
	failures    int
	lastErr     error
	lastSuccess time.Time
}

func newKeeper(sh *shared, st sessionStore) *keeper {
	k := &keeper{shared: sh, store: st, base: time.Now(), requests: make(chan chan sessionReply),
		noticed: make(chan struct{}, 1), rebinds: make(chan rebind), parent: context.Background()}
	k.stats.Store(&renewalStats{})
	return k
}

// sessionID returns the id of the current session, "" when there is none.
func (k *keeper) sessionID() string {
	if s := k.current.Load(); s != nil && s.ctx.Err() == nil {
		return s.id
	}
	return ""
}

// acquire returns a session to acquire under, with at least RenewInterval
// of trust left, marked in use until done is called: the keeper renews a
// session while terms ride on it or an acquire is under way with it.
func (k *keeper) acquire(ctx context.Context) (s *session, done func(), err error) {
	s = k.current.Load()
	if s == nil || s.ctx.Err() != nil || s.left() <= k.cfg.RenewInterval {
		reply := make(chan sessionReply, 1)
		select {
		case k.requests <- reply:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-k.closing:
			return nil, nil, ErrClosed
		}
		r := <-reply
		if r.err != nil {
			return nil, nil, r.err
		}
		s = r.s
	}
	s.acquiring.Add(1)
	return s, func() { s.acquiring.Add(-1) }, nil
}

// serve answers an acquire that needs a session: the current one, renewed
// first when it is close to its deadline, or a new one.
func (k *keeper) serve(ctx context.Context) (*session, error) {
	if s := k.current.Load(); s != nil && s.ctx.Err() == nil {
		if s.left() > k.cfg.RenewInterval {
			return s, nil
		}
		start := time.Now()
		ok, notice, err := k.renewSession(ctx, s)
		k.metrics.renewal(time.Since(start), err)
		if err != nil {
			return nil, fmt.Errorf("renew session: %w", err)
		}
		if ok && k.renewed(s, start, notice) {
			return s, nil
		}
		if !ok {
			k.gone(s)
		}
	}
	id := uuid.NewString()
	start := time.Now()
	if err := k.store.CreateSession(ctx, id, k.holder, k.cfg.TTL); err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	sctx, cancel := context.WithCancelCause(k.parent)
	s := &session{id: id, base: k.base, ctx: sctx, cancel: cancel}
	s.deadline.Store(int64(start.Sub(k.base) + k.cfg.trustWindow()))
	if s.left() <= 0 {
		cancel(errSessionLost)
		return nil, fmt.Errorf("start session: the statement took longer than the trust window (TTL - Margin = %v)", k.cfg.trustWindow())
	}
	// The timer exists before it can fire: expire reads it.
	s.timer = time.AfterFunc(time.Duration(math.MaxInt64), func() { k.expire(s) })
	s.timer.Reset(s.left())
	k.current.Store(s)
	k.log.Info("started session", zap.String("session", id))
	return s, nil
}

// expire runs when the deadline timer of s fires.
func (k *keeper) expire(s *session) {
	if s.now() < s.deadline.Load() {
		return // a renewal moved the deadline; it resets the timer
	}
	k.lose(s, fmt.Errorf("%w: trust deadline passed without a successful renewal", ErrLeaseLost), lossTrustDeadline)
}

// renewed moves the trust deadline of s to start + TTL - Margin after a
// renewal attempted at start succeeded, unless the deadline passed first,
// and notes its notice counter. It reports whether s is still trusted.
func (k *keeper) renewed(s *session, start time.Time, notice int64) bool {
	left := s.left()
	if !s.extend(int64(start.Sub(k.base) + k.cfg.trustWindow())) {
		k.lose(s, fmt.Errorf("%w: trust deadline passed before the renewal completed", ErrLeaseLost), lossLateRenewal)
		return false
	}
	k.metrics.headroom(left)
	k.notice(s, notice)
	return true
}

// notice notes a notice counter a renewal of s returned; it only grows.
func (k *keeper) notice(s *session, n int64) {
	for {
		cur := s.notice.Load()
		if n <= cur || s.notice.CompareAndSwap(cur, n) {
			break
		}
	}
	poke(k.noticed)
}

// gone ends s after the database showed it expired: every lease it held is
// free in the database already.
func (k *keeper) gone(s *session) {
	k.lose(s, fmt.Errorf("%w: the database shows this process's session expired", ErrLeaseLost), lossSessionGone)
}

// lose ends s; the first end wins.
func (k *keeper) lose(s *session, cause error, why lossCause) {
	if !s.finish(cause, why) {
		return
	}
	k.current.CompareAndSwap(s, nil)
	if n := s.held.Load(); n > 0 {
		k.log.Warn("lost session", zap.String("session", s.id), zap.Int64("leases", n), zap.Error(cause))
	}
}

// run renews the current session every RenewInterval while anything rides
// on it, retries failed renewals until the trust deadline, and serves
// acquires that need a session, until ctx is done.
func (k *keeper) run(ctx context.Context) {
	io := context.WithoutCancel(ctx)
	timer := time.NewTimer(k.cfg.RenewInterval)
	defer timer.Stop()
	retry := backoff.Retry{Policy: backoff.Policy{Interval: k.cfg.RetryInterval}}
	lastChance := false // the retry brought forward to fit before the deadline
	for {
		select {
		case <-ctx.Done():
			return
		case reply := <-k.requests:
			s, err := k.serve(io)
			reply <- sessionReply{s, err}
			continue
		case <-timer.C:
		}
		outcome, wait := k.renewOnce(io, &retry)
		switch outcome {
		case renewed:
			lastChance = false
			timer.Reset(k.cfg.RenewInterval)
		case renewedInFences:
			// Try the statement again, early enough that its wait and a
			// read of the row still fit before the deadline.
			lastChance = false
			timer.Reset(min(k.cfg.RenewInterval, k.halfTrustLeft()))
		default:
			// A retry due after the trust deadline is of no use: the last
			// one of an outage comes halfway to it instead.
			if s := k.current.Load(); s != nil && !lastChance && wait >= s.left() {
				wait, lastChance = max(s.left()/2, minInterval), true
			}
			timer.Reset(wait)
		}
	}
}

// renewOutcome is how a renewal attempt ended.
type renewOutcome int

const (
	renewed         renewOutcome = iota // renewed, or nothing to renew
	renewedInFences                     // the statement failed, but fenced transactions renewed the session
	renewFailed                         // try again after the backoff
)

// renewOnce sends the renewal statement of a tick, unless nothing rides on
// the session. After a failure, wait is the backoff before the next.
func (k *keeper) renewOnce(ctx context.Context, retry *backoff.Retry) (outcome renewOutcome, wait time.Duration) {
	s := k.current.Load()
	if s == nil || s.ctx.Err() != nil || (s.held.Load() == 0 && s.acquiring.Load() == 0) {
		return renewed, 0
	}
	n := int(s.held.Load())
	start := time.Now()
	left := s.left()
	if left <= 0 {
		return renewFailed, k.cfg.RetryInterval // its timer ends the session
	}
	// Leave time for one more attempt, should this statement hang.
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
	covered := serial && stopWatch()
	switch {
	case err != nil:
		if serial && (k.trustFromSession(ctx, s) || covered) {
			k.log.Debug("renewal waited for a writer; fenced transactions renewed the session", zap.Error(err), zap.Int("leases", n))
			k.succeeded(retry)
			return renewedInFences, 0
		}
		return renewFailed, k.failed(retry, err, n, s)
	case !ok:
		// The session is over: neither a success nor a failure.
		k.gone(s)
		return renewed, 0
	}
	k.renewed(s, start, notice)
	k.succeeded(retry)
	return renewed, 0
}

// failed records a failed renewal statement (a warning for the first of an
// outage, and an EventError) and returns the wait before the next.
func (k *keeper) failed(retry *backoff.Retry, err error, n int, s *session) time.Duration {
	wait, first := retry.Failed()
	k.stats.Store(&renewalStats{failures: retry.Failures(), lastErr: err, lastSuccess: k.stats.Load().lastSuccess})
	log := k.log.Debug
	if first {
		log = k.log.Warn
	}
	log("renewal failed; retrying until the trust deadline", zap.Error(err), zap.Int("leases", n),
		zap.Duration("trust_left", s.left()), zap.Int("failures", retry.Failures()))
	k.events.emit(Event{Kind: EventError, Err: fmt.Errorf("renew the session of %d leases: %w", n, err)})
	return wait
}

// succeeded records a renewal statement that returned without error.
func (k *keeper) succeeded(retry *backoff.Retry) {
	if n, lasted := retry.Succeeded(); n > 0 {
		k.log.Info("renewals recovered", zap.Int("failures", n), zap.Duration("after", lasted))
	}
	k.stats.Store(&renewalStats{lastSuccess: time.Now()})
}

// end deletes the session row once Run is done with it, unless work was
// abandoned under it: that session is left to expire after TTL, since the
// work may still act under its leases.
func (k *keeper) end(abandoned bool) {
	s := k.current.Swap(nil)
	if s == nil {
		return
	}
	s.finish(ErrClosed, lossShutdownTimeout)
	if abandoned {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.ShutdownTimeout)
	defer cancel()
	if err := k.store.EndSession(ctx, s.id, k.cfg.sessionPrune()); err != nil {
		k.log.Warn("could not delete the session row; it expires after TTL", zap.String("session", s.id), zap.Error(err))
	}
}

// state fills in what Renewal reports of the session and its renewals.
func (k *keeper) state(st *RenewalState) {
	if s := k.current.Load(); s != nil && s.ctx.Err() == nil {
		st.TrustDeadline = s.trustDeadline()
	}
	r := k.stats.Load()
	st.Failures, st.LastError, st.LastSuccess = r.failures, r.lastErr, r.lastSuccess
}

// halfTrustLeft returns half the trust left of the current session, at
// least 10ms, and RenewInterval when there is none.
func (k *keeper) halfTrustLeft() time.Duration {
	s := k.current.Load()
	if s == nil {
		return k.cfg.RenewInterval
	}
	return max(s.left()/2, 10*time.Millisecond)
}

// releaseStray gives up terms the database shows under s that no term of
// this process has (failover.go).
func (k *keeper) releaseStray(ctx context.Context, s *session, stray []store.Term) {
	rctx, cancel := context.WithTimeout(ctx, k.cfg.ShutdownTimeout)
	defer cancel()
	if _, err := k.store.Release(rctx, s.id, stray); err != nil {
		k.log.Warn("could not release terms the new primary shows but this process does not hold; they are free once its session ends",
			zap.Int("leases", len(stray)), zap.Error(err))
	}
}
