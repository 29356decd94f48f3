package coordination

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// On a database whose writing transactions exclude every other writer
// (SQLite), a fenced transaction keeps the session's renewal statement out
// while it is open, and back-to-back fenced transactions can keep it out
// for longer than the trust window. Two things keep the session alive:
//
//   - The fencing check renews the session inside the caller's
//     transaction (renewInFence): nobody else can write while it is open;
//     if it commits, the session is live until the database's now at the
//     check plus TTL; if it rolls back, nothing was renewed.
//   - While the renewal statement waits for the write lock, the keeper
//     reads the session row (readers are not blocked) and trusts the
//     session until the read's start plus the time the row has left by
//     the database clock, minus Margin. Readers see only committed rows,
//     so a rolled-back renewal extends nothing.

// fencer makes the fencing checks and the term-checked writes of a
// lease's data. It owns no state.
type fencer struct {
	*shared
	store  fenceStore
	data   dataStore
	admin  *Admin
	keeper *keeper
}

// check is the fencing check of term t inside tx, by this process: the
// renewal of s inside tx where writers exclude each other (s is nil when
// this process does not hold and trust t), then the Admin's check.
func (f *fencer) check(tx *gorm.DB, t Token, s *session) error {
	if err := requireTransaction(tx, fmt.Sprintf("lease %q epoch %d", t.Name, t.Epoch)); err != nil {
		return err
	}
	if s != nil && f.store.SerializesWriters() {
		ok, notice, err := f.store.RenewSessionIn(tx, s.id, f.cfg.TTL)
		if err != nil {
			return fmt.Errorf("coordination: fencing check of lease %q: renew the session in the transaction: %w", t.Name, err)
		}
		if ok {
			// The notice is committed state whether tx commits or not: a
			// resign request is acted on even while fenced transactions
			// keep the renewal loop's own statement waiting.
			s.fenceRenewals.Add(1)
			f.keeper.notice(s, notice)
		}
	}
	return f.admin.checkFence(tx, t, f.holder)
}

// readData reads the row of the lease name, with its data.
func (f *fencer) readData(ctx context.Context, name string) ([]store.Row, error) {
	return f.data.Get(ctx, []string{name})
}

// writeData writes data into the row of term t of session, only while
// that term holds it.
func (f *fencer) writeData(ctx context.Context, session string, t store.Term, data string) (bool, error) {
	return f.data.SetData(ctx, session, t, data, "")
}

// writeDataIn is writeData inside the caller's transaction tx.
func (f *fencer) writeDataIn(tx *gorm.DB, session string, t store.Term, data string) (bool, error) {
	return f.data.SetDataIn(tx, session, t, data)
}

// watchRenewal runs while the renewal statement of s is in flight on a
// database whose writers exclude each other: SQLite's busy handler does
// not notice an interrupt, so the statement may wait for the write lock
// as long as the driver's busy timeout. Whenever half the trust left
// passes with the statement still waiting, the session row is read
// (trustFromSession). The returned stop ends the watch and reports
// whether any read found the session renewed by fenced transactions.
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
// statement could not write, and moves the trust deadline of s to the
// read's start plus the time the row has left by the database clock (at
// most TTL), minus Margin, when that is later. It reports whether a
// renewal committed in a fenced transaction extended the deadline.
func (k *keeper) trustFromSession(ctx context.Context, s *session) bool {
	start := time.Now()
	left := s.left()
	if left <= 0 {
		return false
	}
	opCtx, cancel := context.WithTimeout(ctx, min(k.cfg.RenewInterval, left))
	row, ok, err := k.store.ReadSession(opCtx, s.id)
	cancel()
	if err != nil {
		k.log.Debug("reading the session while the renewal waits failed", zap.Error(err))
		return false
	}
	if !ok || !row.Live() {
		return false
	}
	at := int64(start.Sub(k.base) + k.cfg.trustFor(row.ExpiresAt.Sub(row.Now)))
	fenced := s.fenceRenewals.Swap(0) > 0
	if at <= s.deadline.Load() || !s.extend(at) {
		return false
	}
	return fenced
}
