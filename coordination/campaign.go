package coordination

import (
	"context"
	"errors"
	"fmt"
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
// acquire per few hundred takeable leases.
func (c *Coordinator) campaignLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.campaignWake:
		case <-timer.C:
		}
		names := c.campaignNames()
		if len(names) > 0 {
			c.pollOnce(ctx, names)
		}
		timer.Reset(jitter(c.cfg.RetryInterval))
	}
}

func (c *Coordinator) campaignNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.campaigns))
	for n := range c.campaigns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// roundTimeout bounds one campaign round over n names: for each statement
// it may send (a read per thousand names, an insert and an acquire per
// five hundred, the session's), long enough on a loaded database; short
// enough that a round stuck behind a row lock does not hold up the next
// for long.
func (c *Coordinator) roundTimeout(n int) time.Duration {
	statements := 3 + n/1000 + 2*(n/500)
	return time.Duration(statements) * max(c.cfg.RenewInterval, 2*c.cfg.RetryInterval)
}

// pollOnce reads the campaigned leases and acquires, in one batch, the
// ones that are free, expired, or held by this process's own session.
func (c *Coordinator) pollOnce(ctx context.Context, names []string) {
	opCtx, cancel := context.WithTimeout(ctx, c.roundTimeout(len(names)))
	defer cancel()
	rows, err := c.store.Get(opCtx, names)
	if err != nil {
		c.campaignError("read leases", "", err)
		return
	}
	byName := make(map[string]store.Row, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	c.mu.Lock()
	mine := ""
	if c.sess != nil {
		mine = c.sess.id
	}
	c.mu.Unlock()
	var takeable, missing []string
	for _, name := range names {
		r, exists := byName[name]
		c.observe(name, r, exists)
		if exists && r.Live() && (mine == "" || r.Session != mine) {
			continue
		}
		takeable = append(takeable, name)
		if !exists {
			missing = append(missing, name)
		}
	}
	if len(takeable) == 0 {
		return
	}
	if len(missing) > 0 {
		if err := c.store.EnsureRows(opCtx, missing); err != nil {
			c.campaignError("create lease rows", "", err)
			return
		}
	}
	s, err := c.ensureSession(opCtx)
	if err != nil {
		c.campaignError("session", "", err)
		return
	}
	defer c.using(s)()
	// Chunk by chunk, each granted as it comes, so that a long round's
	// first terms ride on the session's renewals while the rest are taken.
	for len(takeable) > 0 {
		chunk := takeable[:min(len(takeable), store.WriteChunk)]
		takeable = takeable[len(chunk):]
		terms, err := c.store.Acquire(opCtx, s.id, c.holder, chunk)
		got := make(map[string]bool, len(terms))
		for _, t := range terms {
			got[t.Name] = true
			c.grant(t.Name, t.Epoch, s)
		}
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				// The acquire may or may not have committed: each lease is
				// reported, so that an epoch taken without a term is
				// accounted for.
				c.log.Warn("campaign attempt failed; retrying", zap.Int("leases", len(chunk)-len(got)), zap.Error(err))
				for _, name := range chunk {
					if !got[name] {
						c.events.emit(Event{Kind: EventError, Lease: name, Err: fmt.Errorf("acquire: %w", err)})
					}
				}
			}
			return
		}
	}
}

func (c *Coordinator) campaignError(op, name string, err error) {
	if errors.Is(err, context.Canceled) {
		return // shutting down
	}
	err = fmt.Errorf("%s: %w", op, err)
	c.log.Warn("campaign attempt failed; retrying", zap.String("lease", name), zap.Error(err))
	c.events.emit(Event{Kind: EventError, Lease: name, Err: err})
}

// observe emits EventLeaderChanged when a campaigned lease shows a new
// holder or epoch.
func (c *Coordinator) observe(name string, r store.Row, exists bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.campaigns[name]
	if cp == nil {
		return
	}
	holder, epoch := "", int64(0)
	if exists && r.Live() {
		holder, epoch = r.Holder, r.Epoch
	}
	e := cp.e
	if e.seen && e.seenHolder == holder && e.seenEpoch == epoch {
		return
	}
	e.seen, e.seenHolder, e.seenEpoch = true, holder, epoch
	c.events.emit(Event{Kind: EventLeaderChanged, Lease: name, Holder: holder, Epoch: epoch})
}

// grant turns a successful acquire into a Lease for the waiting campaign,
// or gives the term back at once when nobody waits any more.
func (c *Coordinator) grant(name string, epoch int64, s *session) {
	c.mu.Lock()
	cp := c.campaigns[name]
	if cp == nil || c.closingNow() || !s.trustedLocked() {
		c.mu.Unlock()
		c.giveBack(s, name, epoch)
		return
	}
	delete(c.campaigns, name)
	l := c.holdLocked(name, epoch, s, cp.e)
	cp.e.seen, cp.e.seenHolder, cp.e.seenEpoch = true, c.holder, epoch
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
// session's renewals and shares its trust deadline. c.mu must be held.
func (c *Coordinator) holdLocked(name string, epoch int64, s *session, e *Election) *Lease {
	lctx, cancel := context.WithCancelCause(c.leaseParent)
	l := &Lease{c: c, name: name, epoch: epoch, ctx: lctx, cancel: cancel, sess: s, election: e}
	c.held[name] = l
	s.held++
	c.log.Info("acquired lease", zap.String("lease", name), zap.Int64("epoch", epoch))
	c.events.emit(Event{Kind: EventElected, Lease: name, Holder: c.holder, Epoch: epoch})
	return l
}

// acquireDirect takes a lease that only this process ever competes for
// (a pool member row) without going through the campaign loop.
func (c *Coordinator) acquireDirect(ctx context.Context, name string) (*Lease, error) {
	select {
	case <-c.ready:
	case <-c.closing:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := c.store.EnsureRows(ctx, []string{name}); err != nil {
		return nil, err
	}
	s, err := c.ensureSession(ctx)
	if err != nil {
		return nil, err
	}
	defer c.using(s)()
	terms, err := c.store.Acquire(ctx, s.id, c.holder, []string{name})
	if err != nil {
		return nil, err
	}
	if len(terms) == 0 {
		return nil, fmt.Errorf("%w: %q is held by another live session of this process", ErrNotAcquired, name)
	}
	c.mu.Lock()
	if closing, trusted := c.closingNow(), s.trustedLocked(); closing || !trusted {
		c.mu.Unlock()
		c.giveBack(s, name, terms[0].Epoch)
		if closing {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("%w: %q: the session was lost while acquiring", ErrNotAcquired, name)
	}
	defer c.mu.Unlock()
	return c.holdLocked(name, terms[0].Epoch, s, nil), nil
}
