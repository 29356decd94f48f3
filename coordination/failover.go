package coordination

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// After a failover of the database, a session's first renewal renews
// nothing, and its terms are checked against the new primary's rows
// (rebind) before any of them is trusted again.

// errLostInFailover is the cause of a term that a failover of the
// database lost: the new primary does not show it.
var errLostInFailover = fmt.Errorf("%w: the database failed over, and the new primary does not show this term", ErrLeaseLost)

// probeDatabase asks the store whether the database can say which
// incarnation of the server answers, and whether its connections wait for
// locks (SQLite's busy timeout). Where either is not so, the coordinator
// works on and says so once.
func probeDatabase(ctx context.Context, st schemaStore, log *zap.Logger) error {
	unsupported, err := st.ProbeFailover(ctx)
	if unsupported != nil {
		log.Warn("this database cannot say which incarnation of the server answers; a failover to a standby that lost writes is not detected (docs/operations.md, High availability of the database)",
			zap.Error(unsupported))
	}
	if err != nil {
		return err
	}
	advice, err := st.CheckBusyTimeout(ctx)
	if advice != nil {
		log.Warn("the database connections do not wait for locks; set a busy timeout in the DSN", zap.Error(advice))
	}
	return err
}

// rebind is the keeper's request to the term set after a failover: end
// the terms of s that shown (the new primary's rows, by name) does not
// have at their epoch, and say which terms shown has that this process
// does not hold, to release.
type rebind struct {
	s     *session
	shown map[string]int64
	reply chan rebound // buffered 1
}

type rebound struct {
	kept, dropped, unknown int
	stray                  []store.Term // nil while an acquire is under way on s: its terms may not have been handed over yet
}

// renewSession sends the session's renewal. If the database renewed
// nothing because it failed over since the session was last checked, the
// terms are checked against the new primary (rebind) and the renewal is
// sent again. ok is false when the session is over.
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
	shown := make(map[string]int64, len(terms))
	for _, t := range terms {
		shown[t.Name] = t.Epoch
	}
	r := rebind{s: s, shown: shown, reply: make(chan rebound, 1)}
	select {
	case k.rebinds <- r:
	case <-ctx.Done():
		return false, 0, ctx.Err()
	}
	res := <-r.reply
	k.log.Warn("database failed over; checked this process's terms against the new primary",
		zap.String("session", s.id), zap.Int("kept", res.kept), zap.Int("dropped", res.dropped), zap.Int("unknown", res.unknown))
	if len(res.stray) > 0 {
		k.releaseStray(ctx, s, res.stray)
	}
	return k.store.RenewSession(ctx, s.id, k.cfg.TTL)
}
