// Command demo shows leasehold's failover end to end, on an embedded
// SQLite file with nothing to set up: it starts three copies of the sample
// service (alpha and beta in cluster eu, gamma in us), lets them share
// 10,000 orders, kills the global ledger leader with SIGKILL a third of the
// way through, and checks from the database that a new leader took over,
// that no epoch ever had two leaders, and that every order was processed
// exactly once, and from the logs that no copy logged a WARN or ERROR line
// the kill does not explain (logs.go). The last copy, gamma, serves its status page, metrics and
// probes on a free loopback port, whose URL the demo prints and whose
// endpoints it checks once the copies run. It prints a timeline of what
// happened and ends with one line:
//
//	demo: OK items=10000 processed_once=10000 duplicates=0 leaders_per_epoch=1 failover_ms=3412
//
// Run it with make demo (or go run ./demo in the sample directory).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	procs "github.com/leasehold/leasehold/internal/proc"
)

const (
	// orders is the number of orders seeded.
	orders = 10000
	// driver is the SQLite driver that needs no cgo.
	driver = dbopen.SQLitePure

	// pollEvery is how often the demo reads the database while waiting.
	pollEvery = 100 * time.Millisecond
	// progressEvery is how often it prints progress while orders are
	// being processed.
	progressEvery = 5 * time.Second

	// Bounds of the phases.
	demoTimeout     = 115 * time.Second // the whole demo
	startupTimeout  = 30 * time.Second  // leaders elected, pool of 3 working
	thirdTimeout    = 45 * time.Second  // a third of the orders processed
	failoverTimeout = 30 * time.Second  // new ledger leader, pool of 2 working
	finishTimeout   = 75 * time.Second  // every order processed after the failover
	stopTimeout     = 20 * time.Second  // the survivors exit after SIGTERM
)

// sampleTiming are fast lease timings for the demo: a killed holder's
// lease expires within 3 s, and followers try every 300 ms. The work delay
// paces the orders so that three copies need about 20 s for all of them.
var sampleTiming = []string{"-ttl", "3s", "-renew", "1s", "-retry", "300ms", "-work-delay", "5ms"}

func main() {
	keep := flag.Bool("keep", false, "keep the temporary directory (database and logs) after a successful run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Stdout, *keep)
	stop()
	os.Exit(code)
}

// console prints the demo's lines, with times since the copies started.
type console struct {
	out io.Writer
	t0  time.Time // when the three copies were started
}

func (c *console) printf(format string, args ...any) {
	fmt.Fprintf(c.out, "demo: "+format+"\n", args...)
}

// since formats the time since the copies were started.
func (c *console) since(t time.Time) string {
	return fmt.Sprintf("%.1f s", t.Sub(c.t0).Seconds())
}

// demo is one run: it takes the fleet of copies through the phases,
// reading the store to tell when each is over, and leaves the numbers and
// the checks of the end to its report.
type demo struct {
	*console
	fleet  *fleet
	store  *store
	report *report
	kill   killing
}

// killing is the demo's kill of the ledger leader: the copy, the epoch it
// led, and when. victim is nil until the kill.
type killing struct {
	victim *proc
	epoch  int64
	at     time.Time
}

func newDemo(out io.Writer) *demo {
	c := &console{out: out}
	d := &demo{console: c, fleet: &fleet{}, store: &store{}}
	d.report = &report{console: c, store: d.store, kill: &d.kill, res: result{failoverMS: -1}}
	return d
}

// run runs the demo and returns the exit status. With keep, the temporary
// directory is kept after a successful run too.
func run(ctx context.Context, out io.Writer, keep bool) int {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	d := newDemo(out)
	err := d.run(ctx)
	d.fleet.killAll()
	if d.store.db != nil && err != nil {
		// Best effort, for the FAIL line.
		_ = d.report.measure(context.Background())
	}
	d.store.close()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("the demo did not finish within %v: %w", demoTimeout, err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") {
			fmt.Fprintf(out, "demo: %s\n", strings.TrimSpace(msg))
		}
		if d.fleet.dir != "" {
			fmt.Fprintf(out, "demo: kept %s (database demo.db, logs *.log) for debugging\n", d.fleet.dir)
		}
		fmt.Fprintf(out, "demo: FAIL %s %s\n", oneLine(err), d.report.res)
		return 1
	}
	if keep {
		fmt.Fprintf(out, "demo: kept %s (database demo.db, logs *.log); go run -C cmd/leasehold . -dsn %s status lists its leases and pools\n",
			d.fleet.dir, filepath.Join(d.fleet.dir, "demo.db"))
	} else if err := os.RemoveAll(d.fleet.dir); err != nil {
		fmt.Fprintf(out, "demo: could not remove %s: %v\n", d.fleet.dir, err)
	}
	fmt.Fprintf(out, "demo: OK %s\n", d.report.res)
	return 0
}

// oneLine keeps the first line of err's message.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func (d *demo) run(ctx context.Context) error {
	began := time.Now()
	dir, err := os.MkdirTemp("", "leasehold-demo-")
	if err != nil {
		return err
	}
	d.fleet.dir = dir

	// 1. Build the sample, create and seed the database.
	d.printf("building ./sample with %s", procs.GoTool())
	if d.fleet.bin, err = build(ctx, dir); err != nil {
		return err
	}
	d.fleet.dsn = dbopen.SQLiteDSN(driver, filepath.Join(dir, "demo.db"))
	d.printf("database %s; to watch it from another terminal: go run -C cmd/leasehold . -dsn %s watch",
		filepath.Join(dir, "demo.db"), filepath.Join(dir, "demo.db"))
	if err := d.fleet.seed(ctx); err != nil {
		return err
	}
	if err := d.store.open(d.fleet.dsn); err != nil {
		return err
	}
	d.printf("built the sample and seeded %d orders into a fresh SQLite file (%s driver) in %.1f s",
		orders, driver, time.Since(began).Seconds())

	// 2. Start three copies, one serving its status page.
	if d.fleet.httpAddr, err = freeLoopbackAddr(); err != nil {
		return err
	}
	d.t0 = time.Now()
	var names []string
	for _, n := range nodes {
		if _, err := d.fleet.start(n); err != nil {
			return err
		}
		names = append(names, fmt.Sprintf("%s (%s)", n.name, n.cluster))
	}
	d.printf("started %s with %s; logs in %s", strings.Join(names, ", "), strings.Join(sampleTiming, " "), dir)
	d.printf("status page http://%s/status (of %s; also /status.json, /metrics, /healthz, /readyz)", d.fleet.httpAddr, statusNode.name)

	// 3. Wait for the leaders and a working pool of three.
	if err := d.waitStartup(ctx); err != nil {
		return err
	}

	if err := d.checkHTTP(ctx); err != nil {
		return err
	}

	// 4. A third of the way through, kill the ledger leader.
	if err := d.killLeader(ctx); err != nil {
		return err
	}

	// 5. Failover, then every order processed.
	if err := d.waitFailover(ctx); err != nil {
		return err
	}
	if err := d.waitAllProcessed(ctx); err != nil {
		return err
	}

	// 6. Stop the survivors.
	if err := d.stopSurvivors(ctx); err != nil {
		return err
	}

	// 7. Verify, 8. print the timeline.
	if err := d.report.measure(ctx); err != nil {
		return err
	}
	if err := d.report.printTimeline(ctx); err != nil {
		return err
	}
	if err := d.report.verify(ctx); err != nil {
		return err
	}
	if err := d.checkLogs(); err != nil {
		return err
	}
	d.printf("finished in %.1f s", time.Since(began).Seconds())
	return nil
}

// errNotYet is what a condition returns while it does not hold; its
// detail goes into the timeout error.
type errNotYet struct{ what string }

func (e errNotYet) Error() string { return e.what }

func notYet(format string, args ...any) error { return errNotYet{fmt.Sprintf(format, args...)} }

// waitFor polls cond every pollEvery until it returns nil, failing after
// timeout, when ctx ends, when a process exits unexpectedly, or when cond
// returns an error other than errNotYet. Database errors count as "not
// yet": the last one is reported on timeout.
func (d *demo) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last error
	for {
		if err := d.fleet.checkAlive(); err != nil {
			return err
		}
		err := cond(ctx)
		if err == nil {
			return nil
		}
		var ny errNotYet
		if !errors.As(err, &ny) && ctx.Err() == nil && !isDBError(err) {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %w)", what, ctx.Err(), last)
		case <-deadline.C:
			return fmt.Errorf("waiting for %s: not within %v (last: %w)", what, timeout, last)
		case <-tick.C:
		}
	}
}

// waitStartup waits for the ledger leader, one cluster-report leader per
// cluster, and a pool generation of three working members.
func (d *demo) waitStartup(ctx context.Context) error {
	var ledger, eu, us string
	var ledgerLease coordination.LeaseInfo
	var gen int64
	var as []assignment
	err := d.waitFor(ctx, "the leaders and an orders pool of 3", startupTimeout, func(ctx context.Context) error {
		var err error
		if ledger, ledgerLease, err = d.store.leader(ctx, "global/ledger"); err != nil {
			return err
		}
		if eu, _, err = d.store.leader(ctx, "cluster/eu/cluster-report"); err != nil {
			return err
		}
		if us, _, err = d.store.leader(ctx, "cluster/us/cluster-report"); err != nil {
			return err
		}
		gen, as, err = d.store.workingGeneration(ctx, len(nodes))
		return err
	})
	if err != nil {
		return err
	}
	d.printf("after %s: ledger leader %s (epoch %d); cluster-report leaders eu=%s, us=%s; orders generation %d: %s",
		d.since(time.Now()), ledger, ledgerLease.Epoch, eu, us, gen, formatAssignments(as))
	return nil
}

// killLeader waits until a third of the orders are processed and kills
// the process that holds the global ledger lease with SIGKILL.
func (d *demo) killLeader(ctx context.Context) error {
	var done int64
	err := d.waitFor(ctx, "a third of the orders to be processed", thirdTimeout, func(ctx context.Context) error {
		var err error
		if done, err = d.store.processed(ctx); err != nil {
			return err
		}
		if done < orders/3 {
			return notYet("%d of %d orders processed", done, orders)
		}
		return nil
	})
	if err != nil {
		return err
	}
	name, l, err := d.store.leader(ctx, "global/ledger")
	if err != nil {
		return fmt.Errorf("find the ledger leader: %w", err)
	}
	victim := d.fleet.find(name)
	if victim == nil {
		return fmt.Errorf("the ledger lease is held by %q, which is not one of the demo's processes", l.Holder)
	}
	d.kill.victim, d.kill.epoch = victim, l.Epoch
	victim.killed = true
	d.kill.at = time.Now()
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	d.printf("after %s: %d/%d orders processed; killed %s, the ledger leader (epoch %d), with SIGKILL",
		d.since(d.kill.at), done, orders, name, l.Epoch)
	if err := d.store.record(ctx, timelineRow{
		AtUS: d.kill.at.UnixMicro(), Node: victim.name, Cluster: victim.cluster, Holder: l.Holder,
		Kind: kindKilled, Worker: "ledger", Epoch: l.Epoch, Detail: "SIGKILL from the demo",
	}); err != nil {
		return err
	}
	if !victim.WaitExit(ctx, 10*time.Second) {
		return fmt.Errorf("%s still running 10 s after SIGKILL", name)
	}
	return nil
}

// waitFailover waits for a new ledger leader and a pool of two working.
func (d *demo) waitFailover(ctx context.Context) error {
	var (
		leader string
		l      coordination.LeaseInfo
		leadAt time.Time
	)
	err := d.waitFor(ctx, "a new ledger leader", failoverTimeout, func(ctx context.Context) error {
		var err error
		if leader, l, err = d.store.leader(ctx, "global/ledger"); err != nil {
			return err
		}
		if l.Epoch <= d.kill.epoch || leader == d.kill.victim.name {
			return notYet("the ledger lease is still at epoch %d of %s", l.Epoch, leader)
		}
		leadAt = time.Now()
		return nil
	})
	if err != nil {
		return err
	}
	d.printf("failover: %s leads the ledger at epoch %d, seen %.1f s after the kill",
		leader, l.Epoch, leadAt.Sub(d.kill.at).Seconds())

	var gen int64
	var as []assignment
	err = d.waitFor(ctx, "the orders pool to settle on 2 members", failoverTimeout, func(ctx context.Context) error {
		var err error
		gen, as, err = d.store.workingGeneration(ctx, len(nodes)-1)
		return err
	})
	if err != nil {
		return err
	}
	d.printf("rebalance: orders generation %d: %s, %.1f s after the kill",
		gen, formatAssignments(as), time.Since(d.kill.at).Seconds())
	return nil
}

// waitAllProcessed waits until every order is processed, printing
// progress every few seconds.
func (d *demo) waitAllProcessed(ctx context.Context) error {
	lastPrint := time.Now()
	err := d.waitFor(ctx, "every order to be processed", finishTimeout, func(ctx context.Context) error {
		done, err := d.store.processed(ctx)
		if err != nil {
			return err
		}
		if done >= orders {
			return nil
		}
		if time.Since(lastPrint) >= progressEvery {
			d.printf("after %s: %d/%d orders processed", d.since(time.Now()), done, orders)
			lastPrint = time.Now()
		}
		return notYet("%d of %d orders processed", done, orders)
	})
	if err != nil {
		return err
	}
	now := time.Now()
	d.printf("after %s: all %d orders processed", d.since(now), orders)
	return d.store.record(ctx, timelineRow{AtUS: now.UnixMicro(), Node: "demo", Kind: kindAllProcessed,
		Detail: fmt.Sprintf("all %d orders processed", orders)})
}

// stopSurvivors sends SIGTERM to the processes still running and waits
// for them to exit with status 0; after stopTimeout it kills them.
func (d *demo) stopSurvivors(ctx context.Context) error {
	now := time.Now()
	names, err := d.fleet.terminate()
	if err != nil {
		return err
	}
	if err := d.store.record(ctx, timelineRow{AtUS: now.UnixMicro(), Node: "demo", Kind: kindSigterm,
		Detail: strings.Join(names, ", ")}); err != nil {
		return err
	}
	if err := d.fleet.waitStopped(ctx, now); err != nil {
		return err
	}
	d.printf("%s exited cleanly %.1f s after SIGTERM", strings.Join(names, " and "), time.Since(now).Seconds())
	return nil
}
