package coordination

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// On a database whose writing transactions exclude every other writer
// (SQLite), a fenced transaction keeps the holder's renewal statement out
// for as long as it is open, and back-to-back fenced transactions can keep
// it out for longer than the trust window. Two things keep such a term
// alive:
//
//   - The fencing check renews every term the process holds inside the
//     caller's transaction (renewInFence). Nobody else can write while that
//     transaction is open, so nobody can take a lease over meanwhile; if it
//     commits, the leases are live until the database's now at the check
//     plus TTL; if it rolls back, nothing was renewed.
//   - While the renewal statement waits for the write lock, the rows are
//     read (watchRenewal, trustFromRows), which a reader can do while a
//     writer holds the lock, and the holder trusts each of its terms until
//     the read's start plus the time the row has left by the database
//     clock, minus Margin. Readers see only committed rows, so a
//     rolled-back renewal extends nothing.

// renewInFence renews, inside the fenced transaction tx, every term this
// process holds and still trusts, when the store serialises writers and t
// is one of them. The transaction keeps the renewal statement of all of
// them out, not only t's, so it renews all of them, with the renewal
// statement itself. It is a no-op otherwise.
func (c *Coordinator) renewInFence(tx *gorm.DB, t Token) error {
	if !c.store.SerializesWriters() {
		return nil
	}
	c.mu.Lock()
	var terms []store.Term
	var leases []*Lease
	if l := c.held[t.Name]; l != nil && l.epoch == t.Epoch && l.validLocked() {
		for _, h := range c.held {
			if h.validLocked() {
				terms = append(terms, store.Term{Name: h.name, Epoch: h.epoch})
				leases = append(leases, h)
			}
		}
	}
	c.mu.Unlock()
	if len(terms) == 0 {
		// The check that follows reports why; a term this process no longer
		// trusts is never extended.
		return nil
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].Name < terms[j].Name })
	n, err := c.store.RenewIn(tx, c.holder, terms, c.cfg.TTL)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of lease %q: renew held leases in the transaction: %w", t.Name, err)
	}
	if n == int64(len(terms)) {
		c.mu.Lock()
		for _, l := range leases {
			l.fenceRenewals++
		}
		c.mu.Unlock()
	}
	return nil
}

// watchRenewal runs while the renewal statement of terms is in flight on a
// database whose writers exclude each other. That statement may wait for
// the write lock for as long as the driver's busy timeout, whatever its
// context says: SQLite's busy handler does not notice an interrupt. So
// whenever half the time left before the earliest trust deadline passes
// with the statement still waiting, the rows are read (trustFromRows).
// A renewal that completes in time sends no read. The returned stop ends the watch and reports
// whether any read found every held term renewed by fenced transactions.
func (c *Coordinator) watchRenewal(ctx context.Context, terms []store.Term) (stop func() bool) {
	done := make(chan struct{})
	result := make(chan bool, 1)
	go func() {
		covered := false
		for {
			t := time.NewTimer(c.halfTrustLeft())
			select {
			case <-done:
				t.Stop()
				result <- covered
				return
			case <-t.C:
			}
			if c.trustFromRows(ctx, terms) {
				covered = true
			}
		}
	}()
	return func() bool {
		close(done)
		return <-result
	}
}

// trustFromRows reads the rows of terms while or after the renewal
// statement could not write, and moves each still-held term's trust
// deadline to the read's start plus the time the row has left by the
// database clock (at most TTL), minus Margin, when that is later than the
// deadline it has. The database computed its now after the read started,
// and the row stays live until its expiry by that clock, so every other
// process sees the lease live until at least that moment (given the same
// clock-rate bound as a renewal). It reports whether every term still held
// was extended by a renewal committed in a fenced transaction.
func (c *Coordinator) trustFromRows(ctx context.Context, terms []store.Term) bool {
	_, earliest := c.heldTerms()
	start := time.Now()
	if earliest.IsZero() || !start.Before(earliest) {
		return false
	}
	names := make([]string, len(terms))
	for i, t := range terms {
		names[i] = t.Name
	}
	opCtx, cancel := context.WithTimeout(ctx, min(c.cfg.RenewInterval, earliest.Sub(start)))
	rows, err := c.store.Get(opCtx, names)
	cancel()
	if err != nil {
		c.log.Debug("reading the held leases while the renewal waits failed", zap.Error(err))
		return false
	}
	byName := make(map[string]store.Row, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	all := true
	for _, t := range terms {
		l := c.held[t.Name]
		if l == nil || l.epoch != t.Epoch || l.state != stateHeld {
			continue // released or lost while the read ran
		}
		fenced := l.fenceRenewals > 0
		l.fenceRenewals = 0
		r, ok := byName[t.Name]
		if !ok || r.Holder != c.holder || r.Epoch != t.Epoch || r.ExpiresAtUS < r.NowUS || !now.Before(l.deadline) {
			all = false
			continue
		}
		left := min(time.Duration(r.ExpiresAtUS-r.NowUS)*time.Microsecond, c.cfg.TTL)
		deadline := start.Add(left - c.cfg.Margin)
		if !deadline.After(l.deadline) {
			all = false
			continue
		}
		l.deadline = deadline
		l.timer.Reset(deadline.Sub(now))
		all = all && fenced
	}
	return all
}

// halfTrustLeft returns half the time left before the earliest trust
// deadline of the held terms, at least 10ms, and RenewInterval when
// nothing is held.
func (c *Coordinator) halfTrustLeft() time.Duration {
	_, earliest := c.heldTerms()
	if earliest.IsZero() {
		return c.cfg.RenewInterval
	}
	return max(time.Until(earliest)/2, 10*time.Millisecond)
}
