package coordination

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// Where writers exclude each other (SQLite), fenced transactions can keep
// the renewal statement out past the trust deadline. So the fencing check
// renews the session inside the caller's transaction, and while the
// renewal statement waits the keeper trusts what the session row, as
// committed, shows.

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
func (f *fencer) check(tx *gorm.DB, t Token, s *session) (err error) {
	if err := requireTransaction(tx, fmt.Sprintf("lease %q epoch %d", t.Key, t.Epoch)); err != nil {
		return err
	}
	span := fenceSpan(f.tracer, tx, t)
	defer func() { endSpan(span, err) }()
	if s != nil && f.store.SerializesWriters() {
		ok, notice, err := f.store.RenewSessionIn(tx, s.id, f.cfg.TTL)
		if err != nil {
			return fmt.Errorf("coordination: fencing check of lease %q: renew the session in the transaction: %w", t.Key, err)
		}
		if ok {
			// The notice is committed state whether or not tx commits: a
			// resign is acted on while the renewal statement waits.
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

// watchRenewal reads the session row (trustFromSession) whenever half the
// trust left passes while the renewal statement of s waits for the write
// lock. The returned stop ends the watch and reports whether any read
// found the session renewed by fenced transactions.
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

// trustFromSession reads the session row and moves the trust deadline of
// s to the read's start plus the time the row has left (at most TTL),
// minus Margin, when that is later. It reports whether a renewal committed
// in a fenced transaction extended the deadline.
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
