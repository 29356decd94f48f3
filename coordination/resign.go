package coordination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// The holder's side of a resign request (Admin.Resign records it, with a
// bump of the notice counter of the holder's session): when a renewal
// returns a new counter, the loop reads which of its terms have a request
// and ends those with ErrResigned. A request for epoch E never ends a
// later term.

// resignState is the loop's state of the resign requests.
type resignState struct {
	session *session // whose notices handled counts
	handled int64    // the notice counter up to which requests were read
	reading bool
}

// readResigns reads, in a goroutine, the resign requests for the current
// session's terms when a renewal returned a notice counter not read yet,
// and ends those terms. A failed read, or one while an acquire is under
// way, is tried again after the next renewal.
func (st *termState) readResigns() {
	r := &st.resigns
	s := st.t.keeper.current.Load()
	if r.reading || s == nil || s.ctx.Err() != nil {
		return
	}
	if r.session != s {
		r.session, r.handled = s, 0
	}
	notice := s.notice.Load()
	if notice == r.handled {
		return
	}
	var names []string
	for name, tm := range st.held {
		if tm.sess == s && !poolMemberRow(name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		st.resigned(s, notice, nil)
		return
	}
	r.reading = true
	t, ctx := st.t, st.ctx
	st.spawn(func() {
		opCtx, cancel := context.WithTimeout(ctx, t.cfg.roundTimeout(len(names)))
		terms, err := t.resign.PendingResigns(opCtx, s.id, names)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.log.Warn("could not read resign requests; trying again after the next renewal", zap.Error(err))
			t.events.emit(Event{Kind: EventError, Err: fmt.Errorf("read resign requests: %w", err)})
		}
		t.call(func(st *termState) {
			st.resigns.reading = false
			if err == nil {
				st.resigned(s, notice, terms)
			}
		})
	})
}

// resigned ends, with ErrResigned, the terms of s that the requests read
// up to notice name, holding off each lease first.
func (st *termState) resigned(s *session, notice int64, terms []store.Term) {
	if s.acquiring.Load() == 0 {
		// An acquire under way may have committed terms not in the set
		// yet, whose requests would go unread.
		st.resigns.handled = notice
	}
	for _, tm := range terms {
		held := st.held[tm.Name]
		if held == nil || held.sess != s || held.epoch != tm.Epoch {
			continue // a request for a term that is over already
		}
		st.holdOffs[tm.Name] = time.Now().Add(st.t.cfg.resignHoldOff())
		st.lose(held, fmt.Errorf("%w: lease %q epoch %d: another process asked this holder to hand the lease over",
			ErrResigned, tm.Name, tm.Epoch), lossResigned)
	}
}

// holdingOff reports whether this process holds off taking the lease name
// after resigning it: for one hold-off after the term ended, unless r,
// the lease as just read, shows another live holder, which ends it.
func (st *termState) holdingOff(name string, r store.Row, exists bool) bool {
	until, ok := st.holdOffs[name]
	if !ok {
		return false
	}
	if (exists && r.Live() && r.Holder != st.t.holder) || !time.Now().Before(until) {
		delete(st.holdOffs, name)
		return false
	}
	return true
}
