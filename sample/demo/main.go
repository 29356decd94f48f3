// Command demo shows leasehold's failover end to end, on an embedded
// SQLite file with nothing to set up: it starts three copies of the sample
// service (alpha and beta in cluster eu, gamma in us), lets them share
// 10,000 orders, kills the global ledger leader with SIGKILL a third of the
// way through, and checks from the database that a new leader took over,
// that no epoch ever had two leaders, and that every order was processed
// exactly once. The last copy, gamma, serves its status page, metrics and
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

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
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

// demo is the state of one run.
type demo struct {
	out   io.Writer
	dir   string // temporary directory: binary, database, logs
	bin   string
	dsn   string
	db    *gorm.DB
	coord *coordination.Coordinator // for reading leases and the pool; never run
	pool  *coordination.Pool
	procs []*proc
	t0    time.Time // when the three copies were started

	httpAddr string // where statusNode serves HTTP

	killed      *proc
	killedEpoch int64
	killAt      time.Time
	res         result
}

// result is what the final line reports.
type result struct {
	items, processedOnce, duplicates, unprocessed int64
	leadersPerEpoch                               int64
	failoverMS                                    int64 // -1 until measured
}

func (r result) String() string {
	failover := "?"
	if r.failoverMS >= 0 {
		failover = fmt.Sprint(r.failoverMS)
	}
	return fmt.Sprintf("items=%d processed_once=%d duplicates=%d leaders_per_epoch=%d failover_ms=%s",
		r.items, r.processedOnce, r.duplicates, r.leadersPerEpoch, failover)
}

// run runs the demo and returns the exit status. With keep, the temporary
// directory is kept after a successful run too.
func run(ctx context.Context, out io.Writer, keep bool) int {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	d := &demo{out: out, res: result{failoverMS: -1}}
	err := d.run(ctx)
	d.killAll()
	if d.db != nil && err != nil {
		// Best effort, for the FAIL line.
		_ = d.measure(context.Background())
	}
	d.closeDB()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("the demo did not finish within %v: %w", demoTimeout, err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") {
			fmt.Fprintf(out, "demo: %s\n", strings.TrimSpace(msg))
		}
		if d.dir != "" {
			fmt.Fprintf(out, "demo: kept %s (database demo.db, logs *.log) for debugging\n", d.dir)
		}
		fmt.Fprintf(out, "demo: FAIL %s %s\n", oneLine(err), d.res)
		return 1
	}
	if keep {
		fmt.Fprintf(out, "demo: kept %s (database demo.db, logs *.log); go run ./cmd/leasehold -dsn %s status lists its leases and pools\n",
			d.dir, filepath.Join(d.dir, "demo.db"))
	} else if err := os.RemoveAll(d.dir); err != nil {
		fmt.Fprintf(out, "demo: could not remove %s: %v\n", d.dir, err)
	}
	fmt.Fprintf(out, "demo: OK %s\n", d.res)
	return 0
}

// oneLine keeps the first line of err's message.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func (d *demo) printf(format string, args ...any) {
	fmt.Fprintf(d.out, "demo: "+format+"\n", args...)
}

// since formats the time since the copies were started.
func (d *demo) since(t time.Time) string {
	return fmt.Sprintf("%.1f s", t.Sub(d.t0).Seconds())
}

func (d *demo) run(ctx context.Context) error {
	began := time.Now()
	dir, err := os.MkdirTemp("", "leasehold-demo-")
	if err != nil {
		return err
	}
	d.dir = dir

	// 1. Build the sample, create and seed the database.
	d.printf("building ./sample with %s", procs.GoTool())
	if d.bin, err = build(ctx, dir); err != nil {
		return err
	}
	d.dsn = dbopen.SQLiteDSN(driver, filepath.Join(dir, "demo.db"))
	d.printf("database %s; to watch it from another terminal: go run ./cmd/leasehold -dsn %s watch",
		filepath.Join(dir, "demo.db"), filepath.Join(dir, "demo.db"))
	if err := d.seed(ctx); err != nil {
		return err
	}
	if err := d.openDB(); err != nil {
		return err
	}
	d.printf("built the sample and seeded %d orders into a fresh SQLite file (%s driver) in %.1f s",
		orders, driver, time.Since(began).Seconds())

	// 2. Start three copies, one serving its status page.
	if d.httpAddr, err = freeLoopbackAddr(); err != nil {
		return err
	}
	d.t0 = time.Now()
	var names []string
	for _, n := range nodes {
		p, err := d.start(n)
		if err != nil {
			return err
		}
		d.procs = append(d.procs, p)
		names = append(names, fmt.Sprintf("%s (%s)", n.name, n.cluster))
	}
	d.printf("started %s with %s; logs in %s", strings.Join(names, ", "), strings.Join(sampleTiming, " "), dir)
	d.printf("status page http://%s/status (of %s; also /status.json, /metrics, /healthz, /readyz)", d.httpAddr, statusNode.name)

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
	if err := d.measure(ctx); err != nil {
		return err
	}
	if err := d.printTimeline(ctx); err != nil {
		return err
	}
	if err := d.verify(ctx); err != nil {
		return err
	}
	d.printf("finished in %.1f s", time.Since(began).Seconds())
	return nil
}

// openDB opens the demo's own handle on the database, and a coordinator
// used only to read leases and the pool (it is never run).
func (d *demo) openDB() error {
	db, err := dbopen.Open(driver, d.dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	d.db = db
	id, err := identity.New("demo", "demo")
	if err != nil {
		return err
	}
	if d.coord, err = coordination.New(db, id, coordination.Config{DisableAutoMigrate: true}); err != nil {
		return err
	}
	d.pool, err = d.coord.Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{})
	return err
}

func (d *demo) closeDB() {
	if d.db == nil {
		return
	}
	if sqlDB, err := d.db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	d.db = nil
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
		if err := d.checkAlive(); err != nil {
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

// dbError marks errors of database reads, which waitFor retries.
type dbError struct{ err error }

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }

func isDBError(err error) bool {
	var de dbError
	return errors.As(err, &de)
}

// scan runs a query that returns one value into dest.
func (d *demo) scan(ctx context.Context, dest any, query string, args ...any) error {
	if err := d.db.WithContext(ctx).Raw(query, args...).Scan(dest).Error; err != nil {
		return dbError{fmt.Errorf("%s: %w", query, err)}
	}
	return nil
}

// processed returns how many orders are processed.
func (d *demo) processed(ctx context.Context) (int64, error) {
	var n int64
	err := d.scan(ctx, &n, "SELECT COUNT(*) FROM sample_orders WHERE processed_by IS NOT NULL")
	return n, err
}

// lease reads one lease row.
func (d *demo) lease(ctx context.Context, name string) (coordination.LeaseInfo, error) {
	ls, err := d.coord.Leases(ctx)
	if err != nil {
		return coordination.LeaseInfo{}, dbError{err}
	}
	for _, l := range ls {
		if l.Name == name {
			return l, nil
		}
	}
	return coordination.LeaseInfo{Name: name}, nil
}

// leader returns the node holding a live lease, or notYet.
func (d *demo) leader(ctx context.Context, name string) (string, coordination.LeaseInfo, error) {
	l, err := d.lease(ctx, name)
	if err != nil {
		return "", l, err
	}
	if !l.Live {
		return "", l, notYet("no live holder of %s", name)
	}
	id, err := identity.ParseHolder(l.Holder)
	if err != nil {
		return "", l, err
	}
	return id.Node, l, nil
}

// assignment is one node's share of a pool generation, from the timeline.
type assignment struct {
	Node string
	Idx  int
	Cnt  int
}

// workingGeneration checks that the pool's current generation has count
// members and that each of them reported its assignment (it is working).
func (d *demo) workingGeneration(ctx context.Context, count int) (int64, []assignment, error) {
	st, err := d.pool.State(ctx)
	if err != nil {
		return 0, nil, dbError{err}
	}
	if len(st.List) != count {
		return 0, nil, notYet("orders pool generation %d has %d members, want %d", st.Generation, len(st.List), count)
	}
	var as []assignment
	err = d.db.WithContext(ctx).Raw("SELECT node, idx, cnt FROM sample_timeline "+
		"WHERE kind = 'assignment-changed' AND worker = 'orders' AND generation = ? ORDER BY idx", st.Generation).
		Scan(&as).Error
	if err != nil {
		return 0, nil, dbError{err}
	}
	if len(as) != count {
		return 0, nil, notYet("%d of %d members of orders generation %d are working", len(as), count, st.Generation)
	}
	return st.Generation, as, nil
}

func formatAssignments(as []assignment) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("%s %d/%d", a.Node, a.Idx, a.Cnt)
	}
	return strings.Join(parts, ", ")
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
		if ledger, ledgerLease, err = d.leader(ctx, "global/ledger"); err != nil {
			return err
		}
		if eu, _, err = d.leader(ctx, "cluster/eu/cluster-report"); err != nil {
			return err
		}
		if us, _, err = d.leader(ctx, "cluster/us/cluster-report"); err != nil {
			return err
		}
		gen, as, err = d.workingGeneration(ctx, len(nodes))
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
		if done, err = d.processed(ctx); err != nil {
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
	name, l, err := d.leader(ctx, "global/ledger")
	if err != nil {
		return fmt.Errorf("find the ledger leader: %w", err)
	}
	var victim *proc
	for _, p := range d.procs {
		if p.name == name {
			victim = p
		}
	}
	if victim == nil {
		return fmt.Errorf("the ledger lease is held by %q, which is not one of the demo's processes", l.Holder)
	}
	d.killed, d.killedEpoch = victim, l.Epoch
	victim.killed = true
	d.killAt = time.Now()
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	d.printf("after %s: %d/%d orders processed; killed %s, the ledger leader (epoch %d), with SIGKILL",
		d.since(d.killAt), done, orders, name, l.Epoch)
	if err := d.record(ctx, timelineRow{
		AtUS: d.killAt.UnixMicro(), Node: victim.name, Cluster: victim.cluster, Holder: l.Holder,
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
		if leader, l, err = d.leader(ctx, "global/ledger"); err != nil {
			return err
		}
		if l.Epoch <= d.killedEpoch || leader == d.killed.name {
			return notYet("the ledger lease is still at epoch %d of %s", l.Epoch, leader)
		}
		leadAt = time.Now()
		return nil
	})
	if err != nil {
		return err
	}
	d.printf("failover: %s leads the ledger at epoch %d, seen %.1f s after the kill",
		leader, l.Epoch, leadAt.Sub(d.killAt).Seconds())

	var gen int64
	var as []assignment
	err = d.waitFor(ctx, "the orders pool to settle on 2 members", failoverTimeout, func(ctx context.Context) error {
		var err error
		gen, as, err = d.workingGeneration(ctx, len(nodes)-1)
		return err
	})
	if err != nil {
		return err
	}
	d.printf("rebalance: orders generation %d: %s, %.1f s after the kill",
		gen, formatAssignments(as), time.Since(d.killAt).Seconds())
	return nil
}

// waitAllProcessed waits until every order is processed, printing
// progress every few seconds.
func (d *demo) waitAllProcessed(ctx context.Context) error {
	lastPrint := time.Now()
	err := d.waitFor(ctx, "every order to be processed", finishTimeout, func(ctx context.Context) error {
		done, err := d.processed(ctx)
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
	return d.record(ctx, timelineRow{AtUS: now.UnixMicro(), Node: "demo", Kind: kindAllProcessed,
		Detail: fmt.Sprintf("all %d orders processed", orders)})
}

// stopSurvivors sends SIGTERM to the processes still running and waits
// for them to exit with status 0; after stopTimeout it kills them.
func (d *demo) stopSurvivors(ctx context.Context) error {
	var names []string
	now := time.Now()
	for _, p := range d.procs {
		if p.killed {
			continue
		}
		p.stopped = true
		if err := p.Signal(syscall.SIGTERM); err != nil {
			return err
		}
		names = append(names, p.name)
	}
	if err := d.record(ctx, timelineRow{AtUS: now.UnixMicro(), Node: "demo", Kind: kindSigterm,
		Detail: strings.Join(names, ", ")}); err != nil {
		return err
	}
	var errs []error
	for _, p := range d.procs {
		if !p.stopped {
			continue
		}
		if !p.WaitExit(ctx, stopTimeout-time.Since(now)) {
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
			errs = append(errs, fmt.Errorf("%s did not exit within %v of SIGTERM and was killed; see %s", p.name, stopTimeout, p.logPath))
			continue
		}
		if p.Err() != nil {
			errs = append(errs, fmt.Errorf("%s exited with %w after SIGTERM; see %s", p.name, p.Err(), p.logPath))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	d.printf("%s exited cleanly %.1f s after SIGTERM", strings.Join(names, " and "), time.Since(now).Seconds())
	return nil
}
