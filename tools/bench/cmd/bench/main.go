// Command bench runs the scale benchmark (make bench): sections of
// figures, each printed per dialect against its target with PASS or FAIL.
// The last line is "bench: OK ..." or "bench: FAIL <which>"; it exits 1 on
// FAIL and 2 on bad settings.
//
// Sections, in order (docs/performance.md has the figures and targets):
//
//	renew      one process holding 1 to 100,000 leases: statements per tick and per second, connections, renewal time
//	fleet      100 processes x 100 leases start, renew and stop at once (PostgreSQL)
//	shutdown   one process holding 10,000 leases gets SIGTERM
//	pool       pools of 20 and 50 members start at once
//	handoff    three candidates: graceful handoff (SIGTERM, coordination's defaults), crash failover
//	           (SIGKILL), a pause beyond the TTL (SIGSTOP, SIGCONT); an idle follower's statements
//	rebalance  a pool of 20 members: joins, graceful leaves, SIGKILLs
//	locks      keyed locks: acquire uncontended and contended, handoff after release, 100,000 held keys,
//	           rows after 1,000,000 distinct keys
//
// Environment:
//
//	BENCH_SECTIONS  comma-separated sections (default: renew,fleet,shutdown,pool,handoff,rebalance,schedules,locks,sticky)
//	BENCH_DIALECTS  comma-separated subset of postgres,mysql,sqlite (default: all)
//	BENCH_TICKS     renew ticks measured at each size in the renew section (default 10)
//	BENCH_SIZES     lease counts of the renew section (default 1,100,1000,10000, and 100000 on postgres)
//	BENCH_PROCS     processes of the fleet section (default 100)
//	BENCH_FLEET_LEASES     leases of each fleet process (default 100)
//	BENCH_SHUTDOWN_LEASES  leases of the shutdown section's process (default 10000)
//	BENCH_POOL_SIZES       member counts of the pool section (default 20,50)
//	BENCH_REPS      times the handoff, rebalance and sticky sections repeat each kind of event (default 10)
//	BENCH_LOCK_HELD keys the locks section holds at once (default 100000)
//	BENCH_LOCK_KEYS distinct keys the locks section uses before counting rows (default 1000000)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/leasehold/leasehold/tools/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	var o bench.Options
	var err error
	o.Sections = list(os.Getenv("BENCH_SECTIONS"))
	o.Dialects = list(os.Getenv("BENCH_DIALECTS"))
	for _, v := range []struct {
		env string
		to  *int
	}{
		{"BENCH_TICKS", &o.Ticks},
		{"BENCH_PROCS", &o.Procs},
		{"BENCH_FLEET_LEASES", &o.FleetLeases},
		{"BENCH_SHUTDOWN_LEASES", &o.ShutdownLeases},
		{"BENCH_REPS", &o.Reps},
		{"BENCH_LOCK_HELD", &o.LockHeld},
		{"BENCH_LOCK_KEYS", &o.LockKeys},
	} {
		if *v.to, err = number(v.env, os.Getenv(v.env)); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 2
		}
	}
	for _, v := range []struct {
		env string
		to  *[]int
	}{
		{"BENCH_SIZES", &o.Sizes},
		{"BENCH_POOL_SIZES", &o.PoolSizes},
	} {
		for _, s := range list(os.Getenv(v.env)) {
			n, err := number(v.env, s)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %v\n", err)
				return 2
			}
			*v.to = append(*v.to, n)
		}
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 2
	}
	ok, err := bench.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: FAIL %v\n", err)
		fmt.Println("bench: FAIL", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

// list splits a comma-separated list, dropping empty items.
func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// number parses a positive count; "" is 0 (the default).
func number(env, s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive whole number", env, s)
	}
	return n, nil
}
