package bench

import (
	"context"
	"fmt"
	"github.com/leasehold/leasehold/internal/store"
	"strings"
	"time"
)

// Bounds and targets of the sections with worker processes.
const (
	// heldBound bounds the wait for processes to hold their leases, and
	// heldStall ends it early when nothing changed for that long.
	heldBound = 2 * time.Minute
	heldStall = 30 * time.Second
	// stopBound bounds the wait for processes to exit after SIGTERM;
	// those still running then are killed.
	stopBound = 30 * time.Second
	// exitTarget is the bound on the exit after SIGTERM.
	exitTarget = time.Second
	// connTarget is the bound on connections per process.
	connTarget = 2
	// releaseSlack is what a process may send between SIGTERM and its
	// exit besides the releases (store.WriteChunk terms per statement):
	// the session's end, and a renewal or campaign read in flight.
	releaseSlack = 5
	// startTarget is the bound on the time from a process's start
	// to holding all its leases in the fleet section.
	startTarget = 2 * time.Second
	// fleetRenewTarget is the bound on the renewal's round trip
	// (99th percentile) in the fleet section.
	fleetRenewTarget = 10 * time.Millisecond
	// steadyTicks is how many renew ticks the fleet section measures.
	steadyTicks = 5
)

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// firstErrors joins the first error texts the children reported.
func firstErrors(children []*child, n int) string {
	var out []string
	for _, c := range children {
		last, _, _, _ := c.state()
		for _, e := range last.FirstErrors {
			if len(out) < n {
				out = append(out, c.name+": "+e)
			}
		}
	}
	return strings.Join(out, " | ")
}

// prepareWorkers builds the worker binary and migrates tg's schema before
// a section starts worker processes, so that neither is timed. It records
// a failure in t and reports false when either fails.
func (r *runner) prepareWorkers(ctx context.Context, tg *target, t *Table) bool {
	if _, err := r.workerBin(ctx); err != nil {
		t.fail("build worker", err.Error(), "")
		return false
	}
	if err := tg.migrate(ctx); err != nil {
		t.fail("migrate", err.Error(), "")
		return false
	}
	return true
}

// runShutdown is the shutdown section: one process holding many leases
// gets SIGTERM.
func runShutdown(ctx context.Context, r *runner, tg *target) *Table {
	n := r.o.ShutdownLeases
	t := &Table{Section: "shutdown", Dialect: tg.dialect,
		Title: fmt.Sprintf("one process holding %d leases (elections) gets SIGTERM", n)}
	if !r.prepareWorkers(ctx, tg, t) {
		return t
	}
	c, err := r.spawn(ctx, tg, "shutdown", "-elections", fmt.Sprint(n))
	if err != nil {
		t.fail("start worker", err.Error(), "")
		return t
	}
	all := []*child{c}
	sampler, err := startConnSampler(tg, all, 100*time.Millisecond)
	if err != nil {
		killAll(all)
		t.fail("connection sampler", err.Error(), "")
		return t
	}
	ok, took, got := waitCount(ctx, func() int {
		last, held, _, _ := c.state()
		if !held.IsZero() {
			return n
		}
		return last.Held
	}, n, heldBound, heldStall)
	target := "<= " + heldBound.String()
	if ok {
		t.add("all leases held, from the start", fmtDur(took), target, true)
		sleepCtx(ctx, 2*RenewInterval) // two renew ticks with every lease
	} else {
		t.fail("all leases held, from the start", fmt.Sprintf("%d of %d after %s", got, n, fmtDur(took)), target)
		t.note("first errors: %s", firstErrors(all, 3))
	}
	last, _, _, _ := c.state()
	t.info("leases held at SIGTERM", fmt.Sprint(last.Held))
	killed := stopAll(all, stopBound)
	serrs, serr := sampler.end()
	exitT := c.exitTime()
	_, _, exit, _ := c.state()
	switch {
	case killed > 0:
		t.fail("exit after SIGTERM", fmt.Sprintf("killed after %s", stopBound), "<= "+exitTarget.String())
	default:
		t.add("exit after SIGTERM", fmtDur(exitT), "<= "+exitTarget.String(), exitT <= exitTarget)
	}
	// Released in chunks of store.WriteChunk terms, whatever their number.
	releaseTarget := (n+store.WriteChunk-1)/store.WriteChunk + releaseSlack
	if exit != nil {
		t.add("statements from SIGTERM to exit", fmt.Sprint(exit.StmtsAfterTerm), fmt.Sprintf("<= %d", releaseTarget),
			exit.StmtsAfterTerm <= int64(releaseTarget))
		t.note("releases go out %d terms per statement (store.WriteChunk): %d leases need %d, plus up to %d other statements",
			store.WriteChunk, n, (n+store.WriteChunk-1)/store.WriteChunk, releaseSlack)
		if exit.Err != "" {
			t.note("worker: %s", exit.Err)
		}
		t.info("error events / leases lost (whole run)", fmt.Sprintf("%d / %d", exit.Errors, exit.Lost))
	} else {
		t.fail("statements from SIGTERM to exit", "no exit report", fmt.Sprintf("<= %d", releaseTarget))
	}
	checkLive(ctx, t, tg)
	most, _, samples := maxConns(all)
	t.add(fmt.Sprintf("most connections at any sample (%d samples)", samples), fmt.Sprint(most),
		fmt.Sprintf("<= %d", connTarget), most <= connTarget && samples > 0)
	if serrs > 0 {
		t.note("%d connection samples failed; last: %v", serrs, serr)
	}
	t.note("connections: %s, every 100ms from start to exit", connMethod(tg.dialect))
	t.note("statements: those the worker's gorm callbacks saw start after the signal (BEGIN/COMMIT not counted); exit: runner's SIGTERM to the process reaped")
	return t
}

// checkLive adds the count of leases left live after the processes exited.
func checkLive(ctx context.Context, t *Table, tg *target) {
	live, err := tg.liveLeases(ctx)
	if err != nil {
		t.fail("leases live after exit", err.Error(), "0")
		return
	}
	t.add("leases live after exit", fmt.Sprint(live), "0", live == 0)
}

// runFleet is the fleet section: Procs processes with FleetLeases leases
// each start at once, renew, and get SIGTERM at once.
func runFleet(ctx context.Context, r *runner, tg *target) *Table {
	procs, per := r.o.Procs, r.o.FleetLeases
	t := &Table{Section: "fleet", Dialect: tg.dialect,
		Title: fmt.Sprintf("%d processes x %d leases (elections) start at once, renew, then all get SIGTERM", procs, per)}
	if !r.prepareWorkers(ctx, tg, t) {
		return t
	}
	var all []*child
	began := time.Now()
	for i := range procs {
		c, err := r.spawn(ctx, tg, fmt.Sprintf("w%03d", i), "-elections", fmt.Sprint(per))
		if err != nil {
			killAll(all)
			t.fail("start workers", err.Error(), "")
			return t
		}
		all = append(all, c)
	}
	t.info("time to start every process", fmtDur(time.Since(began)))
	sampler, err := startConnSampler(tg, all, 250*time.Millisecond)
	if err != nil {
		killAll(all)
		t.fail("connection sampler", err.Error(), "")
		return t
	}
	countHeld := func() int {
		k := 0
		for _, c := range all {
			if _, held, _, _ := c.state(); !held.IsZero() {
				k++
			}
		}
		return k
	}
	ok, took, got := waitCount(ctx, countHeld, procs, heldBound, heldStall)
	if !ok {
		t.fail("processes holding all their leases", fmt.Sprintf("%d of %d after %s", got, procs, fmtDur(took)), fmt.Sprint(procs))
		t.note("first errors: %s", firstErrors(all, 3))
	} else {
		t.info("every lease of every process held, from the first start", fmtDur(time.Since(began)))
	}
	var slowest time.Duration
	for _, c := range all {
		if _, held, _, _ := c.state(); !held.IsZero() {
			slowest = max(slowest, held.Sub(c.spawned))
		}
	}
	if ok {
		t.add("slowest process: all its leases held, from its start", fmtDur(slowest), "<= "+startTarget.String(), slowest <= startTarget)
	}

	// Steady state: skip a tick, then collect renewals for steadyTicks.
	sleepCtx(ctx, RenewInterval+RenewInterval/2)
	from := time.Now()
	sleepCtx(ctx, steadyTicks*RenewInterval)
	to := time.Now()
	sleepCtx(ctx, RenewInterval+RenewInterval/2) // the stats lines of the last ticks
	var renews []time.Duration
	errs, lost := 0, 0
	for _, c := range all {
		c.mu.Lock()
		for _, s := range c.renews {
			if s.at.After(from) && !s.at.After(to.Add(RenewInterval+RenewInterval/2)) {
				renews = append(renews, s.dur)
			}
		}
		errs += c.last.Errors
		lost += c.last.Lost
		c.mu.Unlock()
	}
	if s, p99, err := p50p99(renews); err == nil {
		t.add(fmt.Sprintf("renew client round trip p50 / p99 (%d ticks, all processes)", steadyTicks), s,
			"p99 < "+fleetRenewTarget.String(), p99 < fleetRenewTarget)
	} else {
		t.fail("renew client round trip p50 / p99", "no renewals reported", "p99 < "+fleetRenewTarget.String())
	}
	t.add("error events, all processes, before SIGTERM", fmt.Sprint(errs), "0", errs == 0)
	t.add("leases lost, all processes, before SIGTERM", fmt.Sprint(lost), "0", lost == 0)
	if errs > 0 {
		t.note("first errors: %s", firstErrors(all, 3))
	}

	killed := stopAll(all, stopBound)
	serrs, serr := sampler.end()
	var slowExit time.Duration
	var exits, inside []time.Duration
	for _, c := range all {
		slowExit = max(slowExit, c.exitTime())
		exits = append(exits, c.exitTime())
		if _, _, exit, _ := c.state(); exit != nil {
			inside = append(inside, time.Duration(exit.TermToDoneMS)*time.Millisecond)
		}
	}
	if killed > 0 {
		t.fail("slowest exit after SIGTERM", fmt.Sprintf("%d killed after %s", killed, stopBound), "<= "+exitTarget.String())
	} else {
		t.add("slowest exit after SIGTERM", fmtDur(slowExit), "<= "+exitTarget.String(), slowExit <= exitTarget)
		if s, _, err := p50p99(exits); err == nil {
			t.info("exit after SIGTERM p50 / p99", s)
		}
		if s, _, err := p50p99(inside); err == nil {
			t.info("signal to Run returned, inside the process, p50 / p99", s)
		}
	}
	checkLive(ctx, t, tg)
	most, who, samples := maxConns(all)
	t.add(fmt.Sprintf("most connections of one process at any sample (%d samples)", samples), fmt.Sprintf("%d (%s)", most, who),
		fmt.Sprintf("<= %d", connTarget), most <= connTarget && samples > 0)
	if serrs > 0 {
		t.note("%d connection samples failed; last: %v", serrs, serr)
	}
	t.note("connections: %s, every 250ms from start to exit", connMethod(tg.dialect))
	t.note("start: from the runner starting the process to its report that every election's work runs; the schema was migrated beforehand")
	return t
}

// runPool is the pool section: pools of PoolSizes members start at once.
func runPool(ctx context.Context, r *runner, tg *target) *Table {
	t := &Table{Section: "pool", Dialect: tg.dialect, Title: "pools whose members all start at once"}
	if !r.prepareWorkers(ctx, tg, t) {
		return t
	}
	for _, n := range r.o.PoolSizes {
		label := fmt.Sprintf("%d members", n)
		var all []*child
		began := time.Now()
		for i := range n {
			c, err := r.spawn(ctx, tg, fmt.Sprintf("p%d-%02d", n, i), "-pool", fmt.Sprintf("pool%d", n))
			if err != nil {
				killAll(all)
				t.fail(label+": start", err.Error(), "")
				return t
			}
			all = append(all, c)
		}
		settled := func() int {
			k := 0
			for _, c := range all {
				c.mu.Lock()
				if c.assigned.Count == n {
					k++
				}
				c.mu.Unlock()
			}
			return k
		}
		ok, _, got := waitCount(ctx, settled, n, heldBound, heldStall)
		target := "<= " + heldBound.String()
		if ok {
			t.add(label+": every member assigned in a generation of "+fmt.Sprint(n), fmtDur(time.Since(began)), target, true)
		} else {
			t.fail(label+": every member assigned in a generation of "+fmt.Sprint(n),
				fmt.Sprintf("%d of %d after %s", got, n, fmtDur(time.Since(began))), target)
		}
		killed := stopAll(all, stopBound)
		joins, errs := 0, 0
		reported := 0
		var slowExit time.Duration
		for _, c := range all {
			last, _, exit, _ := c.state()
			if exit != nil {
				last = *exit
				reported++
			}
			joins += last.JoinErrors
			errs += last.Errors
			slowExit = max(slowExit, c.exitTime())
		}
		t.add(label+": failed joins", fmt.Sprint(joins), "0", joins == 0 && reported == n)
		t.info(label+": error events, all members", fmt.Sprint(errs))
		if killed > 0 {
			t.info(label+": slowest exit after SIGTERM", fmt.Sprintf("%d killed after %s", killed, stopBound))
		} else {
			t.info(label+": slowest exit after SIGTERM", fmtDur(slowExit))
		}
		if errs > 0 {
			t.note("%s: first errors: %s", label, firstErrors(all, 3))
		}
		if reported < n {
			t.note("%s: %d of %d members sent no exit report; their counts are from their last stats line", label, n-reported, n)
		}
	}
	t.note("failed joins: EventError events whose error is the pool step \"join\" or \"create pool row\" (bench.IsJoinError), counted in each member until it exits")
	return t
}
