package coordination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/backoff"
	"github.com/leasehold/leasehold/internal/store"
)

// A campaign round reads every lease campaigned for or observed and
// acquires those that are free, expired or held by this process's own
// session; a wake-up for a campaigned lease attempts it at once, without
// the read. One round or woken attempt runs at a time, in a goroutine of
// its own, and comes back to the loop for every decision.

// electionState is the loop's state of one election.
type electionState struct {
	key        string
	attrs      metric.MeasurementOption
	transient  bool // a keyed lock's or a semaphore slot's: forgotten once idle
	busy       bool // a Campaign, TryAcquire or unreleased Lease of it is active
	seen       bool // seenHolder and seenEpoch are those of the last look
	seenHolder string
	seenEpoch  int64
	observers  []*observer
}

// grantee is who a new term goes to: the election it is of, nil for a
// pool membership or a term no election state follows; the attributes of
// its metrics; and what its first Release calls.
type grantee struct {
	es        *electionState
	attrs     metric.MeasurementOption
	onRelease func()
}

// campaign is one waiting Campaign call.
type campaign struct {
	grantee
	result chan *Lease // buffered 1: the loop never blocks on it
}

// campaignState is the loop's state of its rounds and woken attempts.
type campaignState struct {
	ready   bool // Run is ready: rounds may start
	due     bool // a round is due
	running bool // a round or a woken attempt is under way
	timer   alarm
	woken   map[string]struct{} // campaigned leases a wake-up named, not attempted yet
	wokenAt time.Time
	outage  backoff.Retry // consecutive failed attempts, for one warning per outage
}

func (c *campaignState) init() { c.woken = make(map[string]struct{}) }

// attemptOf says which names attempt keeps of those no other acquire of
// this process is attempting.
type attemptOf int

const (
	anyLease          attemptOf = iota // a direct attempt: TryAcquire, a pool join, a keyed lock's first
	campaignedLease                    // a round's or a wake-up's: those still campaigned for
	uncampaignedLease                  // a give-back's: those nothing campaigns for
)

// election returns the state of the election key, made the first time.
func (st *termState) election(key string, attrs metric.MeasurementOption, transient bool) *electionState {
	es := st.elections[key]
	if es == nil {
		es = &electionState{key: key, attrs: attrs, transient: transient}
		st.elections[key] = es
	}
	return es
}

// idle marks es no longer busy; a transient election is forgotten.
func (st *termState) idle(es *electionState) {
	es.busy = false
	if es.transient && len(es.observers) == 0 && st.elections[es.key] == es {
		delete(st.elections, es.key)
	}
}

// claim marks the election e busy for a Campaign (c not nil, which the
// rounds then serve) or a TryAcquire.
func (st *termState) claim(e *Election, c *campaign) error {
	if st.closing {
		return ErrClosed
	}
	es := st.election(e.key, e.attrs, e.transient)
	if es.busy {
		return fmt.Errorf("%w: %q", ErrBusy, e.key)
	}
	es.busy = true
	if c != nil {
		c.es, c.attrs = es, e.attrs
		st.campaigns[e.key] = c
		st.wakeRound()
	}
	return nil
}

// abort withdraws a campaign. It returns a lease granted in the meantime,
// which the caller releases; without one, the election is idle again.
func (st *termState) abort(key string, c *campaign) *Lease {
	if st.campaigns[key] == c {
		delete(st.campaigns, key)
	}
	select {
	case l := <-c.result:
		return l
	default:
		if c.es != nil {
			st.idle(c.es)
		}
		return nil
	}
}

// closeCampaigns stops campaigning and observing.
func (st *termState) closeCampaigns() {
	clear(st.campaigns)
	for _, es := range st.elections {
		for _, o := range es.observers {
			o.close()
		}
		es.observers = nil
	}
}

// attempt keeps, of names, those that no other acquire of this process is
// attempting and that of says, and marks them attempted until unattempt.
// Two acquires of this process thus never take one lease at once, and a
// round never takes a lease whose campaign was withdrawn since its read.
func (st *termState) attempt(names []string, of attemptOf) []string {
	kept := make([]string, 0, len(names))
	for _, name := range names {
		_, busy := st.attempting[name]
		campaigned := st.campaigns[name] != nil
		if busy || (of == campaignedLease && !campaigned) || (of == uncampaignedLease && campaigned) {
			continue
		}
		st.attempting[name] = struct{}{}
		kept = append(kept, name)
	}
	return kept
}

func (st *termState) unattempt(names []string) {
	for _, name := range names {
		delete(st.attempting, name)
	}
}

// wakeRound makes a round run as soon as none is under way.
func (st *termState) wakeRound() {
	st.campaign.due = true
	st.nextCampaign()
}

// nextCampaign starts the woken attempt or the round that is due, unless
// one is under way.
func (st *termState) nextCampaign() {
	c := &st.campaign
	switch {
	case !c.ready || c.running || st.closing:
	case len(c.woken) > 0:
		st.startWoken()
	case c.due:
		st.startRound()
	}
}

// campaignDone ends a round or a woken attempt; after a round the next one
// is due a poll interval later.
func (st *termState) campaignDone(round bool) {
	st.campaign.running = false
	if round {
		st.campaign.timer.arm(pollJitter(st.t.cfg.RetryInterval))
	}
	st.nextCampaign()
}

// roundNames returns, sorted, the names a round reads: those campaigned
// for and those observed.
func (st *termState) roundNames() []string {
	names := make([]string, 0, len(st.campaigns))
	for n := range st.campaigns {
		names = append(names, n)
	}
	for n, es := range st.elections {
		if len(es.observers) > 0 && st.campaigns[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// startRound starts a round in a goroutine: the read and acquire, then
// the give-backs of acquires that may have committed.
func (st *termState) startRound() {
	c := &st.campaign
	c.due = false
	t, ctx := st.t, st.ctx
	names := st.roundNames()
	// After failed rounds the next has twice the time, up to eight times,
	// so a round a loaded database cannot finish in time is not cut short
	// at the same point forever.
	timeout := t.cfg.roundTimeout(len(names)) << min(c.outage.Failures(), 3)
	back := st.claimGiveBacks()
	c.running = true
	st.spawn(func() {
		if len(names) > 0 {
			t.round(ctx, names, timeout)
		}
		if len(back) > 0 {
			t.giveBack(ctx, back)
		}
		t.call(func(st *termState) { st.campaignDone(true) })
	})
}

// round reads names and acquires, in one batch, the campaigned ones that
// are free, expired, or held by this process's own session, within timeout.
func (t *termSet) round(ctx context.Context, names []string, timeout time.Duration) {
	opCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	readStart := time.Now()
	rows, err := t.store.Get(opCtx, names)
	if err != nil {
		t.campaignFailed(fmt.Errorf("read leases: %w", err))
		return
	}
	byName := make(map[string]store.Row, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	mine := t.keeper.sessionID()
	var want []string
	t.call(func(st *termState) { want = st.sawRound(names, byName, mine) })
	if len(want) == 0 {
		t.campaignSucceeded()
		return
	}
	defer t.call(func(st *termState) { st.unattempt(want) })
	var missing []string
	for _, name := range want {
		if _, exists := byName[name]; !exists {
			missing = append(missing, name)
		}
	}
	// The handoff gap of a grant runs from the end of the previous term,
	// by the database clock at the read, plus the time since the read
	// started: at most one read and one acquire too long.
	failed, err := t.acquire(opCtx, want, missing, func(st *termState, name string, epoch int64, s *session) {
		gap := time.Duration(-1)
		if free, known := freeFor(byName[name]); known {
			gap = free + time.Since(readStart)
		}
		st.grant(name, epoch, s, gap)
	})
	t.acquireFailed(failed, err)
}

// sawRound hands what a round read to those who watch it and returns the
// campaigned names to acquire, marked attempted.
func (st *termState) sawRound(names []string, byName map[string]store.Row, mine string) []string {
	var want []string
	for _, name := range names {
		r, exists := byName[name]
		if campaigned := st.saw(name, r, exists); !campaigned || !takeable(r, exists, mine, st.t.holder) || st.holdingOff(name, r, exists) {
			continue
		}
		want = append(want, name)
	}
	if len(want) == 0 || st.t.health.unhealthy() {
		return nil
	}
	return st.attempt(want, campaignedLease)
}

// saw offers a lease just read to its election's observers, and emits
// EventLeaderChanged when it shows another live holder or epoch than at
// the previous look. It reports whether the lease is campaigned for.
func (st *termState) saw(name string, r store.Row, exists bool) (campaigned bool) {
	es := st.elections[name]
	if c := st.campaigns[name]; c != nil {
		es, campaigned = c.es, true
	}
	if es == nil {
		return false
	}
	if len(es.observers) > 0 {
		info := LeaseInfo{Key: name}
		if exists {
			info = leaseInfo(r)
		}
		if !info.Live {
			info.Holder = ""
		}
		for _, o := range es.observers {
			o.offer(info)
		}
	}
	holder, epoch := "", int64(0)
	if exists && r.Live() {
		holder, epoch = r.Holder, r.Epoch
	}
	if es.seen && es.seenHolder == holder && es.seenEpoch == epoch {
		return campaigned
	}
	es.seen, es.seenHolder, es.seenEpoch = true, holder, epoch
	st.t.events.emit(Event{Kind: EventLeaderChanged, Key: name, Holder: holder, Epoch: epoch})
	return campaigned
}

// seenMine notes that es's lease is now held by this process at epoch:
// its own term is no leader change for it.
func (st *termState) seenMine(es *electionState, epoch int64) {
	if es != nil {
		es.seen, es.seenHolder, es.seenEpoch = true, st.t.holder, epoch
	}
}

// takeable reports whether an acquire under the session mine ("" for
// none) by holder would take the lease of r: a missing row is created and
// then taken; an existing one as Row.Takeable says.
func takeable(r store.Row, exists bool, mine, holder string) bool {
	return !exists || r.Takeable(mine, holder)
}

// grant turns a round's or a wake-up's term into a Lease for the waiting
// campaign, or gives it back when none can have it. gap is the handoff
// gap before the acquire, negative when unknown.
func (st *termState) grant(name string, epoch int64, s *session, gap time.Duration) {
	c := st.campaigns[name]
	var l *Lease
	if c != nil {
		l, _ = st.hold(name, epoch, s, c.grantee)
	}
	if l == nil {
		st.giveBackTerm(s, name, epoch)
		return
	}
	delete(st.campaigns, name)
	st.seenMine(c.es, epoch)
	if gap >= 0 {
		st.t.metrics.handoff(gap)
	}
	c.result <- l
}

// startTerm turns a term taken outside the rounds (TryAcquire, a keyed
// lock's first attempt, a pool join) into a Lease for g. When shutdown has
// begun (ErrClosed), or the session lost this process's trust meanwhile
// (ErrLeaseLost), the term is given back and the error returned.
func (st *termState) startTerm(name string, epoch int64, s *session, g grantee) (*Lease, error) {
	l, err := st.hold(name, epoch, s, g)
	switch {
	case err == nil:
		st.seenMine(g.es, epoch)
		return l, nil
	case errors.Is(err, ErrClosed):
		st.giveBackTerm(s, name, epoch)
		return nil, ErrClosed
	}
	st.giveBackTerm(s, name, epoch)
	return nil, fmt.Errorf("%w: lease %q: this process stopped trusting its session while the lease was taken; the term is given back", err, name)
}

// woke takes the names a wake-up named: those campaigned for are
// attempted at once, without a read; one only observed makes a round. A
// nil names makes a round.
func (st *termState) woke(names []string) {
	round := names == nil
	for _, n := range names {
		switch es := st.elections[n]; {
		case st.campaigns[n] != nil:
			st.campaign.woken[n] = struct{}{}
			st.campaign.wokenAt = time.Now()
		case es != nil && len(es.observers) > 0:
			round = true
		}
	}
	if round {
		st.campaign.due = true
	}
	st.nextCampaign()
}

// startWoken attempts the leases wake-ups named, in a goroutine. The
// handoff gap is counted from the wake-up's arrival, which follows the
// release's commit.
func (st *termState) startWoken() {
	c := &st.campaign
	want := make([]string, 0, len(c.woken))
	for name := range c.woken {
		if st.campaigns[name] != nil {
			want = append(want, name)
		}
	}
	clear(c.woken)
	t, ctx, at := st.t, st.ctx, c.wokenAt
	c.running = true
	st.spawn(func() {
		_, failed, err := t.acquireUnread(ctx, want, campaignedLease, func(st *termState, name string, epoch int64, s *session) {
			st.grant(name, epoch, s, time.Since(at))
		})
		t.acquireFailed(failed, err)
		t.call(func(st *termState) { st.campaignDone(false) })
	})
}

// acquire is the one acquire path of the coordinator, run by the goroutine
// that attempts. It creates the rows named in missing, takes a session with
// at least RenewInterval of trust left, and acquires names under it, one
// statement per chunk; each chunk's terms go to grant, on the loop, while
// the session is still in use. A name that gets no term is held by another
// live session. At the first error it stops: failed is the chunk whose
// statement failed (and may have committed), nil when the rows or the
// session could not be had.
func (t *termSet) acquire(ctx context.Context, names, missing []string, grant func(st *termState, name string, epoch int64, s *session)) (failed []string, err error) {
	ctx, span := t.tracer.Start(ctx, spanAcquire)
	acquired := 0
	if span.IsRecording() {
		span.SetAttributes(leasesAttr(names))
	}
	defer func() {
		span.SetAttributes(attribute.Int(attrAcquired, acquired))
		endSpan(span, err)
	}()
	if t.health.unhealthy() {
		return nil, errUnhealthyNow
	}
	if len(missing) > 0 {
		if err := t.store.EnsureRows(ctx, missing); err != nil {
			return nil, fmt.Errorf("create lease rows: %w", err)
		}
	}
	s, done, err := t.keeper.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	defer done()
	sent := time.Now() // when the current statement was sent
	failed, err = t.store.AcquireEach(ctx, s.id, t.holder, names, func(terms []store.Term) {
		t.metrics.acquireRoundTrip(time.Since(sent))
		acquired += len(terms)
		for i := 0; i < len(terms) && span.IsRecording(); i++ {
			span.AddEvent(eventGranted, termAttrs(terms[i].Name, terms[i].Epoch))
		}
		if !t.call(func(st *termState) {
			for _, tm := range terms {
				grant(st, tm.Name, tm.Epoch, s)
			}
		}) {
			t.giveBackNow(s, terms)
		}
		sent = time.Now()
	})
	if err != nil {
		t.metrics.acquireRoundTrip(time.Since(sent))
		t.call(func(st *termState) { st.noteUnsure(s.id, failed) })
		return failed, fmt.Errorf("acquire: %w", err)
	}
	return nil, nil
}

// acquireUnread attempts names at once, without a read of their rows (a
// wake-up's attempt, a keyed lock's first): the acquire statement itself
// takes only what is takeable, so a stale wake-up takes nothing. Leases
// this process holds off are left out, and nothing is attempted while the
// health gate is closed; attempted counts the names left.
func (t *termSet) acquireUnread(ctx context.Context, names []string, of attemptOf, grant func(st *termState, name string, epoch int64, s *session)) (attempted int, failed []string, err error) {
	var kept []string
	t.call(func(st *termState) {
		names = slices.DeleteFunc(names, func(name string) bool { return st.holdingOff(name, store.Row{}, false) })
		attempted = len(names)
		if len(names) > 0 && !t.health.unhealthy() {
			kept = st.attempt(names, of)
		}
	})
	if len(kept) == 0 {
		return attempted, nil, nil
	}
	defer t.call(func(st *termState) { st.unattempt(kept) })
	sort.Strings(kept)
	opCtx, cancel := context.WithTimeout(ctx, t.cfg.roundTimeout(len(kept)))
	defer cancel()
	var missing []string
	for _, name := range kept {
		if _, lock := lockFloor(name); lock {
			missing = append(missing, name)
		}
	}
	failed, err = t.acquire(opCtx, kept, missing, grant)
	return attempted, failed, err
}

// acquireFailed reports the failure of an acquire, if any.
func (t *termSet) acquireFailed(failed []string, err error) {
	switch {
	case err == nil:
		t.campaignSucceeded()
	case errors.Is(err, context.Canceled):
	case failed == nil:
		t.campaignFailed(err)
	default:
		// The acquire may have committed: each lease is reported, so that
		// an epoch taken without a term is accounted for.
		for _, name := range failed {
			t.events.emit(Event{Kind: EventError, Key: name, Err: err})
		}
		t.logFailure(err, zap.Int("leases", len(failed)))
	}
}

// campaignFailed reports a failed campaign step.
func (t *termSet) campaignFailed(err error) {
	if errors.Is(err, context.Canceled) {
		return // shutting down
	}
	t.events.emit(Event{Kind: EventError, Err: err})
	t.logFailure(err)
}

// logFailure logs a failed attempt: a warning for the first of an outage,
// debug lines for the rest.
func (t *termSet) logFailure(err error, fields ...zap.Field) {
	first := true
	t.call(func(st *termState) { _, first = st.campaign.outage.Failed() })
	fields = append(fields, zap.Error(err))
	if first {
		t.log.Warn("campaign attempt failed; retrying", fields...)
		return
	}
	t.log.Debug("campaign attempt failed; retrying", fields...)
}

// campaignSucceeded ends an outage of the campaigns, if one is under way.
func (t *termSet) campaignSucceeded() {
	var n int
	var lasted time.Duration
	t.call(func(st *termState) {
		if st.campaign.outage.Failures() > 0 {
			n, lasted = st.campaign.outage.Succeeded()
		}
	})
	if n > 0 {
		t.log.Info("campaign attempts recovered", zap.Int("failures", n), zap.Duration("after", lasted))
	}
}

// tryAcquire is Election.TryAcquire's one attempt, on the acquire path: a
// read of the row decides, as a round's does, whether the lease can be
// taken.
func (t *termSet) tryAcquire(ctx context.Context, e *Election, onRelease func()) (*Lease, error) {
	if err := t.waitReady(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.roundTimeout(1))
	defer cancel()
	name := e.key
	if t.health.unhealthy() {
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w", name, errUnhealthyNow)
	}
	r, exists, err := readOne(ctx, t.store, name)
	if err != nil {
		return nil, fmt.Errorf("coordination: try to acquire lease %q: read: %w", name, err)
	}
	mine := t.keeper.sessionID()
	var heldOff bool
	var kept []string
	g := grantee{attrs: e.attrs, onRelease: onRelease}
	if !t.call(func(st *termState) {
		if heldOff = st.holdingOff(name, r, exists); !heldOff && takeable(r, exists, mine, t.holder) {
			kept = st.attempt([]string{name}, anyLease)
			if !e.transient {
				g.es = st.elections[name]
			}
		}
	}) {
		return nil, ErrClosed
	}
	switch {
	case exists && r.Live() && r.Session != mine:
		return nil, notAcquired(r)
	case exists && r.ReservedAgainst(t.holder):
		return nil, fmt.Errorf("%w: lease %q: a resign prefers %q as the next holder until %s by the database clock",
			ErrNotAcquired, name, r.PreferredHolder, r.PreferredUntil.Format(time.RFC3339Nano))
	case heldOff:
		return nil, fmt.Errorf("%w: lease %q: this process resigned it and holds off for up to TTL (%v) so another can take over",
			ErrNotAcquired, name, t.cfg.TTL)
	case !takeable(r, exists, mine, t.holder):
		return nil, notAcquired(r)
	case len(kept) == 0:
		// A round still under way for a withdrawn campaign of a keyed lock
		// or a semaphore slot, or the give-back of an earlier attempt,
		// keeps the attempt off the row. Neither is another holder.
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w: an acquire or give-back of this process is under way on it; try again", name, ErrBusy)
	}
	var missing []string
	if !exists {
		missing = []string{name}
	}
	var l *Lease
	var startErr error
	taken := false
	_, err = t.acquire(ctx, kept, missing, func(st *termState, name string, epoch int64, s *session) {
		taken = true
		l, startErr = st.startTerm(name, epoch, s, g)
	})
	t.call(func(st *termState) { st.unattempt(kept) })
	switch {
	case err != nil:
		return nil, fmt.Errorf("coordination: try to acquire lease %q: %w", name, err)
	case startErr != nil:
		return nil, startErr
	case taken:
		return l, nil
	}
	// Another process took the lease between the read and the acquire.
	if r, exists, err := readOne(ctx, t.store, name); err == nil && exists && r.Live() {
		return nil, notAcquired(r)
	}
	return nil, fmt.Errorf("%w: lease %q was taken by another holder during the attempt", ErrNotAcquired, name)
}

// acquireDirect takes a lease that only this process ever competes for (a
// pool member row) without going through the rounds. Its error wraps
// ErrNotAcquired when another live session has the row, and ErrLeaseLost
// when this process stopped trusting its session while the row was taken.
func (t *termSet) acquireDirect(ctx context.Context, name string) (*Lease, error) {
	if err := t.waitReady(ctx); err != nil {
		return nil, err
	}
	var kept []string
	if !t.call(func(st *termState) { kept = st.attempt([]string{name}, anyLease) }) {
		return nil, ErrClosed
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%w: %q: another acquire of this process is attempting it", ErrNotAcquired, name)
	}
	defer t.call(func(st *termState) { st.unattempt(kept) })
	var l *Lease
	var startErr error
	taken := false
	_, err := t.acquire(ctx, kept, kept, func(st *termState, name string, epoch int64, s *session) {
		taken = true
		l, startErr = st.startTerm(name, epoch, s, grantee{attrs: t.metrics.leaseAttrs(name)})
	})
	switch {
	case err != nil:
		return nil, err
	case !taken:
		return nil, fmt.Errorf("%w: %q is held by another live session of this process", ErrNotAcquired, name)
	}
	return l, startErr
}

// attemptLock is a keyed lock's first attempt at its row, made by the
// caller rather than by the rounds: the acquire without a read. It returns
// nil and no error when it took nothing (Lock then campaigns).
func (t *termSet) attemptLock(ctx context.Context, e *Election, onRelease func()) (*Lease, error) {
	var lease *Lease
	var startErr error
	// The caller's ctx does not cut the statements short, so that an
	// acquire that commits is always seen and its term started or given
	// back; the round timeout bounds them.
	_, failed, err := t.acquireUnread(context.WithoutCancel(ctx), []string{e.key}, anyLease, func(st *termState, name string, epoch int64, s *session) {
		lease, startErr = st.startTerm(name, epoch, s, grantee{attrs: e.attrs, onRelease: onRelease})
	})
	t.acquireFailed(failed, err)
	if errors.Is(startErr, ErrClosed) {
		return nil, ErrClosed
	}
	return lease, nil
}

// notAcquired is the error of an attempt that found r held by another
// live holder.
func notAcquired(r store.Row) error {
	return fmt.Errorf("%w: lease %q: holder %q, epoch %d, live until %s by the database clock",
		ErrNotAcquired, r.Name, r.Holder, r.Epoch, r.ExpiresAt.Format(time.RFC3339Nano))
}

// readOne reads the row of one lease; it reports false when there is none.
func readOne(ctx context.Context, st leaseOps, name string) (store.Row, bool, error) {
	rows, err := st.Get(ctx, []string{name})
	if err != nil || len(rows) == 0 {
		return store.Row{}, false, err
	}
	return rows[0], true, nil
}
