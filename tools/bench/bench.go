// Package bench is the scale benchmark behind make bench: it measures
// what leasehold costs as the number of leases and processes grows, on a
// private PostgreSQL server, a private MariaDB server and an SQLite file,
// and prints each figure against its target.
//
// The benchmark is made of sections. Each runs on some dialects and
// prints one table per dialect, every figure with its target and PASS or
// FAIL (or "-" for a figure without a target). The last line is
// "bench: OK ..." or "bench: FAIL <section>/<dialect>: <figures>; ...".
// Every wait is bounded: a phase that does not finish within its bound is
// a FAIL with the time it was given, never a hang.
//
// Worker processes are ./bench/worker of the tools module, built once per
// run and started through internal/proc, so that they die with the runner.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/internal/proc"
	"github.com/leasehold/leasehold/internal/testdb"
)

// Dialects are the dialects the benchmark knows, in order.
var Dialects = []string{"postgres", "mysql", "sqlite"}

// Options configure Run. Zero fields take the defaults.
type Options struct {
	// Sections to run, by name (default: every section, in order).
	Sections []string
	// Dialects to run on (default: Dialects).
	Dialects []string
	// Ticks is the number of renew ticks measured per size in the renew
	// section (default 10).
	Ticks int
	// Sizes are the lease counts of the renew section (default 1, 100,
	// 1000 and 10000, and 100000 on PostgreSQL).
	Sizes []int
	// Procs is the number of processes in the fleet section (default 100).
	Procs int
	// FleetLeases is the number of leases of each process in the fleet
	// section (default 100).
	FleetLeases int
	// ShutdownLeases is the number of leases of the process in the
	// shutdown section (default 10000).
	ShutdownLeases int
	// PoolSizes are the member counts of the pool section (default 20, 50).
	PoolSizes []int
	// Reps is how many times the handoff, rebalance and sticky sections
	// repeat each kind of event (default 10).
	Reps int
	// LockHeld is how many keys the locks section holds at once (default
	// 100000).
	LockHeld int
	// LockKeys is how many distinct keys the locks section uses one after
	// another before it counts the rows (default 1000000).
	LockKeys int
	// Out receives the report (default os.Stdout).
	Out io.Writer
}

func (o *Options) defaults() {
	if len(o.Sections) == 0 {
		for _, s := range sections {
			o.Sections = append(o.Sections, s.name)
		}
	}
	if len(o.Dialects) == 0 {
		o.Dialects = Dialects
	}
	if o.Ticks <= 0 {
		o.Ticks = 10
	}
	if o.Procs <= 0 {
		o.Procs = 100
	}
	if o.FleetLeases <= 0 {
		o.FleetLeases = 100
	}
	if o.ShutdownLeases <= 0 {
		o.ShutdownLeases = 10000
	}
	if len(o.PoolSizes) == 0 {
		o.PoolSizes = []int{20, 50}
	}
	if o.Reps <= 0 {
		o.Reps = 10
	}
	if o.LockHeld <= 0 {
		o.LockHeld = 100000
	}
	if o.LockKeys <= 0 {
		o.LockKeys = 1000000
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
}

// section is one part of the benchmark.
type section struct {
	name     string
	dialects []string // the dialects it runs on
	run      func(ctx context.Context, r *runner, tg *target) *Table
}

// sections in the order they run.
var sections = []section{
	{name: "renew", dialects: Dialects, run: runRenew},
	{name: "fleet", dialects: []string{"postgres"}, run: runFleet},
	{name: "shutdown", dialects: Dialects, run: runShutdown},
	{name: "pool", dialects: Dialects, run: runPool},
	{name: "handoff", dialects: Dialects, run: runHandoff},
	{name: "rebalance", dialects: Dialects, run: runRebalance},
	{name: "schedules", dialects: Dialects, run: runSchedules},
	{name: "locks", dialects: Dialects, run: runLocks},
	{name: "sticky", dialects: Dialects, run: runSticky},
}

// SectionNames returns the names of the sections, in order.
func SectionNames() []string {
	var out []string
	for _, s := range sections {
		out = append(out, s.name)
	}
	return out
}

// Validate checks the section and dialect names of o; the errors name
// the value.
func (o Options) Validate() error {
	names := SectionNames()
	for _, s := range o.Sections {
		if !slices.Contains(names, s) {
			return fmt.Errorf("section %q is unknown (want some of %s)", s, strings.Join(names, ","))
		}
	}
	for _, d := range o.Dialects {
		if !slices.Contains(Dialects, d) {
			return fmt.Errorf("dialect %q is unknown (want some of %s)", d, strings.Join(Dialects, ","))
		}
	}
	return nil
}

// runner is the state of one Run.
type runner struct {
	o   Options
	out io.Writer
	tmp string

	pgOnce, myOnce sync.Once
	pg, my         *testdb.Server
	pgErr, myErr   error

	workerOnce sync.Once
	worker     string
	workerErr  error

	dbCount int
}

// Run runs the selected sections on the selected dialects and reports
// whether every figure passed. Its error is for a run that could not
// start at all.
func Run(ctx context.Context, o Options) (bool, error) {
	o.defaults()
	if err := o.Validate(); err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp("", "leasehold-bench-")
	if err != nil {
		return false, err
	}
	// The MySQL driver logs dropped connections to stderr, in the middle
	// of the tables; the figures count what matters.
	_ = mysql.SetLogger(&mysql.NopLogger{})
	r := &runner{o: o, out: o.Out, tmp: tmp}
	defer r.close()
	began := time.Now()
	r.header()

	var failed []string
	for _, s := range sections {
		if !slices.Contains(o.Sections, s.name) {
			continue
		}
		for _, d := range s.dialects {
			if !slices.Contains(o.Dialects, d) {
				continue
			}
			if ctx.Err() != nil {
				failed = append(failed, "interrupted")
				break
			}
			t := r.section(ctx, s, d)
			t.Print(r.out)
			if f := t.Failed(); len(f) > 0 {
				failed = append(failed, fmt.Sprintf("%s/%s: %s", s.name, d, strings.Join(f, ", ")))
			}
		}
	}
	elapsed := time.Since(began).Round(time.Second)
	fmt.Fprintln(r.out)
	if len(failed) > 0 {
		fmt.Fprintf(r.out, "bench: FAIL %s (elapsed %s; logs in %s)\n", strings.Join(failed, "; "), elapsed, tmp)
		return false, nil
	}
	_ = os.RemoveAll(tmp)
	fmt.Fprintf(r.out, "bench: OK sections=%s dialects=%s elapsed=%s\n",
		strings.Join(o.Sections, ","), strings.Join(o.Dialects, ","), elapsed)
	return true, nil
}

// section runs one section on one dialect, on a fresh database.
func (r *runner) section(ctx context.Context, s section, dialect string) *Table {
	fmt.Fprintf(r.out, "\n[%s] %s / %s ...\n", time.Now().Format("15:04:05"), s.name, dialect)
	tg, err := r.target(ctx, dialect)
	if err != nil {
		t := &Table{Section: s.name, Dialect: dialect, Title: "not run"}
		t.fail("database", err.Error(), "available")
		return t
	}
	defer tg.drop()
	return s.run(ctx, r, tg)
}

// header prints the machine and the Go version.
func (r *runner) header() {
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if l, _, ok := strings.Cut(string(b), "\n"); ok {
			mem = strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	goVersion := runtime.Version()
	if b, err := exec.Command(proc.GoTool(), "version").Output(); err == nil {
		goVersion = strings.TrimSpace(string(b))
	}
	fmt.Fprintf(r.out, "leasehold scale benchmark, %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(r.out, "machine: %d CPUs (nproc), %s, memory %s, load average %s\n", runtime.NumCPU(), cpu, mem, load)
	fmt.Fprintf(r.out, "go: %s (runner built with %s, cgo SQLite: %v)\n", goVersion, runtime.Version(), cgoEnabled)
	fmt.Fprintf(r.out, "timing: TTL %v, renew every %v, shutdown timeout %v (handoff and rebalance: as their notes say)\n",
		TTL, RenewInterval, ShutdownTimeout)
	fmt.Fprintf(r.out, "sections: %s; dialects: %s\n", strings.Join(r.o.Sections, ","), strings.Join(r.o.Dialects, ","))
}

// close stops the servers.
func (r *runner) close() {
	for _, s := range []*testdb.Server{r.pg, r.my} {
		if s != nil {
			_ = s.Close()
		}
	}
}

// workerBin builds the worker once.
func (r *runner) workerBin(ctx context.Context) (string, error) {
	r.workerOnce.Do(func() {
		bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		r.worker, r.workerErr = proc.Build(bctx, "./bench/worker", r.tmp, "bench-worker")
	})
	return r.worker, r.workerErr
}
