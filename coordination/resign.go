package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// The holder's side of a resign request; Admin.Resign (admin.go) records
// it. A resign request is recorded in the lease row, for the epoch of the
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
		opCtx, cancel := context.WithTimeout(ctx, c.cfg.roundTimeout(len(names)))
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
		c.holdOff[t.Name] = time.Now().Add(c.cfg.resignHoldOff())
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
