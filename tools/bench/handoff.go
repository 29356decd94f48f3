package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"
)

// Settings of the handoff section.
const (
	// candidates is how many processes campaign for the election.
	candidates = 3
	// unitEvery is the pace of the leader's units of work in the pause
	// part.
	unitEvery = 10 * time.Millisecond
	// pauseTTLs is how long the leader stays stopped, in TTLs (and until
	// a successor holds, if that comes later).
	pauseTTLs = 2
	// endedBound bounds the wait, after SIGCONT, for the resumed leader's
	// work to return.
	endedBound = 10 * time.Second
	// idleElections is how many elections the idle follower campaigns
	// for, all held by another process.
	idleElections = 100
	// statementSlack is what the targets allow beyond a timing
	// bound for the statements of a takeover.
	statementSlack = 100 * time.Millisecond
)

// timing is the coordinator timing of a group of workers.
type timing struct {
	ttl, retry time.Duration
	args       []string // the worker's flags for it
	about      string   // what the tables say of it
}

// defaultTTL and defaultRetryInterval are the defaults of
// coordination.Config.TTL and RetryInterval, as Config documents them
// (the library's own constants are unexported); a test checks them
// against what coordination.New fills in.
const (
	defaultTTL           = 15 * time.Second
	defaultRetryInterval = 2 * time.Second
)

// defaultTiming is coordination's defaults, which the graceful handoff's
// targets are stated for.
var defaultTiming = timing{
	ttl: defaultTTL, retry: defaultRetryInterval, args: []string{"-defaults"},
	about: fmt.Sprintf("coordination's defaults: TTL %v, RenewInterval TTL/3, RetryInterval %v",
		defaultTTL, defaultRetryInterval),
}

// fastTiming is the timing of the parts that wait for a lease to expire.
var fastTiming = timing{
	ttl: FastTTL, retry: FastRetryInterval,
	args: []string{"-ttl", FastTTL.String(), "-renew", FastRenewInterval.String(), "-retry", FastRetryInterval.String()},
	about: fmt.Sprintf("TTL %v, RenewInterval %s, RetryInterval %v (what coordination derives from that TTL)",
		FastTTL, fmtDur(FastRenewInterval), FastRetryInterval),
}

// takeoverBound bounds the wait for a successor: a follower takes an
// expired lease within TTL plus one retry wait (RetryInterval plus a
// random 0-5%, at most 25ms); the bound allows three such waits and 5s
// more.
func (tm timing) takeoverBound() time.Duration { return tm.ttl + 3*tm.retry + 5*time.Second }

// gracefulTarget is the bound on the graceful handoff's 99th
// percentile on dialect, with coordination's defaults.
func gracefulTarget(dialect string) time.Duration {
	switch dialect {
	case "postgres":
		return 10 * time.Millisecond
	case "sqlite":
		return 20 * time.Millisecond
	case "mysql":
		return 50 * time.Millisecond // peer wake-ups
	}
	return defaultRetryInterval + 50*time.Millisecond
}

// candidateGroup starts candidates processes campaigning for the
// election named after name, with timing tm and the extra flags, each
// reporting its terms.
func (r *runner) candidateGroup(ctx context.Context, tg *target, name string, tm timing, extra ...string) (*group, error) {
	args := append([]string{"-elections", "1", "-prefix", name, "-terms"}, tm.args...)
	g := &group{r: r, tg: tg, name: name, args: append(args, extra...)}
	_, err := g.start(ctx, candidates)
	return g, err
}

// leader returns the live process of g whose latest term has not ended
// (the latest to start, should there be two), or nil.
func (g *group) leader() (*child, termSpan) {
	var who *child
	var best termSpan
	for _, c := range g.live {
		if s, ok := c.openTerm(); ok && (who == nil || s.start.After(best.start)) {
			who, best = c, s
		}
	}
	return who, best
}

// handoff is one signal to the leader and the term that followed.
type handoff struct {
	leader *child
	term   termSpan  // the leader's term when it got the signal
	at     time.Time // when the signal was sent
	next   termSpan  // the successor's term
}

// took returns the time from the signal to the start of the successor's
// leader work.
func (h handoff) took() time.Duration { return h.next.start.Sub(h.at) }

// handOff waits for g's leader, then a random part of tm's retry
// interval, so that the signal falls at a random moment of the
// followers' polls and of the leader's renewals; it sends sig to the
// leader and waits for another process's leader work to start. On an
// error, h.leader is the process signalled, if any.
func handOff(ctx context.Context, g *group, tm timing, sig syscall.Signal) (h handoff, err error) {
	bound := tm.takeoverBound()
	if !waitUntil(ctx, bound, func() bool { h.leader, h.term = g.leader(); return h.leader != nil }) {
		return h, fmt.Errorf("no leader within %s", bound)
	}
	sleepCtx(ctx, rand.N(tm.retry))
	h.at = h.leader.signal(sig)
	found := waitUntil(ctx, bound, func() bool {
		for _, c := range g.live {
			if s, ok := c.termSince(h.at); ok && c != h.leader {
				h.next = s
				return true
			}
		}
		return false
	})
	if !found {
		return h, fmt.Errorf("no successor within %s of %v to %s", bound, sig, h.leader.name)
	}
	return h, nil
}

// replace waits for the signalled leader to exit, at most bound, and
// starts a candidate in its place.
func (g *group) replace(ctx context.Context, old *child, bound time.Duration) error {
	if !old.waitExited(bound) {
		return fmt.Errorf("%s had not exited %s after the signal", old.name, bound)
	}
	g.drop(old)
	_, err := g.start(ctx, 1)
	return err
}

// runHandoff is the handoff section: graceful handoff (SIGTERM) with
// coordination's defaults, crash failover (SIGKILL) and a pause beyond
// the TTL (SIGSTOP, then SIGCONT) with a short TTL, each Reps times among
// three candidates; and the statements of an idle follower, measured
// meanwhile on a database of its own.
func runHandoff(ctx context.Context, r *runner, tg *target) *Table {
	t := &Table{Section: "handoff", Dialect: tg.dialect,
		Title: fmt.Sprintf("%d candidate processes for one election; the leader gets SIGTERM, SIGKILL, or SIGSTOP then SIGCONT, %d times each",
			candidates, r.o.Reps)}
	if !r.prepareWorkers(ctx, tg, t) {
		return t
	}
	idle := r.startIdle(ctx, tg.dialect)
	defer idle.close()
	r.handoffGraceful(ctx, tg, t)
	r.handoffCrash(ctx, tg, t)
	r.handoffPause(ctx, tg, t)
	idle.report(t)

	t.note("graceful: %s; handoff: from the runner sending SIGTERM to the leader until the successor's leader work "+
		"started, as the successor's wall clock says (same host); the leader releases the lease once its work has returned; "+
		"the release wakes the followers at once (PostgreSQL: NOTIFY, SQLite: sockets, MariaDB: peer wake-ups over UDP); "+
		"a follower a wake-up misses finds it on its next poll, every RetryInterval plus at most 25ms", defaultTiming.about)
	t.note("crash and pause: %s, so that each failover takes about a second; failover: SIGKILL to the successor's "+
		"leader work started; failover/TTL: the same over the TTL", fastTiming.about)
	t.note("each signal follows a random wait of 0 to RetryInterval, so it falls at a random moment of the followers' polls; " +
		"after SIGTERM or SIGKILL a replacement starts once the successor holds, and is ready before the next signal")
	t.note("pause: SIGSTOP for %d TTLs, and until a successor holds, then SIGCONT; the leader's work does a unit every %v, "+
		"each only after Lease.Valid() returned true, and reports it with its instant; a unit stamped at or after SIGCONT "+
		"was done after resuming", pauseTTLs, unitEvery)
	t.note("idle follower: one process campaigning for %d elections that another process holds (both with coordination's defaults), "+
		"on a database of its own, during the whole section; its statements counted by its gorm callbacks between two of its "+
		"stats lines; as each poll waits RetryInterval plus at most 25ms, never less, a window of W holds at most floor(W/RetryInterval)+1 of them",
		idleElections)
	return t
}

// handoffGraceful measures the graceful handoff: SIGTERM to the leader,
// with coordination's defaults.
func (r *runner) handoffGraceful(ctx context.Context, tg *target, t *Table) {
	const name = "graceful handoff p50 / p99 / max"
	tm := defaultTiming
	target := "p99 <= " + fmtDur(gracefulTarget(tg.dialect))
	g, err := r.candidateGroup(ctx, tg, "graceful", tm)
	defer g.kill()
	if err != nil {
		t.fail(name, "start: "+err.Error(), target)
		return
	}
	var took, down, up []time.Duration
	for i := range r.o.Reps {
		h, err := handOff(ctx, g, tm, syscall.SIGTERM)
		if err == nil {
			took = append(took, h.took())
			err = g.replace(ctx, h.leader, stopBound)
		}
		if err != nil {
			t.fail(name, fmt.Sprintf("handoff %d of %d: %v", i+1, r.o.Reps, err), target)
			return
		}
		// The leader has exited: its last report, the end of its work,
		// has arrived.
		if end := h.leader.termEnd(h.term.epoch); !end.IsZero() {
			down = append(down, end.Sub(h.at))
			up = append(up, h.next.start.Sub(end))
		}
	}
	s, p99, _ := p50p99max(took)
	t.add(name, s, target, p99 <= gracefulTarget(tg.dialect))
	if s, _, err := p50p99max(down); err == nil {
		t.info("graceful: SIGTERM to the leader's work returned p50 / p99 / max", s)
	}
	if s, _, err := p50p99max(up); err == nil {
		t.info("graceful: the leader's work returned to the successor's work started p50 / p99 / max", s)
	}
	if killed := g.stop(); killed > 0 {
		t.note("graceful: %d candidates had not exited %v after the last SIGTERM and were killed", killed, stopBound)
	}
}

// handoffCrash measures the crash failover: SIGKILL to the leader.
func (r *runner) handoffCrash(ctx context.Context, tg *target, t *Table) {
	const name = "crash failover p50 / p99 / max"
	tm := fastTiming
	bound := tm.ttl + tm.retry + statementSlack
	target := fmt.Sprintf("p99 <= TTL + retry + %v = %s", statementSlack, fmtDur(bound))
	g, err := r.candidateGroup(ctx, tg, "crash", tm)
	defer g.kill()
	if err != nil {
		t.fail(name, "start: "+err.Error(), target)
		return
	}
	var took []time.Duration
	for i := range r.o.Reps {
		h, err := handOff(ctx, g, tm, syscall.SIGKILL)
		if err == nil {
			took = append(took, h.took())
			err = g.replace(ctx, h.leader, 10*time.Second)
		}
		if err != nil {
			t.fail(name, fmt.Sprintf("failover %d of %d: %v", i+1, r.o.Reps, err), target)
			return
		}
	}
	s, p99, _ := p50p99max(took)
	t.add(name, s, target, p99 <= bound)
	t.info("crash failover / TTL p50 / p99 / max", ratiosOf(took, tm.ttl))
	g.stop()
}

// pause is one pause of a leader beyond its TTL.
type pause struct {
	takeover      time.Duration // SIGSTOP to the successor's work started
	stopped       time.Duration // SIGSTOP to SIGCONT
	before, after int           // units of the paused term done before SIGSTOP, and at or after SIGCONT
}

// pauseLeader stops g's leader with SIGSTOP, waits until a successor's
// work has started and pauseTTLs TTLs have passed, resumes the leader
// with SIGCONT, and waits for the work of its term to return.
func pauseLeader(ctx context.Context, g *group, tm timing) (pause, error) {
	h, err := handOff(ctx, g, tm, syscall.SIGSTOP)
	if h.at.IsZero() { // nothing was stopped
		return pause{}, err
	}
	if err == nil {
		sleepCtx(ctx, time.Until(h.at.Add(pauseTTLs*tm.ttl)))
	}
	resumed := h.leader.signal(syscall.SIGCONT) // even when no successor came
	if err != nil {
		return pause{}, err
	}
	if !waitUntil(ctx, endedBound, func() bool { return h.leader.termEnded(h.term.epoch) }) {
		return pause{}, fmt.Errorf("the work of %s had not returned %s after SIGCONT", h.leader.name, endedBound)
	}
	p := pause{takeover: h.took(), stopped: resumed.Sub(h.at)}
	p.before, p.after = h.leader.unitsOf(h.term.epoch, resumed)
	return p, nil
}

// handoffPause measures the work a leader does after a pause beyond its
// TTL: SIGSTOP, a successor takes over, SIGCONT.
func (r *runner) handoffPause(ctx context.Context, tg *target, t *Table) {
	tm := fastTiming
	name := fmt.Sprintf("pause beyond TTL: units done after SIGCONT (%d pauses)", r.o.Reps)
	g, err := r.candidateGroup(ctx, tg, "pause", tm, "-units", unitEvery.String())
	defer g.kill()
	if err != nil {
		t.fail(name, "start: "+err.Error(), "0")
		return
	}
	var takeovers, pauses []time.Duration
	stale, fewest := 0, -1
	for i := range r.o.Reps {
		p, err := pauseLeader(ctx, g, tm)
		if err != nil {
			t.fail(name, fmt.Sprintf("pause %d of %d: %v", i+1, r.o.Reps, err), "0")
			return
		}
		takeovers, pauses = append(takeovers, p.takeover), append(pauses, p.stopped)
		stale += p.after
		if fewest < 0 || p.before < fewest {
			fewest = p.before
		}
	}
	t.add(name, fmt.Sprint(stale), "0", stale == 0 && fewest > 0)
	if fewest == 0 {
		t.note("pause: a leader had done no unit before its pause, so that pause measured nothing")
	}
	t.info("pause: fewest units done in a term before its SIGSTOP", fmt.Sprint(fewest))
	if s, _, err := p50p99max(pauses); err == nil {
		t.info("pause: SIGSTOP to SIGCONT p50 / p99 / max", s)
	}
	if s, _, err := p50p99max(takeovers); err == nil {
		t.info("pause: SIGSTOP to the successor's work started p50 / p99 / max", s)
	}
	g.stop()
}

// idleFollower is a follower campaigning for idleElections elections
// that another process holds, on a database of its own, both with
// coordination's defaults.
type idleFollower struct {
	tg       *target
	g        *group
	follower *child
	mark     Report // the follower's stats line the count starts from
	err      error  // why it could not start
}

// startIdle starts the holder, waits for it to hold every election, then
// starts the follower and waits for its first stats line, which comes
// after its first poll.
func (r *runner) startIdle(ctx context.Context, dialect string) *idleFollower {
	f := &idleFollower{}
	f.tg, f.err = r.target(ctx, dialect)
	if f.err != nil {
		return f
	}
	if f.err = f.tg.migrate(ctx); f.err != nil {
		return f
	}
	f.g = &group{r: r, tg: f.tg, name: "idle",
		args: append([]string{"-elections", fmt.Sprint(idleElections), "-prefix", "idle"}, defaultTiming.args...)}
	holder, err := f.g.start(ctx, 1)
	if err != nil {
		f.err = err
		return f
	}
	if !waitUntil(ctx, heldBound, func() bool { _, held, _, _ := holder.state(); return !held.IsZero() }) {
		f.err = fmt.Errorf("the holder did not hold its %d elections within %s", idleElections, heldBound)
		return f
	}
	if f.follower, f.err = f.g.start(ctx, 1); f.err != nil {
		return f
	}
	if !waitUntil(ctx, 10*time.Second, func() bool { f.mark, _, _, _ = f.follower.state(); return f.mark.Type == "stats" }) {
		f.err = errors.New("the follower sent no stats line within 10s")
	}
	return f
}

// report adds the follower's statements per retry interval since the
// mark: a target on PostgreSQL, the issue's, and for context elsewhere.
func (f *idleFollower) report(t *Table) {
	retry := defaultTiming.retry
	name := fmt.Sprintf("idle follower of %d elections held by another: statements per %v retry interval", idleElections, retry)
	if f.err != nil {
		t.fail(name, f.err.Error(), "")
		return
	}
	last, _, _, _ := f.follower.state()
	window := time.Duration(last.AtMS-f.mark.AtMS) * time.Millisecond
	if window < 5*retry {
		t.fail(name, fmt.Sprintf("a window of %s, under 5 retry intervals", fmtDur(window)), "")
		return
	}
	n := last.Stmts - f.mark.Stmts
	intervals := window.Seconds() / retry.Seconds()
	value := fmt.Sprintf("%.2f (%d in %s)", float64(n)/intervals, n, fmtDur(window))
	allowed := int64(window/retry) + 1
	switch {
	case last.Held > 0:
		t.fail(name, fmt.Sprintf("the follower took %d of the elections", last.Held), "")
	case f.tg.dialect == "postgres":
		t.add(name, value, fmt.Sprintf("<= 1, and 1 more at the window's edges (<= %d)", allowed), n <= allowed)
	default:
		t.info(name, value)
	}
}

// close stops the idle processes and drops their database.
func (f *idleFollower) close() {
	if f.g != nil {
		f.g.stop()
		f.g.kill()
	}
	if f.tg != nil {
		f.tg.drop()
	}
}
