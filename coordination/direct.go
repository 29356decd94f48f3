package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// The campaigner's attempts that its callers make themselves, outside the
// campaign loop, on the one acquire path (acquireNames): a pool member's
// join (acquireDirect), Election.TryAcquire and the try-locks
// (tryAcquire), and the start of the terms they take (startTerm). A keyed
// lock's first attempt (Locks.attempt) takes its term with startTerm too.

// acquireDirect takes a lease that only this process ever competes for
// (a pool member row) without going through the campaign loop. Its error
// wraps ErrNotAcquired when another live session has the row, and
// ErrSessionLost when this process stopped trusting its session while the
// row was taken.
func (cp *campaigner) acquireDirect(ctx context.Context, name string) (*Lease, error) {
	if err := cp.waitReady(ctx); err != nil {
		return nil, err
	}
	kept, done := cp.acquiring([]string{name}, anyLease)
	defer done()
	if len(kept) == 0 {
		return nil, fmt.Errorf("%w: %q: another acquire of this process is attempting it", ErrNotAcquired, name)
	}
	var l *Lease
	var startErr error
	taken := false
	_, err := cp.acquireNames(ctx, []string{name}, []string{name}, func(name string, epoch int64, s *session) {
		taken = true
		l, startErr = cp.startTerm(name, epoch, s, nil)
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
func (cp *campaigner) tryAcquire(ctx context.Context, e *Election) (*Lease, error) {
	if err := cp.waitReady(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cp.cfg.roundTimeout(1))
	defer cancel()
	name := e.key
	if cp.health.unhealthyNow() {
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w", name, errUnhealthyNow)
	}
	r, exists, err := readOne(ctx, cp.store, name)
	if err != nil {
		return nil, fmt.Errorf("coordination: try to acquire lease %q: read: %w", name, err)
	}
	switch {
	case exists && r.Live() && r.Session != cp.keeper.sessionID():
		return nil, notAcquired(r)
	case exists && r.ReservedAgainst(cp.holder):
		return nil, fmt.Errorf("%w: lease %q: a resign prefers %q as the next holder until %s by the database clock",
			ErrNotAcquired, name, r.PreferredHolder, r.PreferredUntil.Format(time.RFC3339Nano))
	case cp.holdOffs.holding(name, r, exists):
		return nil, fmt.Errorf("%w: lease %q: this process resigned it and holds off for up to TTL (%v) so another can take over",
			ErrNotAcquired, name, cp.cfg.TTL)
	}
	if !takeable(r, exists, cp.keeper.sessionID(), cp.holder) {
		return nil, notAcquired(r)
	}
	var missing []string
	if !exists {
		missing = []string{name}
	}
	var l *Lease
	var startErr error
	taken := false
	// A round still under way for a withdrawn campaign of a keyed lock
	// or a semaphore slot, or the give-back of an earlier attempt that
	// reported failure (giveback.go), keeps the attempt off the row
	// (acquiring). Neither is another holder: the caller may try again.
	kept, done := cp.acquiring([]string{name}, anyLease)
	if len(kept) == 0 {
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w: an acquire or give-back of this process is under way on it; try again", name, ErrBusy)
	}
	_, err = cp.acquireNames(ctx, kept, missing, func(name string, epoch int64, s *session) {
		taken = true
		l, startErr = cp.startTerm(name, epoch, s, e)
	})
	done()
	switch {
	case err != nil:
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w", name, err)
	case startErr != nil:
		return nil, startErr
	case taken:
		return l, nil
	}
	// Another process took the lease between the read and the acquire.
	if r, exists, err := readOne(ctx, cp.store, name); err == nil && exists && r.Live() {
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

// startTerm turns a term acquired outside the campaign loop into a Lease
// of e (nil for a pool membership), unless the coordinator is shutting
// down (ErrClosed) or the session lost this process's trust while the term
// was taken (ErrSessionLost): then the term is given back and the error
// returned.
func (cp *campaigner) startTerm(name string, epoch int64, s *session, e *Election) (*Lease, error) {
	cp.mu.Lock()
	l, err := cp.terms.hold(name, epoch, s, e)
	if err == nil {
		cp.seenLocked(e, epoch)
	}
	cp.mu.Unlock()
	switch {
	case errors.Is(err, ErrClosed):
		cp.releaser.giveBack(cp.log, cp.cfg.ShutdownTimeout, s, name, epoch)
		return nil, ErrClosed
	case err != nil:
		cp.releaser.giveBack(cp.log, cp.cfg.ShutdownTimeout, s, name, epoch)
		return nil, fmt.Errorf("%w: lease %q: this process stopped trusting its session while the lease was taken; the term is given back", err, name)
	}
	return l, nil
}

// readOne reads the row of one lease; it reports false when there is none.
func readOne(ctx context.Context, st leaseOps, name string) (store.Row, bool, error) {
	rows, err := st.Get(ctx, []string{name})
	if err != nil || len(rows) == 0 {
		return store.Row{}, false, err
	}
	return rows[0], true, nil
}
