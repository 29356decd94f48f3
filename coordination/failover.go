package coordination

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// A failover of the database to an asynchronous standby can lose the last
// writes the old primary acknowledged: acquires, renewals, releases. The
// store records the change of database incarnation, holds every lease off
// for a TTL, and takes new epochs above anything the old primary could
// have issued (internal/store/incarnation.go). What is left to the holder
// is its own terms: a session's renewal succeeds only in the incarnation
// the session was last checked in, so the first renewal after a failover
// fails, and renewSession checks the session's terms against the new
// primary's rows before any of them is trusted again.

// errLostInFailover is the cause of a term that a failover of the
// database lost: the new primary does not show it.
var errLostInFailover = fmt.Errorf("%w: the database failed over, and the new primary does not show this term", ErrLeaseLost)

// probeFailover asks the store whether the database can say which
// incarnation of the server answers (store.Failover.ProbeFailover), before
// any other statement runs. Where it cannot, the coordinator works on
// without failover detection and says so once.
func probeFailover(ctx context.Context, st schemaStore, log *zap.Logger) error {
	unsupported, err := st.ProbeFailover(ctx)
	if unsupported != nil {
		log.Warn("this database cannot say which incarnation of the server answers; a failover to a standby that lost writes is not detected (docs/operations.md, High availability of the database)",
			zap.Error(unsupported))
	}
	return err
}

// renewSession sends the session's renewal. If the database renewed
// nothing because it failed over since the session was last checked
// (store.Failover.Rebind), the terms the new primary does not show are
// dropped, the ones it shows but this process does not hold are released,
// and the renewal is sent again. ok is false when the session is over.
func (k *keeper) renewSession(ctx context.Context, s *session) (ok bool, notice int64, err error) {
	ok, notice, err = k.store.RenewSession(ctx, s.id, k.cfg.TTL)
	if err != nil || ok {
		return ok, notice, err
	}
	terms, live, err := k.store.Rebind(ctx, s.id)
	if err != nil {
		return false, 0, fmt.Errorf("check the session after a database failover: %w", err)
	}
	if !live {
		return false, 0, nil
	}
	k.keepTerms(ctx, s, terms)
	return k.store.RenewSession(ctx, s.id, k.cfg.TTL)
}

// keepTerms is the check of a session's terms after a failover: each term
// of s that the new primary's rows (terms) do not show at its epoch ends
// now, with cause lossFailover; each one they show that this process does
// not hold is released, unless an acquire is under way on s, whose terms
// may not have been handed over yet.
func (k *keeper) keepTerms(ctx context.Context, s *session, terms []store.Term) {
	shown := make(map[string]int64, len(terms))
	for _, t := range terms {
		shown[t.Name] = t.Epoch
	}
	kept, dropped := k.terms.keep(s, shown)
	k.mu.Lock()
	busy := s.busy > 0
	k.mu.Unlock()
	k.log.Warn("database failed over; checked this process's terms against the new primary",
		zap.String("session", s.id), zap.Int("kept", kept), zap.Int("dropped", dropped), zap.Int("unknown", len(shown)))
	if len(shown) == 0 || busy {
		return
	}
	stray := make([]store.Term, 0, len(shown))
	for name, epoch := range shown {
		stray = append(stray, store.Term{Name: name, Epoch: epoch})
	}
	rctx, cancel := context.WithTimeout(ctx, k.cfg.ShutdownTimeout)
	defer cancel()
	if _, err := k.store.Release(rctx, s.id, stray); err != nil {
		k.log.Warn("could not release terms the new primary shows but this process does not hold; they are free once its session ends",
			zap.Int("leases", len(stray)), zap.Error(err))
	}
}
