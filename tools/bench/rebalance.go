package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"
)

// Settings of the rebalance section.
const (
	// rebalanceMembers is the size of the pool.
	rebalanceMembers = 20
	// poolGracefulTarget is the bound on the 99th percentile of a
	// graceful rebalance (join, leave) of 20 members, on every dialect.
	poolGracefulTarget = 100 * time.Millisecond
)

// rebalanced waits at most bound for every live member of g to work in
// one generation newer than after, of as many members as are live. It
// returns that generation and the time from the event at from to the
// start of the last member's work in it, as the members report it.
func (g *group) rebalanced(ctx context.Context, after int64, from time.Time, bound time.Duration) (int64, time.Duration, error) {
	var gen int64
	var last time.Time
	settled := func() bool {
		gen, last = 0, time.Time{}
		for _, c := range g.live {
			a := c.assignment()
			if a.Count != len(g.live) || a.Generation <= after || (gen != 0 && a.Generation != gen) {
				return false
			}
			gen = a.Generation
			if at := time.Unix(0, a.WallNS); at.After(last) {
				last = at
			}
		}
		return true
	}
	if !waitUntil(ctx, bound, settled) {
		return after, 0, fmt.Errorf("the %d members were not all working in a generation of %d within %s", len(g.live), len(g.live), bound)
	}
	return gen, last.Sub(from), nil
}

// runRebalance is the rebalance section: a pool of rebalanceMembers
// member processes, with the short TTL, in which Reps times a member
// joins, the oldest leaves on SIGTERM, the oldest gets SIGKILL, and a
// member joins again; each is timed until every member works in the
// generation of the new membership.
func runRebalance(ctx context.Context, r *runner, tg *target) *Table {
	tm := fastTiming
	poll := tm.retry // PoolConfig's default PollInterval
	t := &Table{Section: "rebalance", Dialect: tg.dialect,
		Title: fmt.Sprintf("a pool of %d member processes: a member joins, leaves on SIGTERM, gets SIGKILL; %d times each (joins twice)",
			rebalanceMembers, r.o.Reps)}
	if !r.prepareWorkers(ctx, tg, t) {
		return t
	}
	g := &group{r: r, tg: tg, name: "m", args: append([]string{"-pool", "rebalance"}, tm.args...)}
	defer g.kill()
	bound := tm.ttl + poll + 10*time.Second
	var joins, leaves, kills []time.Duration
	err := func() error {
		if _, err := g.start(ctx, rebalanceMembers); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		gen, _, err := g.rebalanced(ctx, 0, time.Now(), heldBound)
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		join := func() error {
			c, err := g.start(ctx, 1)
			if err != nil {
				return fmt.Errorf("join: %w", err)
			}
			var d time.Duration
			if gen, d, err = g.rebalanced(ctx, gen, c.readyAt(), bound); err != nil {
				return fmt.Errorf("join of %s: %w", c.name, err)
			}
			joins = append(joins, d)
			return nil
		}
		// leave sends sig to the oldest member, at a random moment of the
		// members' polls, and times the rebalance that follows.
		leave := func(sig syscall.Signal, into *[]time.Duration) error {
			sleepCtx(ctx, rand.N(poll))
			old := g.live[0]
			at := old.signal(sig)
			g.drop(old)
			gen2, d, err := g.rebalanced(ctx, gen, at, bound)
			if err != nil {
				return fmt.Errorf("%v to %s: %w", sig, old.name, err)
			}
			if !old.waitExited(stopBound) {
				return fmt.Errorf("%s had not exited %s after %v", old.name, stopBound, sig)
			}
			gen = gen2
			*into = append(*into, d)
			return nil
		}
		for range r.o.Reps {
			for _, step := range []func() error{
				join,
				func() error { return leave(syscall.SIGTERM, &leaves) },
				func() error { return leave(syscall.SIGKILL, &kills) },
				join,
			} {
				if err := step(); err != nil {
					return err
				}
			}
		}
		return nil
	}()
	if err != nil {
		t.fail("rebalance", fmt.Sprintf("after %d joins, %d leaves, %d kills: %v", len(joins), len(leaves), len(kills), err), "")
	}

	graceful := "p99 <= " + fmtDur(poolGracefulTarget)
	for _, f := range []struct {
		name string
		ds   []time.Duration
	}{
		{"join: the joiner's start to every member working p50 / p99 / max", joins},
		{"leave (SIGTERM) to every member working p50 / p99 / max", leaves},
	} {
		// Every dialect has wake-ups: NOTIFY, peer datagrams, SQLite's
		// local sockets.
		if s, p99, perr := p50p99max(f.ds); perr == nil {
			t.add(f.name, s, graceful, p99 <= poolGracefulTarget)
		}
	}
	crashBound := tm.ttl + poll + statementSlack
	if s, p99, perr := p50p99max(kills); perr == nil {
		t.add("SIGKILL to every other member working p50 / p99 / max", s,
			fmt.Sprintf("p99 <= TTL + poll + %v = %s", statementSlack, fmtDur(crashBound)), p99 <= crashBound)
	}
	errs, joinErrs, lost := 0, 0, 0
	for _, c := range g.all {
		last, _, exit, _ := c.state()
		if exit != nil {
			last = *exit
		}
		errs += last.Errors
		joinErrs += last.JoinErrors
		lost += last.Lost
	}
	t.info("error events / failed joins / memberships lost, all members", fmt.Sprintf("%d / %d / %d", errs, joinErrs, lost))
	if errs > 0 {
		t.note("first errors: %s", firstErrors(g.all, 3))
	}
	if killed := g.stop(); killed > 0 {
		t.note("%d members had not exited %v after the last SIGTERM and were killed", killed, stopBound)
	}

	t.note("pool: %s; PollInterval %v (PoolConfig's default, the RetryInterval); each round: a member joins (%d to %d members), "+
		"the oldest leaves on SIGTERM, the oldest gets SIGKILL, a member joins (%d to %d)",
		fastTiming.about, poll, rebalanceMembers, rebalanceMembers+1, rebalanceMembers-1, rebalanceMembers)
	t.note("rebalance: from the event (the joiner's report that its Pool.Run started; the runner sending SIGTERM or SIGKILL, " +
		"at a random moment of the polls) to the last member's report that its work started in the generation of the " +
		"new membership, on the members' wall clocks (same host)")
	t.note("the library's bounds: a join or graceful leave within poll + poll/4 = %s, a crash within "+
		"TTL + poll/4 + 2ms = %s, each plus a few statements", fmtDur(rebalanceBound(poll)),
		fmtDur(crashRebalanceBound(tm.ttl, poll)))
	return t
}

// rebalanceBound and crashRebalanceBound are the bounds that
// coordination.PoolConfig.PollInterval documents (the library's own are
// unexported): every member of a pool works in the new generation within
// rebalanceBound of a join or a graceful leave, and within
// crashRebalanceBound of a crash, plus the time of a few statements and
// of the work returning once cancelled.
func rebalanceBound(poll time.Duration) time.Duration { return poll + poll/4 }

func crashRebalanceBound(ttl, poll time.Duration) time.Duration {
	return ttl + poll/4 + 2*time.Millisecond
}
