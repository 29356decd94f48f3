package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/tools/chaos/faultproxy"
)

// fleet is the dialect's worker processes: it starts them (in the
// extended run each with its own fault proxy), follows their histories to
// tell who leads and whether the pool is fully assigned, and stops them.
type fleet struct {
	*runLog
	bin, dir string
	// histDir is where the workers write their histories.
	histDir string
	rng     *rand.Rand
	// extended: see Options.Extended.
	extended bool
	database *database
	tail     *tailer
	procs    []*proc
	nodes    int
}

// start starts one more worker process. On Galera the workers talk to
// the nodes in turn.
func (f *fleet) start() (*proc, error) {
	f.nodes++
	node := fmt.Sprintf("w%d", f.nodes)
	skew := MinSkew + time.Duration(f.rng.Int64N(int64(MaxSkew-MinSkew)/int64(time.Minute)))*time.Minute
	if f.rng.IntN(2) == 0 {
		skew = -skew
	}
	dbNode := -1
	var args []string
	if f.database.galera != nil {
		dbNode = (f.nodes - 1) % testdb.GaleraNodes
		args = []string{"-check-dsns", strings.Join(f.database.galera.checkDSNs(dbNode), ",")}
	}
	if f.extended {
		return f.startExtended(node, dbNode, skew, args)
	}
	p, err := startProc(f.bin, node, filepath.Join(f.dir, node+".log"), append(append([]string{
		"-driver", f.database.driver, "-dsn", f.database.workerDSN(dbNode), "-dir", f.histDir, "-clock-skew", skew.String()},
		args...), f.database.workerArgs...)...)
	if err != nil {
		return nil, err
	}
	p.skew, p.galeraNode = skew, dbNode
	f.procs = append(f.procs, p)
	return p, nil
}

// startExtended starts a worker of the extended run, on Galera node
// dbNode (-1 elsewhere), with the arguments args: with its own fault
// proxy (not on SQLite and the pairs) and its pool bounded to
// ExhaustConns connections, held on SIGUSR1.
func (f *fleet) startExtended(node string, dbNode int, skew time.Duration, args []string) (*proc, error) {
	dsn := f.database.workerDSN(dbNode)
	var px *faultproxy.Proxy
	if up := f.database.proxyTarget(dbNode); up != "" {
		var err error
		px, err = faultproxy.New(up)
		if err != nil {
			return nil, err
		}
		dsn = f.database.dsnVia(px.Addr())
	}
	p, err := startProc(f.bin, node, filepath.Join(f.dir, node+".log"), append(append([]string{
		"-driver", f.database.driver, "-dsn", dsn, "-dir", f.histDir,
		"-max-open-conns", fmt.Sprint(ExhaustConns), "-exhaust-for", ExhaustFor.String(), "-clock-skew", skew.String()},
		args...), f.database.workerArgs...)...)
	if err != nil {
		if px != nil {
			_ = px.Close()
		}
		return nil, err
	}
	p.proxy, p.skew, p.galeraNode = px, skew, dbNode
	f.procs = append(f.procs, p)
	return p, nil
}

// closeProxies closes the fault proxies of every worker.
func (f *fleet) closeProxies() {
	for _, p := range f.procs {
		if p.proxy != nil {
			_ = p.proxy.Close()
		}
	}
}

// running returns the processes neither killed nor exited (paused ones
// included), and live the pids of those not paused.
func (f *fleet) running() (ps []*proc, live map[int]bool) {
	live = map[int]bool{}
	for _, p := range f.procs {
		if p.killed || p.stopped || p.Exited() {
			continue
		}
		ps = append(ps, p)
		if !p.paused {
			live[p.Pid] = true
		}
	}
	return ps, live
}

// ready reports whether a live process leads and the live processes hold
// a full assignment of one generation with one index each.
func (f *fleet) ready() (bool, error) {
	if err := f.tail.poll(); err != nil {
		return false, err
	}
	for _, p := range f.procs {
		if !p.killed && !p.stopped && p.Exited() {
			return false, fmt.Errorf("worker %s (pid %d) exited on its own: %w; log %s",
				p.node, p.Pid, cmpErr(p.Err(), errors.New("exit status 0")), p.logPath)
		}
	}
	_, live := f.running()
	return f.tail.leaderOf(live) != 0 && f.tail.fullyAssigned(live, len(live)), nil
}

// waitReady waits at most d until ready.
func (f *fleet) waitReady(ctx context.Context, d time.Duration) error {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		ok, err := f.ready()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("no leader and full %d-member assignment within %v", Procs, d)
		case <-t.C:
		}
	}
}

// waitRecovered waits until ready, and then gap longer so that the next
// fault starts from a settled system. It returns how long after from the
// runner first saw the system ready again (after from+TTL/2: a paused or
// cut process's terms look open until it notices its fault), or -1 if it
// did not within readyTimeout. The checker measures the failover itself,
// from the histories; the next fault does not cut its window short, since
// it starts after the recovery.
func (f *fleet) waitRecovered(ctx context.Context, from time.Time) (time.Duration, error) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	recovered := time.Duration(-1)
	settle := from.Add(TTL / 2)
	for {
		now := time.Now()
		if recovered < 0 && now.After(settle) {
			ok, err := f.ready()
			if err != nil {
				return 0, err
			}
			if ok {
				recovered = now.Sub(from)
			}
		}
		if recovered >= 0 && now.After(from.Add(recovered+gap)) {
			return recovered, nil
		}
		if recovered < 0 && now.After(from.Add(readyTimeout)) {
			return recovered, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// stopAll stops every running worker gracefully: SIGCONT (none should be
// paused), SIGTERM, then SIGKILL of the process group after termTimeout.
func (f *fleet) stopAll() {
	ps, _ := f.running()
	for _, p := range ps {
		p.stopped = true
		if p.paused {
			_ = p.Signal(syscall.SIGCONT)
			p.paused = false
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			f.problem("%v", err)
		}
	}
	deadline := time.Now().Add(termTimeout)
	for _, p := range ps {
		if !p.WaitExit(context.Background(), time.Until(deadline)) {
			f.problem("worker %s (pid %d) did not stop within %v of SIGTERM; killed", p.node, p.Pid, termTimeout)
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
		} else if p.Err() != nil {
			f.problem("worker %s (pid %d) stopped with %v; log %s", p.node, p.Pid, p.Err(), p.logPath)
		}
	}
}

// reportExits reports, as a problem, every worker that exited neither
// killed nor stopped.
func (f *fleet) reportExits() {
	for _, p := range f.procs {
		if !p.killed && !p.stopped && p.Exited() {
			f.problem("worker %s (pid %d) exited on its own: %v; log %s", p.node, p.Pid, p.Err(), p.logPath)
		}
	}
}

// killAll kills the process group of every worker still running. It is
// the last resort, deferred by run.
func (f *fleet) killAll() {
	for _, p := range f.procs {
		if !p.Exited() {
			_ = p.Signal(syscall.SIGCONT)
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
		}
	}
}

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}
