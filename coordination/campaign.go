package coordination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// campaigner owns this process's campaigns: the Campaign calls waiting
// for a lease, the elections observed and their observers, the wake-ups
// received for campaigned leases. It consults the hold-offs after a
// resign (holdOffs) before each attempt. It runs the campaign loop and is
// the one acquire path (acquireNames), for the loop, TryAcquire, pool
// joins and the first attempt of a keyed lock alike. Its lock is taken
// before the term set's, never after; the hold-offs' after it.
type campaigner struct {
	*shared
	store    leaseOps
	keeper   *keeper
	terms    *termSet
	releaser *releaser
	health   *healthGate
	holdOffs *holdOffs
	unsure   *unsureAcquires // acquires reported failed that may have taken leases (giveback.go)

	wake      chan struct{} // buffered 1: run a round now
	wokenWake chan struct{} // buffered 1: woken holds names to attempt at once

	mu         sync.Mutex
	campaigns  map[string]*campaign
	observed   map[string]*Election // elections with observers
	elections  map[string]*Election
	woken      map[string]struct{} // campaigned leases a notification named, not attempted yet (acquireWoken)
	wokenAt    time.Time           // when the latest of them arrived
	attempting map[string]struct{} // leases an acquire of this process is attempting (acquiring)
}

func newCampaigner(sh *shared, st leaseOps, k *keeper, t *termSet, r *releaser, h *healthGate, ho *holdOffs) *campaigner {
	return &campaigner{
		shared: sh, store: st, keeper: k, terms: t, releaser: r, health: h, holdOffs: ho,
		unsure:     newUnsureAcquires(sh, st, t),
		wake:       make(chan struct{}, 1),
		wokenWake:  make(chan struct{}, 1),
		campaigns:  make(map[string]*campaign),
		observed:   make(map[string]*Election),
		elections:  make(map[string]*Election),
		woken:      make(map[string]struct{}),
		attempting: make(map[string]struct{}),
	}
}

// wakeRound makes the loop run a round now.
func (cp *campaigner) wakeRound() { poke(cp.wake) }

// campaignLoop polls the leases this process campaigns for and acquires
// those that are free or expired. A round costs a bounded number of
// statements however many leases it covers: one read per thousand names,
// then, only when some lease can be taken, one insert per few hundred
// missing rows, the session's start or renewal if it needs one, and one
// acquire per few hundred takeable leases. The leases observed
// (Election.Observe) join the round's read and cost nothing more.
func (cp *campaigner) loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cp.wokenWake:
			cp.acquireWoken(ctx)
			continue
		case <-cp.wake:
		case <-timer.C:
		}
		names, after := cp.roundNames()
		if len(names) > 0 {
			cp.pollOnce(ctx, names)
		}
		if after != nil {
			(*after)(len(names))
		}
		cp.unsure.giveBack(ctx, func(names []string) ([]string, func()) { return cp.acquiring(names, uncampaignedLease) })
		timer.Reset(pollJitter(cp.cfg.RetryInterval))
	}
}

// roundNames returns, sorted, the names a round reads: those campaigned
// for and those observed; and the test hook to call after the round.
func (cp *campaigner) roundNames() ([]string, *func(int)) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	names := make([]string, 0, len(cp.campaigns)+len(cp.observed))
	for n := range cp.campaigns {
		names = append(names, n)
	}
	for n := range cp.observed {
		if cp.campaigns[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, cp.signals.afterRound.Load()
}

// pollOnce reads the campaigned and observed leases and acquires, in one
// batch, the campaigned ones that are free, expired, or held by this
// process's own session.
func (cp *campaigner) pollOnce(ctx context.Context, names []string) {
	opCtx, cancel := context.WithTimeout(ctx, cp.cfg.roundTimeout(len(names)))
	defer cancel()
	readStart := time.Now()
	rows, err := cp.store.Get(opCtx, names)
	if err != nil {
		cp.campaignFailed("", fmt.Errorf("read leases: %w", err))
		return
	}
	byName := make(map[string]store.Row, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	mine := cp.keeper.sessionID()
	var want []string
	for _, name := range names {
		r, exists := byName[name]
		if campaigned := cp.saw(name, r, exists); !campaigned || !takeable(r, exists, mine, cp.holder) || cp.holdOffs.holding(name, r, exists) {
			continue
		}
		want = append(want, name)
	}
	if len(want) == 0 || cp.health.unhealthyNow() {
		return
	}
	want, done := cp.acquiring(want, campaignedLease)
	defer done()
	var missing []string
	for _, name := range want {
		if _, exists := byName[name]; !exists {
			missing = append(missing, name)
		}
	}
	// The handoff gap of a grant runs from the end of the previous term,
	// by the database clock at the read, plus the time since the read
	// started: at most one read and one acquire too long.
	failed, err := cp.acquireNames(opCtx, want, missing, func(name string, epoch int64, s *session) {
		gap := time.Duration(-1)
		if free, known := freeFor(byName[name]); known {
			gap = free + time.Since(readStart)
		}
		cp.grant(name, epoch, s, gap)
	})
	cp.acquireFailed(failed, err)
}

// acquireFailed reports the failure of a round's acquire (acquireNames),
// if any.
func (cp *campaigner) acquireFailed(failed []string, err error) {
	switch {
	case err == nil || errors.Is(err, context.Canceled):
	case failed == nil:
		cp.campaignFailed("", err)
	default:
		// The acquire may or may not have committed: each lease is
		// reported, so that an epoch taken without a term is accounted
		// for.
		cp.log.Warn("campaign attempt failed; retrying", zap.Int("leases", len(failed)), zap.Error(err))
		for _, name := range failed {
			cp.events.emit(Event{Kind: EventError, Lease: name, Err: err})
		}
	}
}

// acquireWoken attempts at once the leases a release notification named
// (wakeFor) that this process campaigns for, without the round's read
// (acquireUnread). The handoff gap is counted from the notification's
// arrival, which follows the release's commit.
func (cp *campaigner) acquireWoken(ctx context.Context) {
	cp.mu.Lock()
	want := make([]string, 0, len(cp.woken))
	for name := range cp.woken {
		if cp.campaigns[name] != nil {
			want = append(want, name)
		}
	}
	clear(cp.woken)
	at, after := cp.wokenAt, cp.signals.afterWoken.Load()
	cp.mu.Unlock()
	attempted, failed, err := cp.acquireUnread(ctx, want, campaignedLease, func(name string, epoch int64, s *session) {
		cp.grant(name, epoch, s, time.Since(at))
	})
	cp.acquireFailed(failed, err)
	if after != nil {
		(*after)(attempted)
	}
}

// acquireUnread attempts names at once, without a read of their rows: a
// wake-up's attempt (acquireWoken) and a keyed lock's first (Locks.Lock).
// The acquire statement itself takes only a lease that is free, expired
// or held by a dead session, not reserved for another process, and not
// held off after a failover of the database (store.Row.Takeable), so a
// stale or spurious wake-up, or a key another process holds, takes
// nothing. Leases this process resigned and holds off are left out, and
// nothing is attempted while the health gate is closed: the same gate as
// a round's; of is as for acquiring. A released
// lock row was deleted: it is created again first. Each lease taken goes
// to start (acquireNames). attempted is how many names were left once the
// hold-offs were left out; failed and err are acquireNames's.
func (cp *campaigner) acquireUnread(ctx context.Context, names []string, of attemptOf, start func(name string, epoch int64, s *session)) (attempted int, failed []string, err error) {
	names = slices.DeleteFunc(names, func(name string) bool { return cp.holdOffs.holding(name, store.Row{}, false) })
	if len(names) == 0 || cp.health.unhealthyNow() {
		return len(names), nil, nil
	}
	attempted = len(names)
	names, done := cp.acquiring(names, of)
	defer done()
	if len(names) == 0 {
		return attempted, nil, nil
	}
	sort.Strings(names)
	opCtx, cancel := context.WithTimeout(ctx, cp.cfg.roundTimeout(len(names)))
	defer cancel()
	var missing []string
	for _, name := range names {
		if _, lock := lockFloor(name); lock {
			missing = append(missing, name)
		}
	}
	failed, err = cp.acquireNames(opCtx, names, missing, start)
	return attempted, failed, err
}

// attemptOf says which leases acquiring keeps of those no other acquire
// of this process is attempting.
type attemptOf int

const (
	anyLease          attemptOf = iota // a direct attempt: TryAcquire, a pool join, a keyed lock's first
	campaignedLease                    // a round's or a wake-up's: those still campaigned for
	uncampaignedLease                  // a give-back's (giveback.go): those nothing campaigns for
)

// acquiring keeps, of names, those that no other acquire of this process
// is attempting and that of says, and marks them attempted until done is
// called. Two acquires of this process
// thus never take one lease at once, and a round never takes a lease
// whose campaign was withdrawn since its read: its acquire would take
// the row again from a term this process holds under the same session
// (a keyed lock that a later Lock took with its own first attempt), and
// the term it started, with nobody to hand it to, would be given back.
func (cp *campaigner) acquiring(names []string, of attemptOf) (kept []string, done func()) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	kept = make([]string, 0, len(names))
	for _, name := range names {
		_, busy := cp.attempting[name]
		campaigned := cp.campaigns[name] != nil
		if busy || (of == campaignedLease && !campaigned) || (of == uncampaignedLease && campaigned) {
			continue
		}
		cp.attempting[name] = struct{}{}
		kept = append(kept, name)
	}
	return kept, func() {
		cp.mu.Lock()
		defer cp.mu.Unlock()
		for _, name := range kept {
			delete(cp.attempting, name)
		}
	}
}

// takeable reports whether an acquire under the session mine ("" for
// none) by holder would take the lease of r: a missing row is created by
// EnsureRows and then taken; an existing one as Row.Takeable says.
func takeable(r store.Row, exists bool, mine, holder string) bool {
	return !exists || r.Takeable(mine, holder)
}

// acquireNames is the one acquire path of the coordinator. It creates the
// rows named in missing, makes sure of a session with at least
// RenewInterval of trust left (ensureSession), and acquires names under it
// (Store.AcquireEach, one statement per chunk of store.WriteChunk names).
// Each chunk's terms are handed to start, with the session they ride on,
// as soon as the chunk's statement has succeeded and while the session is
// still marked in use, so that the first terms of a long round ride on the session's
// renewals while the rest are taken. A name that gets no term is held by
// another live session.
//
// It stops at the first error. failed is then the chunk whose acquire
// failed, which started no term though its statement may have committed
// (see Store.Acquire), or nil when the rows or the session could not be
// had and nothing was acquired.
func (cp *campaigner) acquireNames(ctx context.Context, names, missing []string, start func(name string, epoch int64, s *session)) (failed []string, err error) {
	if cp.health.unhealthyNow() {
		return nil, errUnhealthyNow
	}
	if len(missing) > 0 {
		if err := cp.store.EnsureRows(ctx, missing); err != nil {
			return nil, fmt.Errorf("create lease rows: %w", err)
		}
	}
	s, err := cp.keeper.ensureSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	defer cp.keeper.using(s)()
	sent := time.Now() // when the current statement was sent
	failed, err = cp.store.AcquireEach(ctx, s.id, cp.holder, names, func(terms []store.Term) {
		cp.metrics.acquireRoundTrip(time.Since(sent))
		for _, t := range terms {
			start(t.Name, t.Epoch, s)
		}
		sent = time.Now()
	})
	if err != nil {
		cp.metrics.acquireRoundTrip(time.Since(sent))
		cp.unsure.note(s.id, failed)
		return failed, fmt.Errorf("acquire: %w", err)
	}
	return nil, nil
}

// campaignFailed logs and reports a failed campaign step; err says which.
func (cp *campaigner) campaignFailed(name string, err error) {
	if errors.Is(err, context.Canceled) {
		return // shutting down
	}
	cp.log.Warn("campaign attempt failed; retrying", zap.String("lease", name), zap.Error(err))
	cp.events.emit(Event{Kind: EventError, Lease: name, Err: err})
}

// saw hands what a round read of a lease to those who watch it: it
// emits EventLeaderChanged when a campaigned or observed lease shows
// another live holder or epoch than at the previous look, and offers the
// lease to the election's observers. It reports whether the lease is
// campaigned for.
func (cp *campaigner) saw(name string, r store.Row, exists bool) (campaigned bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	e := cp.observed[name]
	if c := cp.campaigns[name]; c != nil {
		e, campaigned = c.e, true
	}
	if e == nil {
		return false
	}
	if len(e.observers) > 0 {
		info := LeaseInfo{Name: name}
		if exists {
			info = leaseInfo(r, cp.holder)
		}
		if !info.Live {
			info.Holder, info.Mine = "", false
		}
		for _, o := range e.observers {
			o.offer(info)
		}
	}
	holder, epoch := "", int64(0)
	if exists && r.Live() {
		holder, epoch = r.Holder, r.Epoch
	}
	if e.seen && e.seenHolder == holder && e.seenEpoch == epoch {
		return campaigned
	}
	e.seen, e.seenHolder, e.seenEpoch = true, holder, epoch
	cp.events.emit(Event{Kind: EventLeaderChanged, Lease: name, Holder: holder, Epoch: epoch})
	return campaigned
}

// grant turns a successful acquire into a Lease for the waiting campaign,
// or gives the term back at once when nobody waits any more, the
// coordinator is shutting down or the session lost this process's trust.
// gap is the handoff gap before the acquire, negative when unknown.
func (cp *campaigner) grant(name string, epoch int64, s *session, gap time.Duration) {
	cp.mu.Lock()
	c := cp.campaigns[name]
	var l *Lease
	if c != nil {
		l, _ = cp.terms.hold(name, epoch, s, c.e)
	}
	if l == nil {
		cp.mu.Unlock()
		cp.releaser.giveBack(cp.log, cp.cfg.ShutdownTimeout, s, name, epoch)
		return
	}
	delete(cp.campaigns, name)
	cp.seenLocked(c.e, epoch)
	if gap >= 0 {
		cp.metrics.handoff(gap)
	}
	c.result <- l
	cp.mu.Unlock()
}

// seenLocked notes that e's lease is now held by this process at epoch:
// its own term is no leader change for it. cp.mu must be held.
func (cp *campaigner) seenLocked(e *Election, epoch int64) {
	if e != nil {
		e.seen, e.seenHolder, e.seenEpoch = true, cp.holder, epoch
	}
}
