package coordination

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// resignReader reads the resign requests for this process's terms, each
// time a renewal returned a notice counter not yet handled, and ends the
// terms they name. It owns nothing but its wake-up: the notice counters
// are the keeper's, the terms the term set's, the hold-offs their own.
type resignReader struct {
	*shared
	store    resignStore
	keeper   *keeper
	terms    *termSet
	holdOffs *holdOffs
	wake     chan struct{} // buffered 1: a notice counter changed
}

func newResignReader(sh *shared, st resignStore, k *keeper, t *termSet, h *holdOffs) *resignReader {
	return &resignReader{shared: sh, store: st, keeper: k, terms: t, holdOffs: h, wake: make(chan struct{}, 1)}
}

// loop reads the resign requests of the current session each time a
// renewal returned a notice counter not yet handled.
func (r *resignReader) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.read(ctx)
	}
}

// read reads which leases of the current session have a resign request
// for their current term, and ends those terms. A failed read, and a read
// while an acquire is under way on the session, are tried again after the
// next renewal, which finds the counter still unhandled.
func (r *resignReader) read(ctx context.Context) {
	s, notice, ok := r.keeper.pendingNotice()
	if !ok {
		return
	}
	names := r.terms.electionsOf(s)
	var terms []store.Term
	if len(names) > 0 {
		opCtx, cancel := context.WithTimeout(ctx, r.cfg.roundTimeout(len(names)))
		var err error
		terms, err = r.store.PendingResigns(opCtx, s.id, names)
		cancel()
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				r.log.Warn("could not read resign requests; trying again after the next renewal", zap.Error(err))
				r.events.emit(Event{Kind: EventError, Err: fmt.Errorf("read resign requests: %w", err)})
			}
			return
		}
	}
	r.keeper.handledNotice(s, notice)
	r.terms.resign(s, terms, r.holdOffs.add)
}

// holdOffs are the leases this process resigned and does not take again
// for a while, so that another process takes over. The resign reader adds
// them; the campaigner consults them before each attempt. Its lock is
// taken last: it calls no other owner.
type holdOffs struct {
	holder string        // this process's holder string
	hold   time.Duration // how long a hold-off lasts (Config.resignHoldOff)

	mu    sync.Mutex
	until map[string]time.Time // by lease name
}

func newHoldOffs(holder string, hold time.Duration) *holdOffs {
	return &holdOffs{holder: holder, hold: hold, until: make(map[string]time.Time)}
}

// add makes this process hold off taking the lease name, which it
// resigned, for the hold-off's length (holding).
func (h *holdOffs) add(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until[name] = time.Now().Add(h.hold)
}

// holding reports whether this process holds off taking the lease name
// after resigning it: for one hold-off after the term ended, unless r,
// the lease as just read, shows another live holder, which ends the
// hold-off.
func (h *holdOffs) holding(name string, r store.Row, exists bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	until, ok := h.until[name]
	if !ok {
		return false
	}
	if (exists && r.Live() && r.Holder != h.holder) || !time.Now().Before(until) {
		delete(h.until, name)
		return false
	}
	return true
}
