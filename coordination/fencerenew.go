package coordination

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"
)

// On a database whose writing transactions exclude every other writer
// (SQLite), a fenced transaction keeps the session's renewal statement out
// for as long as it is open, and back-to-back fenced transactions can keep
// it out for longer than the trust window. Two things keep the session
// alive:
//
//   - The fencing check renews the session inside the caller's
//     transaction (renewInFence). Nobody else can write while that
//     transaction is open, so nobody can take a lease over meanwhile; if it
//     commits, the session is live until the database's now at the check
//     plus TTL; if it rolls back, nothing was renewed.
//   - While the renewal statement waits for the write lock, the session
//     row is read (watchRenewal, trustFromSession), which a reader can do
//     while a writer holds the lock, and the holder trusts the session
//     until the read's start plus the time the row has left by the
//     database clock, minus Margin. Readers see only committed rows, so a
//     rolled-back renewal extends nothing.

// fencer makes the fencing checks (Lease.Fence, Coordinator.CheckFence)
// and the term-checked writes of a lease's data (Lease.SetData,
// Lease.SetDataIn).
// It owns no state: the term it checks is the term set's, the session it
// renews in the transaction the keeper's.
type fencer struct {
	*shared
	store  fenceStore
	data   dataStore // the lease data's reads and term-checked writes (leasedata.go)
	admin  *Admin    // the fencing check itself (Admin.checkFence)
	keeper *keeper
	terms  *termSet
}

// renewInFence renews, inside the fenced transaction tx, the session of
// term t when the store serialises writers and this process holds and
// trusts t. It is a no-op otherwise.
func (f *fencer) renewInFence(tx *gorm.DB, t Token) error {
	if !f.store.SerializesWriters() {
		return nil
	}
	s := f.terms.sessionOf(t)
	if s == nil {
		// The check that follows reports why; a term this process no longer
		// trusts is never extended.
		return nil
	}
	ok, notice, err := f.store.RenewSessionIn(tx, s.id, f.cfg.TTL)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of lease %q: renew the session in the transaction: %w", t.Name, err)
	}
	if ok {
		// The notice is committed state whether tx commits or not: a
		// resign request is acted on even while fenced transactions keep
		// the renewal loop's own statement waiting.
		f.keeper.renewedInFence(s, notice)
	}
	return nil
}

// check is Coordinator.CheckFence: the session's renewal inside tx
// (renewInFence), then the Admin's fencing check, with this process as
// the holder.
func (f *fencer) check(tx *gorm.DB, t Token) error {
	if err := requireTransaction(tx, fmt.Sprintf("lease %q epoch %d", t.Name, t.Epoch)); err != nil {
		return err
	}
	if err := f.renewInFence(tx, t); err != nil {
		return err
	}
	return f.admin.checkFence(tx, t, f.holder)
}

// watchRenewal runs while the renewal statement of s is in flight on a
// database whose writers exclude each other. That statement may wait for
// the write lock for as long as the driver's busy timeout, whatever its
// context says: SQLite's busy handler does not notice an interrupt. So
// whenever half the time left before the trust deadline passes with the
// statement still waiting, the session row is read (trustFromSession). A
// renewal that completes in time sends no read. The returned stop ends the
// watch and reports whether any read found the session renewed by fenced
// transactions.
func (k *keeper) watchRenewal(ctx context.Context, s *session) (stop func() bool) {
	done := make(chan struct{})
	result := make(chan bool, 1)
	go func() {
		covered := false
		for {
			t := time.NewTimer(k.halfTrustLeft())
			select {
			case <-done:
				t.Stop()
				result <- covered
				return
			case <-t.C:
			}
			if k.trustFromSession(ctx, s) {
				covered = true
			}
		}
	}()
	return func() bool {
		close(done)
		return <-result
	}
}

// trustFromSession reads the session row while or after the renewal
// statement could not write, and moves the session's trust deadline to the
// read's start plus the time the row has left by the database clock (at
// most TTL), minus Margin, when that is later than the deadline it has.
// The database computed its now after the read started, and the row stays
// live until its expiry by that clock, so every other process sees the
// session's leases live until at least that moment (given the same
// clock-rate bound as a renewal). It reports whether a renewal committed
// in a fenced transaction extended the deadline.
func (k *keeper) trustFromSession(ctx context.Context, s *session) bool {
	k.mu.Lock()
	deadline := s.deadline
	k.mu.Unlock()
	start := time.Now()
	if !start.Before(deadline) {
		return false
	}
	opCtx, cancel := context.WithTimeout(ctx, min(k.cfg.RenewInterval, deadline.Sub(start)))
	row, ok, err := k.store.ReadSession(opCtx, s.id)
	cancel()
	if err != nil {
		k.log.Debug("reading the session while the renewal waits failed", zap.Error(err))
		return false
	}
	if !ok || !row.Live() {
		return false
	}
	d := start.Add(k.cfg.trustFor(row.ExpiresAt.Sub(row.Now)))
	k.mu.Lock()
	defer k.mu.Unlock()
	fenced := s.fenceRenewals > 0
	s.fenceRenewals = 0
	now := time.Now()
	if s.dead || !now.Before(s.deadline) || !d.After(s.deadline) {
		return false
	}
	s.deadline = d
	s.timer.Reset(d.Sub(now))
	return fenced
}

// halfTrustLeft returns half the time left before the session's trust
// deadline, at least 10ms, and RenewInterval when there is no session.
func (k *keeper) halfTrustLeft() time.Duration {
	k.mu.Lock()
	s := k.sess
	var left time.Duration
	if s != nil {
		left = time.Until(s.deadline)
	}
	k.mu.Unlock()
	if s == nil {
		return k.cfg.RenewInterval
	}
	return max(left/2, 10*time.Millisecond)
}
