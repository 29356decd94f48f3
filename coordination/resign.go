package coordination

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// A resign request is recorded in the lease row, for the epoch of the
// term it asks to end (resign_epoch), together with a bump of the notice
// counter of the holder's session, in one transaction. The holder's
// renewal statement returns that counter at every tick, so the holder
// learns of a request at its next renewal at no extra cost; only when the
// counter changed does it read which of its leases have a request for
// their current term (one read per thousand leases held). A request for
// epoch E never ends a later term: the holder compares it with the epoch
// of the term it runs, and every acquire clears it.
//
// The holder ends such a term with ErrResigned; Election.Run (and the
// workers) release the lease once the work has returned. The process then
// holds off taking that lease again for one TTL, or until it sees another
// holder, so that a follower takes over; when nobody does, it may take it
// back after the hold-off.
//
// A preferred holder is recorded with the request, until twice the
// holder's TTL after it by the database clock: the acquire statement lets
// no other process take the lease until then (takeable in
// internal/store/sql_leases.go).

// preferWindowTTLs is how long, in TTLs of the holder (the TTL its session
// is renewed with), a preferred holder has the lease reserved for it.
const preferWindowTTLs = 2

// maxPreferredHolderLen bounds ResignOptions.PreferredHolder: it is stored
// in a column as wide as a holder string.
const maxPreferredHolderLen = 255

// ResignOptions tune Coordinator.Resign.
type ResignOptions struct {
	// PreferredHolder, when set, names the process that should take the
	// lease next: its holder string ("node/cluster/instance", as
	// LeaseInfo.Holder and Coordinator.Holder show it), its node, or its
	// instance id. Until twice the holder's TTL (the TTL its session is
	// renewed with, as the database shows it) after the request, by the
	// database clock, no other process takes the lease; then anyone may.
	// A node name matches every process of that node. It must not name
	// the current holder, and is at most 255 bytes of printable ASCII:
	// Resign refuses it otherwise, with an error wrapping
	// ErrInvalidConfig. Nothing checks that a process answers to it (a
	// follower has no row until it acquires): a name that nobody answers
	// to keeps the lease without a leader for the whole window. Defaults
	// to "" (anyone may take the lease next).
	PreferredHolder string
}

// Resign asks the current holder of the lease name to hand it over. name
// is the full lease name, as LeaseInfo.Name and Election.Name report it:
// "cluster/eu/reports" or "global/billing", say.
//
// The request is recorded in the lease row, fenced by the epoch of the
// current term: it ends that term and never a later one. Resign returns
// the lease as it was when the request was recorded. The holder sees the
// request at its next renewal (within RenewInterval), ends the term with
// cause ErrResigned (its work's context is cancelled; an EventLost
// carries the cause), and releases the lease once its work has returned
// (Election.Run and the workers do; a holder that uses Campaign releases
// it itself, as after any end of term). It then holds off taking the
// lease again for one TTL, or until it sees another holder, so that a
// follower takes over; with no follower, it takes it back after the
// hold-off.
//
// Resign needs no running coordinator: it works before and without Run,
// like Leases, so a command-line tool can call it; it does not migrate,
// and on a schema older than this build it returns an error wrapping
// ErrSchemaMissing that says how to migrate. It returns an error wrapping
// ErrUnknownLease when the lease has no row, and ErrNotHeld when it has
// no live holder. Pool memberships ("pool|..." rows) are refused:
// to move a pool's work off a process, stop its Pool.Run, or let its
// health check fail (Config.HealthCheck).
func (c *Coordinator) Resign(ctx context.Context, name string, opts ResignOptions) (LeaseInfo, error) {
	pref := opts.PreferredHolder
	switch {
	case strings.Contains(name, keySep):
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: a pool membership cannot be asked to resign; "+
			"stop the member's Pool.Run, or let its health check fail", name)
	case len(pref) > maxPreferredHolderLen:
		return LeaseInfo{}, fmt.Errorf("%w: ResignOptions.PreferredHolder %q is %d bytes long; the limit is %d",
			ErrInvalidConfig, pref, len(pref), maxPreferredHolderLen)
	case strings.IndexFunc(pref, func(r rune) bool { return r < ' ' || r > '~' }) >= 0:
		return LeaseInfo{}, fmt.Errorf("%w: ResignOptions.PreferredHolder %q has a byte outside printable ASCII, which no holder string has",
			ErrInvalidConfig, pref)
	}
	refused := false
	row, found, notified, err := c.store.RequestResign(ctx, name, pref, func(r store.Row) (window time.Duration, err error) {
		defer func() { refused = err != nil }()
		switch {
		case !r.Live():
			return 0, notHeld(r)
		case r.Session == "":
			return 0, fmt.Errorf("lease %q is held by %q, a build of leasehold without sessions, which cannot be asked to resign",
				r.Name, r.Holder)
		case pref != "" && store.Prefers(pref, r.Holder):
			return 0, fmt.Errorf("%w: ResignOptions.PreferredHolder %q names the current holder %q", ErrInvalidConfig, pref, r.Holder)
		}
		return preferWindowTTLs * holderTTL(r, c.cfg.TTL), nil
	})
	switch {
	case err != nil && !refused && ctx.Err() == nil:
		// A schema older than this build lacks the columns of the request:
		// say so, and how to migrate, rather than which column is missing.
		if serr := c.store.CheckSchema(ctx); errors.Is(serr, ErrSchemaMissing) {
			err = serr
		}
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w", name, err)
	case err != nil:
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w", name, err)
	case !found:
		return LeaseInfo{}, fmt.Errorf("%w: %q has no lease row (list the leases with `leasehold status` or Coordinator.Leases)",
			ErrUnknownLease, name)
	case !notified:
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w: the session of its holder %q ended meanwhile; nothing to resign",
			name, ErrNotHeld, row.Holder)
	}
	c.log.Info("requested resign", zap.String("lease", name), zap.String("holder", row.Holder),
		zap.Int64("epoch", row.Epoch), zap.String("preferred_holder", pref))
	return c.info(row), nil
}

// holderTTL is the TTL the holder of r renews its session with, as the
// database shows it (the session's expiry less its last renewal), or
// fallback when the row does not tell: the preference then lasts for the
// holder's TTL, not for the requester's.
func holderTTL(r store.Row, fallback time.Duration) time.Duration {
	if ttl := r.ExpiresAt.Sub(r.RenewedAt); ttl > 0 && ttl <= MaxTTL {
		return ttl
	}
	return fallback
}

// notHeld is the error of a resign request for a lease nobody holds.
func notHeld(r store.Row) error {
	if r.Holder == "" {
		return fmt.Errorf("%w: %q is free (epoch %d); nothing to resign", ErrNotHeld, r.Name, r.Epoch)
	}
	return fmt.Errorf("%w: %q: its holder %q (epoch %d) has expired; nothing to resign", ErrNotHeld, r.Name, r.Holder, r.Epoch)
}

// noticedLocked notes the notice counter a renewal of s returned, and
// wakes the resign loop when requests are left to read. The counter only
// grows, so an older value that arrives late is ignored. c.mu must be
// held.
func (c *Coordinator) noticedLocked(s *session, notice int64) {
	s.notice = max(s.notice, notice)
	if s.notice != s.handled {
		c.poke(c.resignWake)
	}
}

// resignLoop reads the resign requests of the current session each time a
// renewal returned a notice counter not yet handled.
func (c *Coordinator) resignLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.resignWake:
		}
		c.readResigns(ctx)
	}
}

// readResigns reads which leases of the current session have a resign
// request for their current term, and ends those terms. A failed read,
// and a read while an acquire is under way on the session, are tried again
// after the next renewal, which finds the counter still unhandled.
func (c *Coordinator) readResigns(ctx context.Context) {
	c.mu.Lock()
	s := c.sess
	if s == nil || s.dead || s.notice == s.handled {
		c.mu.Unlock()
		return
	}
	notice := s.notice
	var names []string
	for name, l := range c.held {
		if l.sess == s && l.election != nil {
			names = append(names, name)
		}
	}
	c.mu.Unlock()
	var terms []store.Term
	if len(names) > 0 {
		opCtx, cancel := context.WithTimeout(ctx, c.roundTimeout(len(names)))
		var err error
		terms, err = c.store.PendingResigns(opCtx, s.id, names)
		cancel()
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				c.log.Warn("could not read resign requests; trying again after the next renewal", zap.Error(err))
				c.events.emit(Event{Kind: EventError, Err: fmt.Errorf("read resign requests: %w", err)})
			}
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// An acquire under way on s may have committed terms that are not in
	// c.held yet; a request for one of them would go unread if the notice
	// counted as handled now. It is read again after the next renewal.
	if s.busy == 0 {
		s.handled = notice
	}
	for _, t := range terms {
		l := c.held[t.Name]
		if l == nil || l.sess != s || l.epoch != t.Epoch {
			continue // a request for a term that is over already
		}
		c.holdOff[t.Name] = time.Now().Add(c.cfg.TTL)
		c.loseLocked(l, fmt.Errorf("%w: lease %q epoch %d: another process asked this holder to hand the lease over",
			ErrResigned, t.Name, t.Epoch), lossResigned)
	}
}

// holdingOff reports whether this process holds off taking the lease
// name after resigning it: for one TTL after the term ended, unless r, the
// lease as just read, shows another live holder, which ends the hold-off.
func (c *Coordinator) holdingOff(name string, r store.Row, exists bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.holdOff[name]
	if !ok {
		return false
	}
	if (exists && r.Live() && r.Holder != c.holder) || !time.Now().Before(until) {
		delete(c.holdOff, name)
		return false
	}
	return true
}
