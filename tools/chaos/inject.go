package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/history"
	"github.com/leasehold/leasehold/internal/testdb"
)

// injector injects the faults: on the fleet's workers (signals, their
// fault proxies), on the database server, and on the replicated pair
// (failovers, and the rebuild after each). It records each fault's start
// and heal in the verdict's history.
type injector struct {
	*runLog
	rng      *rand.Rand
	database *database
	fleet    *fleet
	verdict  *verdict
}

// inject injects one fault and returns the time recovery is measured
// from: the kill for a kill, the heal otherwise.
func (i *injector) inject(k history.FaultKind) (time.Time, error) {
	ps, live := i.fleet.running()
	leader := i.fleet.tail.leaderOf(live)
	byPID := func(pid int) *proc {
		for _, p := range ps {
			if p.Pid == pid {
				return p
			}
		}
		return nil
	}
	if k == history.FaultDBRestart && i.database.srv == nil {
		k = history.FaultKill
	}
	switch k {
	case history.FaultKill:
		target := ps[i.rng.IntN(len(ps))]
		role := "random"
		if i.rng.IntN(2) == 0 && byPID(leader) != nil {
			target, role = byPID(leader), "leader"
		}
		i.logf("fault kill: SIGKILL %s (pid %d, %s)", target.node, target.Pid, role)
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		at := time.Now()
		target.killed = true
		if err := target.Signal(syscall.SIGKILL); err != nil {
			return at, err
		}
		if !target.WaitExit(context.Background(), 10*time.Second) {
			return at, fmt.Errorf("worker %s (pid %d) did not exit within 10s of SIGKILL", target.node, target.Pid)
		}
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal, Text: "replacement started"})
		p, err := i.fleet.start()
		if err != nil {
			return at, err
		}
		i.logf("started replacement %s (pid %d)", p.node, p.Pid)
		return at, nil
	case history.FaultPause:
		target := byPID(leader)
		if target == nil {
			target = ps[i.rng.IntN(len(ps))]
		}
		i.logf("fault pause: SIGSTOP %s (pid %d) for %v", target.node, target.Pid, PauseFor)
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		target.paused = true
		if err := target.Signal(syscall.SIGSTOP); err != nil {
			return time.Now(), err
		}
		timer := time.NewTimer(PauseFor)
		<-timer.C
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		at := time.Now()
		target.paused = false
		return at, target.Signal(syscall.SIGCONT)
	case history.FaultDBRestart:
		i.logf("fault db-restart: stopping the %s server for %v", i.name, DBDownFor)
		i.verdict.fault(history.Event{FaultKind: k, Target: i.name, Phase: history.PhaseStart})
		began := time.Now()
		if err := i.database.srv.Stop(); err != nil {
			return began, fmt.Errorf("stop the %s server: %w", i.name, err)
		}
		stopped := time.Now()
		timer := time.NewTimer(DBDownFor)
		<-timer.C
		i.verdict.fault(history.Event{FaultKind: k, Target: i.name, Phase: history.PhaseHeal})
		at := time.Now()
		if err := i.database.srv.Start(); err != nil {
			return at, fmt.Errorf("start the %s server again: %w", i.name, err)
		}
		i.logf("server stopped in %v, down for %v, started again in %v",
			stopped.Sub(began).Round(time.Millisecond), DBDownFor, time.Since(at).Round(time.Millisecond))
		if d := time.Since(at); d > RestartAllowance {
			i.problem("the %s server took %v to start, more than the allowance %v", i.name, d, RestartAllowance)
		}
		return at, nil
	case history.FaultClockSkew:
		target, role := byPID(leader), "leader"
		if target == nil || i.rng.IntN(3) == 0 {
			target, role = ps[i.rng.IntN(len(ps))], "random"
		}
		i.logf("fault clock-skew: wall clock of %s (pid %d, %s) %v off for %v", target.node, target.Pid, role, target.skew, SkewFor)
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart, Text: "wall clock " + target.skew.String() + " off"})
		target.skews++
		if err := target.Signal(syscall.SIGUSR2); err != nil {
			return time.Now(), err
		}
		timer := time.NewTimer(SkewFor)
		<-timer.C
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		return time.Now(), target.Signal(syscall.SIGUSR2)
	}
	if isFailover(k) {
		return i.injectFailover(k)
	}
	if isGaleraFault(k) {
		return i.injectGalera(k, ps, byPID(leader))
	}
	return i.injectExtended(k, ps, byPID(leader))
}

// isFailover reports whether k is a failover of the replicated pair.
func isFailover(k history.FaultKind) bool {
	return k == history.FaultFailoverSync || k == history.FaultFailoverAsync
}

// injectFailover fails the pair's primary over to its standby and returns
// the time the promoted server accepted writes. The old primary is
// stopped (fast shutdown) or killed (SIGKILL), at random.
//
// failover-sync: the pair is synchronous, so every acknowledged commit is
// on the standby; the primary goes while leaders, fenced writers and
// pools are busy, and the standby is promoted.
//
// failover-async: the pair is asynchronous and the standby is stopped
// first, so that nothing more reaches it. A worker is then killed (the
// kill fault, on the leader or at random) and the runner waits for the
// leader and the full assignment that follow, and FailoverWindow longer:
// that acquisition, the rebalance, the renewals and the writes exist on
// the old primary only. The primary goes, the standby starts again and
// is promoted: all of that is lost.
func (i *injector) injectFailover(k history.FaultKind) (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	mode := testdb.Sync
	if k == history.FaultFailoverAsync {
		mode = testdb.Async
	}
	if i.database.pair.Mode() != mode {
		if err := i.database.pair.SetMode(ctx, mode); err != nil {
			return time.Now(), fmt.Errorf("switch the pair to %s: %w", mode, err)
		}
	}
	old, standby := i.database.pair.Primary(), i.database.pair.Standby()
	i.logf("fault %s: primary on port %d, standby on port %d", k, old.Port(), standby.Port())
	var lossFrom int64
	if k == history.FaultFailoverAsync {
		// Every commit acknowledged before lossFrom is on the standby
		// once it has caught up; from the stop on, nothing reaches it.
		lossFrom = history.Now()
		if err := i.database.pair.WaitCaughtUp(ctx); err != nil {
			return time.Now(), fmt.Errorf("let the standby catch up: %w", err)
		}
		if err := standby.Stop(); err != nil {
			return time.Now(), fmt.Errorf("stop the standby: %w", err)
		}
		if _, err := i.inject(history.FaultKill); err != nil {
			return time.Now(), err
		}
		if err := i.fleet.waitReady(ctx, readyTimeout); err != nil {
			i.problem("fault %s: after the kill on the old primary: %v", k, err)
		}
		timer := time.NewTimer(FailoverWindow)
		<-timer.C
	}
	// The failover starts when the primary goes. Recorded here, after the
	// kill of failover-async has recovered, it also ends that kill's
	// recovery window (rule E): what the primary's death does to the pool
	// is this fault's to recover from, not the kill's.
	i.verdict.fault(history.Event{FaultKind: k, Target: i.name, Phase: history.PhaseStart})
	how := "stopped"
	var err error
	gone := time.Now()
	if i.rng.IntN(2) == 0 {
		how, err = "killed", old.Kill()
	} else {
		err = old.Stop()
	}
	if err != nil {
		return time.Now(), fmt.Errorf("stop the primary: %w", err)
	}
	began := time.Now()
	how += " in " + began.Sub(gone).Round(time.Millisecond).String()
	if k == history.FaultFailoverAsync {
		if err := standby.Start(); err != nil {
			return time.Now(), fmt.Errorf("start the standby again: %w", err)
		}
	}
	if err := i.database.pair.Promote(ctx); err != nil {
		return time.Now(), err
	}
	if k == history.FaultFailoverAsync {
		i.verdict.lost(lossFrom, history.Now())
	}
	i.verdict.fault(history.Event{FaultKind: k, Target: i.name, Phase: history.PhaseHeal})
	at := time.Now()
	i.logf("old primary %s; standby promoted %v later, on port %d", how, at.Sub(began).Round(time.Millisecond), standby.Port())
	return at, nil
}

// rebuild makes the old primary the standby of the new one, after a
// failover's recovery and before the next fault.
func (i *injector) rebuild(ctx context.Context) error {
	began := time.Now()
	if err := i.database.pair.Rebuild(ctx); err != nil {
		return err
	}
	i.logf("rebuilt the old primary as a standby on port %d in %v", i.database.pair.Standby().Port(), time.Since(began).Round(time.Millisecond))
	return nil
}

// injectExtended injects one fault of the kinds Options.Extended adds, on
// the leader (or a random process when none leads), and returns the time
// of the heal.
func (i *injector) injectExtended(k history.FaultKind, ps []*proc, target *proc) (time.Time, error) {
	role := "leader"
	if target == nil {
		target, role = ps[i.rng.IntN(len(ps))], "random"
	}
	wait := func(d time.Duration) {
		timer := time.NewTimer(d)
		<-timer.C
	}
	switch k {
	case history.FaultCut, history.FaultLatency:
		if !i.fleet.extended || target.proxy == nil {
			return time.Time{}, fmt.Errorf("fault %s needs a fault proxy (extended run, not SQLite)", k)
		}
		if k == history.FaultCut {
			i.logf("fault cut: cutting %s (pid %d, %s) off the database for %v", target.node, target.Pid, role, CutFor)
			i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
			target.proxy.Cut()
			wait(CutFor)
			i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
			at := time.Now()
			target.proxy.Heal()
			return at, nil
		}
		i.logf("fault latency: %v on %s (pid %d, %s) for %v", Latency, target.node, target.Pid, role, LatencyFor)
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		target.proxy.SetLatency(Latency)
		wait(LatencyFor)
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		at := time.Now()
		target.proxy.SetLatency(0)
		return at, nil
	case history.FaultPoolExhaustion:
		if !i.fleet.extended {
			return time.Time{}, fmt.Errorf("fault %s needs the extended run", k)
		}
		i.logf("fault pool-exhaustion: SIGUSR1 %s (pid %d, %s): holds its %d connections for %v", target.node, target.Pid, role, ExhaustConns, ExhaustFor)
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		if err := target.Signal(syscall.SIGUSR1); err != nil {
			return time.Now(), err
		}
		wait(ExhaustFor)
		// The worker releases its transactions ExhaustFor after the
		// signal, by itself.
		i.verdict.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		return time.Now(), nil
	}
	return time.Time{}, fmt.Errorf("unknown fault kind %q", k)
}
