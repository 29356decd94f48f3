package coordination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// campaignLoop polls the leases this process campaigns for and acquires
// those that are free or expired. A round costs a bounded number of
// statements however many leases it covers: one read per thousand names,
// then, only when some lease can be taken, one insert per few hundred
// missing rows, the session's start or renewal if it needs one, and one
// acquire per few hundred takeable leases. The leases observed
// (Election.Observe) join the round's read and cost nothing more.
func (c *Coordinator) campaignLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wokenWake:
			c.acquireWoken(ctx)
			continue
		case <-c.campaignWake:
		case <-timer.C:
		}
		names, after := c.roundNames()
		if len(names) > 0 {
			c.pollOnce(ctx, names)
		}
		if after != nil {
			after(len(names))
		}
		timer.Reset(pollJitter(c.cfg.RetryInterval))
	}
}

// roundNames returns, sorted, the names a round reads: those campaigned
// for and those observed; and the test hook to call after the round.
func (c *Coordinator) roundNames() ([]string, func(int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.campaigns)+len(c.observed))
	for n := range c.campaigns {
		names = append(names, n)
	}
	for n := range c.observed {
		if c.campaigns[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, c.afterRound
}

// pollOnce reads the campaigned and observed leases and acquires, in one
// batch, the campaigned ones that are free, expired, or held by this
// process's own session.
func (c *Coordinator) pollOnce(ctx context.Context, names []string) {
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.roundTimeout(len(names)))
	defer cancel()
	readStart := time.Now()
	rows, err := c.store.Get(opCtx, names)
	if err != nil {
		c.campaignError("read leases", "", err)
		return
	}
	byName := make(map[string]store.Row, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	mine := c.sessionID()
	var want, missing []string
	for _, name := range names {
		r, exists := byName[name]
		if campaigned := c.observe(name, r, exists); !campaigned || !takeable(r, exists, mine, c.holder) || c.holdingOff(name, r, exists) {
			continue
		}
		want = append(want, name)
		if !exists {
			missing = append(missing, name)
		}
	}
	if len(want) == 0 || c.isUnhealthy() {
		return
	}
	// The handoff gap of a grant runs from the end of the previous term,
	// by the database clock at the read, plus the time since the read
	// started: at most one read and one acquire too long.
	failed, err := c.acquireNames(opCtx, want, missing, func(name string, epoch int64, s *session) {
		gap := time.Duration(-1)
		if free, known := freeFor(byName[name]); known {
			gap = free + time.Since(readStart)
		}
		c.grant(name, epoch, s, gap)
	})
	c.acquireFailed(failed, err)
}

// acquireFailed reports the failure of a round's acquire (acquireNames),
// if any.
func (c *Coordinator) acquireFailed(failed []string, err error) {
	switch {
	case err == nil || errors.Is(err, context.Canceled):
	case failed == nil:
		c.campaignFailed("", err)
	default:
		// The acquire may or may not have committed: each lease is
		// reported, so that an epoch taken without a term is accounted
		// for.
		c.log.Warn("campaign attempt failed; retrying", zap.Int("leases", len(failed)), zap.Error(err))
		for _, name := range failed {
			c.events.emit(Event{Kind: EventError, Lease: name, Err: err})
		}
	}
}

// acquireWoken attempts at once the leases a release notification named
// (wakeFor) that this process campaigns for, without the round's read:
// the acquire statement itself takes only a lease that is free, expired
// or held by a dead session, and not reserved for another process, so a
// stale or spurious notification takes nothing. Leases this process
// resigned and holds off are left out. The handoff gap is counted from
// the notification's arrival, which follows the release's commit.
func (c *Coordinator) acquireWoken(ctx context.Context) {
	c.mu.Lock()
	want := make([]string, 0, len(c.woken))
	for name := range c.woken {
		if c.campaigns[name] != nil {
			want = append(want, name)
		}
	}
	clear(c.woken)
	at, after := c.wokenAt, c.afterWoken
	c.mu.Unlock()
	want = slices.DeleteFunc(want, func(name string) bool { return c.holdingOff(name, store.Row{}, false) })
	if after != nil {
		defer func() { after(len(want)) }()
	}
	if len(want) == 0 || c.isUnhealthy() {
		return
	}
	sort.Strings(want)
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.roundTimeout(len(want)))
	defer cancel()
	failed, err := c.acquireNames(opCtx, want, nil, func(name string, epoch int64, s *session) {
		c.grant(name, epoch, s, time.Since(at))
	})
	c.acquireFailed(failed, err)
}

// takeable reports whether an acquire under the session mine ("" for
// none) by holder would take the lease of r: a missing row is created by
// EnsureRows and then taken; an existing one as Row.Takeable says.
func takeable(r store.Row, exists bool, mine, holder string) bool {
	return !exists || r.Takeable(mine, holder)
}

// sessionID returns the id of the current session, or "" when there is
// none.
func (c *Coordinator) sessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return ""
	}
	return c.sess.id
}

// acquireNames is the one acquire path of the coordinator. It creates the
// rows named in missing, makes sure of a session with at least
// RenewInterval of trust left (ensureSession), and acquires names under it
// in chunks of store.WriteChunk, one statement each. Each chunk's terms
// are handed to start, with the session they ride on, as soon as the
// chunk's statement has succeeded and while the session is still marked
// in use, so that the first terms of a long round ride on the session's
// renewals while the rest are taken. A name that gets no term is held by
// another live session.
//
// It stops at the first error. failed is then the chunk whose acquire
// failed, which started no term though its statement may have committed
// (see Store.Acquire), or nil when the rows or the session could not be
// had and nothing was acquired.
func (c *Coordinator) acquireNames(ctx context.Context, names, missing []string, start func(name string, epoch int64, s *session)) (failed []string, err error) {
	if c.isUnhealthy() {
		return nil, errUnhealthyNow
	}
	if len(missing) > 0 {
		if err := c.store.EnsureRows(ctx, missing); err != nil {
			return nil, fmt.Errorf("create lease rows: %w", err)
		}
	}
	s, err := c.ensureSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	defer c.using(s)()
	for len(names) > 0 {
		chunk := names[:min(len(names), store.WriteChunk)]
		names = names[len(chunk):]
		acquireStart := time.Now()
		terms, err := c.store.Acquire(ctx, s.id, c.holder, chunk)
		c.metrics.acquireRoundTrip(time.Since(acquireStart))
		if err != nil {
			return chunk, fmt.Errorf("acquire: %w", err)
		}
		for _, t := range terms {
			start(t.Name, t.Epoch, s)
		}
	}
	return nil, nil
}

func (c *Coordinator) campaignError(op, name string, err error) {
	c.campaignFailed(name, fmt.Errorf("%s: %w", op, err))
}

// campaignFailed logs and reports a failed campaign step; err says which.
func (c *Coordinator) campaignFailed(name string, err error) {
	if errors.Is(err, context.Canceled) {
		return // shutting down
	}
	c.log.Warn("campaign attempt failed; retrying", zap.String("lease", name), zap.Error(err))
	c.events.emit(Event{Kind: EventError, Lease: name, Err: err})
}

// observe hands what a round read of a lease to those who watch it: it
// emits EventLeaderChanged when a campaigned or observed lease shows
// another live holder or epoch than at the previous look, and offers the
// lease to the election's observers. It reports whether the lease is
// campaigned for.
func (c *Coordinator) observe(name string, r store.Row, exists bool) (campaigned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.observed[name]
	if cp := c.campaigns[name]; cp != nil {
		e, campaigned = cp.e, true
	}
	if e == nil {
		return false
	}
	if len(e.observers) > 0 {
		info := LeaseInfo{Name: name}
		if exists {
			info = c.info(r)
		}
		if !info.Live {
			info.Holder, info.Mine = "", false
		}
		for _, o := range e.observers {
			o.offer(info)
		}
	}
	holder, epoch := "", int64(0)
	if exists && r.Live() {
		holder, epoch = r.Holder, r.Epoch
	}
	if e.seen && e.seenHolder == holder && e.seenEpoch == epoch {
		return campaigned
	}
	e.seen, e.seenHolder, e.seenEpoch = true, holder, epoch
	c.events.emit(Event{Kind: EventLeaderChanged, Lease: name, Holder: holder, Epoch: epoch})
	return campaigned
}

// grant turns a successful acquire into a Lease for the waiting campaign,
// or gives the term back at once when nobody waits any more. gap is the
// handoff gap before the acquire, negative when unknown.
func (c *Coordinator) grant(name string, epoch int64, s *session, gap time.Duration) {
	c.mu.Lock()
	cp := c.campaigns[name]
	if cp == nil || c.closingNow() || !s.trustedLocked() {
		c.mu.Unlock()
		c.giveBack(s, name, epoch)
		return
	}
	delete(c.campaigns, name)
	l := c.holdLocked(name, epoch, s, cp.e)
	if gap >= 0 {
		c.metrics.handoff(gap)
	}
	cp.result <- l
	c.mu.Unlock()
}

// giveBack releases a term that was acquired but is not wanted.
func (c *Coordinator) giveBack(s *session, name string, epoch int64) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
	defer cancel()
	if _, err := c.store.Release(ctx, s.id, []store.Term{{Name: name, Epoch: epoch}}); err != nil {
		c.log.Warn("could not give back a lease nobody waits for; it is free once its session expires",
			zap.String("lease", name), zap.Int64("epoch", epoch), zap.Error(err))
	}
}

// holdLocked starts a term under session s: the lease rides on the
// session's renewals and shares its trust deadline. e is the election the
// term is of, nil for a pool membership; its own term is no leader change
// for it. c.mu must be held.
func (c *Coordinator) holdLocked(name string, epoch int64, s *session, e *Election) *Lease {
	lctx, cancel := context.WithCancelCause(c.leaseParent)
	l := &Lease{c: c, name: name, epoch: epoch, ctx: lctx, cancel: cancel, sess: s, election: e}
	if e != nil {
		l.attrs = e.attrs
	} else {
		l.attrs = c.metrics.leaseAttrs(name)
	}
	c.held[name] = l
	s.held++
	if e != nil {
		e.seen, e.seenHolder, e.seenEpoch = true, c.holder, epoch
	}
	c.metrics.acquired()
	c.log.Info("acquired lease", zap.String("lease", name), zap.Int64("epoch", epoch))
	c.events.emit(Event{Kind: EventElected, Lease: name, Holder: c.holder, Epoch: epoch})
	return l
}

// acquireDirect takes a lease that only this process ever competes for
// (a pool member row) without going through the campaign loop.
func (c *Coordinator) acquireDirect(ctx context.Context, name string) (*Lease, error) {
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	var l *Lease
	var startErr error
	taken := false
	_, err := c.acquireNames(ctx, []string{name}, []string{name}, func(name string, epoch int64, s *session) {
		taken = true
		l, startErr = c.startTerm(name, epoch, s, nil)
	})
	switch {
	case err != nil:
		return nil, err
	case !taken:
		return nil, fmt.Errorf("%w: %q is held by another live session of this process", ErrNotAcquired, name)
	}
	return l, startErr
}

// tryAcquire is Election.TryAcquire's one attempt, on the campaign loop's
// acquire path: a read of the row decides, as pollOnce's does, whether the
// lease can be taken, and acquireNames takes it.
func (c *Coordinator) tryAcquire(ctx context.Context, e *Election) (*Lease, error) {
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.roundTimeout(1))
	defer cancel()
	name := e.key
	if c.isUnhealthy() {
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w", name, errUnhealthyNow)
	}
	r, exists, err := c.readOne(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("coordination: try to acquire lease %q: read: %w", name, err)
	}
	switch {
	case exists && r.Live() && r.Session != c.sessionID():
		return nil, notAcquired(r)
	case exists && r.ReservedAgainst(c.holder):
		return nil, fmt.Errorf("%w: lease %q: a resign prefers %q as the next holder until %s by the database clock",
			ErrNotAcquired, name, r.PreferredHolder, r.PreferredUntil.Format(time.RFC3339Nano))
	case c.holdingOff(name, r, exists):
		return nil, fmt.Errorf("%w: lease %q: this process resigned it and holds off for up to TTL (%v) so another can take over",
			ErrNotAcquired, name, c.cfg.TTL)
	}
	if !takeable(r, exists, c.sessionID(), c.holder) {
		return nil, notAcquired(r)
	}
	var missing []string
	if !exists {
		missing = []string{name}
	}
	var l *Lease
	var startErr error
	taken := false
	_, err = c.acquireNames(ctx, []string{name}, missing, func(name string, epoch int64, s *session) {
		taken = true
		l, startErr = c.startTerm(name, epoch, s, e)
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w", name, err)
	case startErr != nil:
		return nil, startErr
	case taken:
		return l, nil
	}
	// Another process took the lease between the read and the acquire.
	if r, exists, err := c.readOne(ctx, name); err == nil && exists && r.Live() {
		return nil, notAcquired(r)
	}
	return nil, fmt.Errorf("%w: lease %q was taken by another holder during the attempt", ErrNotAcquired, name)
}

// notAcquired is the error of an attempt that found r held by another
// live holder.
func notAcquired(r store.Row) error {
	return fmt.Errorf("%w: lease %q: holder %q, epoch %d, live until %s by the database clock",
		ErrNotAcquired, r.Name, r.Holder, r.Epoch, r.ExpiresAt.Format(time.RFC3339Nano))
}

// waitReady waits until the coordinator serves elections. It returns
// ErrClosed once shutdown has begun, or ctx's error.
func (c *Coordinator) waitReady(ctx context.Context) error {
	select {
	case <-c.ready:
	case <-c.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.closingNow() {
		return ErrClosed
	}
	return nil
}

// startTerm turns a term acquired outside the campaign loop into a Lease
// of e (nil for a pool membership), unless the coordinator is shutting
// down or the session lost this process's trust while the term was taken:
// then the term is given back and an error returned.
func (c *Coordinator) startTerm(name string, epoch int64, s *session, e *Election) (*Lease, error) {
	c.mu.Lock()
	if closing, trusted := c.closingNow(), s.trustedLocked(); closing || !trusted {
		c.mu.Unlock()
		c.giveBack(s, name, epoch)
		if closing {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("%w: %q: the session was lost while acquiring", ErrNotAcquired, name)
	}
	defer c.mu.Unlock()
	return c.holdLocked(name, epoch, s, e), nil
}
