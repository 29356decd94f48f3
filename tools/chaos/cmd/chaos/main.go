// Command chaos runs the fault-injection suite (make chaos): on each
// dialect (chaos.Dialects) it runs four worker processes, injects faults one
// at a time, and checks the recorded histories. It exits 1 on any
// violation. The fault kinds of each dialect are those of chaos.Kinds with
// every option on; the short test (TestChaosShort) injects each once.
//
// CHAOS_FAULTS sets the total number of faults (default 300), CHAOS_SEED
// the seed (default: from the clock; printed), CHAOS_ITEMS the items
// seeded per dialect before the first fault (default 3000; chaos.FeedRate
// more a second are added while faults are injected), CHAOS_DIALECTS a
// comma-separated subset of sqlite,postgres,mysql,pgbouncer,postgres-pair,mariadb-pair,galera, and
// CHAOS_KINDS a comma-separated subset of the fault kinds (chaos.AllKinds;
// default every kind): a dialect that injects none of them is not run.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/tools/chaos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	o := chaos.Options{Faults: 300, Seed: uint64(time.Now().UnixNano()), Extended: true}
	for _, v := range []struct {
		env string
		set func(uint64)
	}{
		{"CHAOS_FAULTS", func(n uint64) { o.Faults = int(n) }},
		{"CHAOS_SEED", func(n uint64) { o.Seed = n }},
		{"CHAOS_ITEMS", func(n uint64) { o.Items = int(n) }},
	} {
		s := os.Getenv(v.env)
		if s == "" {
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos: %s=%q: %v\n", v.env, s, err)
			return 2
		}
		v.set(n)
	}
	if d := os.Getenv("CHAOS_DIALECTS"); d != "" {
		o.Dialects = strings.Split(d, ",")
	}
	kinds, err := chaos.ParseKinds(os.Getenv("CHAOS_KINDS"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: CHAOS_KINDS=%q: %v\n", os.Getenv("CHAOS_KINDS"), err)
		return 2
	}
	o.Kinds = kinds
	ok, err := chaos.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: FAIL: %v\n", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}
