package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold/status"
)

// changeSet says what changed between two snapshots: per lease name and
// pool key a word ("new", "holder", "epoch", "live", "free"), and the
// leases and pools that are gone.
type changeSet struct {
	leases, pools         map[string]string
	goneLeases, gonePools []string
}

// diff compares s with the previous snapshot prev.
func diff(prev, s status.Snapshot) *changeSet {
	c := &changeSet{leases: map[string]string{}, pools: map[string]string{}}
	before := map[string]status.Lease{}
	for _, l := range prev.Leases {
		before[l.Name] = l
	}
	for _, l := range s.Leases {
		old, ok := before[l.Name]
		delete(before, l.Name)
		var what []string
		switch {
		case !ok:
			what = append(what, "new")
		default:
			if old.Holder != l.Holder {
				what = append(what, "holder")
			}
			if old.Epoch != l.Epoch {
				what = append(what, "epoch")
			}
			if old.Live != l.Live {
				what = append(what, map[bool]string{true: "live", false: "expired"}[l.Live])
			}
		}
		if len(what) > 0 {
			c.leases[l.Name] = strings.Join(what, ",")
		}
	}
	for name := range before {
		c.goneLeases = append(c.goneLeases, name)
	}
	slices.Sort(c.goneLeases)

	pools := map[string]status.Pool{}
	for _, p := range prev.Pools {
		pools[p.Key] = p
	}
	for _, p := range s.Pools {
		old, ok := pools[p.Key]
		delete(pools, p.Key)
		var what []string
		switch {
		case !ok:
			what = append(what, "new")
		default:
			if old.Generation != p.Generation {
				what = append(what, "generation")
			}
			if membersOf(old) != membersOf(p) {
				what = append(what, "members")
			}
		}
		if len(what) > 0 {
			c.pools[p.Key] = strings.Join(what, ",")
		}
	}
	for key := range pools {
		c.gonePools = append(c.gonePools, key)
	}
	slices.Sort(c.gonePools)
	return c
}

// membersOf summarises a pool's members for comparison.
func membersOf(p status.Pool) string {
	var b strings.Builder
	for _, m := range p.Members {
		index := -1
		if m.Index != nil {
			index = *m.Index
		}
		fmt.Fprintf(&b, "%d %s %s %t %d;", index, m.ID, m.Holder, m.Live, m.Ack)
	}
	return b.String()
}

func watchFlags(fs *flag.FlagSet) func(context.Context, *env, []string) error {
	interval := fs.Duration("interval", 2*time.Second, "time between refreshes")
	count := fs.Int("count", 0, "stop after this many refreshes; 0 means until SIGINT or SIGTERM")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q: watch takes flags only", args[0])
		}
		if *interval <= 0 {
			return usagef("invalid value %v for flag -interval: must be positive", *interval)
		}
		if *count < 0 {
			return usagef("invalid value %d for flag -count: must not be negative", *count)
		}
		c, closeDB, err := e.coordinator(ctx)
		if err != nil {
			return err
		}
		defer closeDB()
		var prev *status.Snapshot
		for n := 1; ; n++ {
			s, err := status.Read(ctx, c)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			var changes *changeSet
			if prev != nil {
				changes = diff(*prev, s)
			} else {
				changes = &changeSet{}
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "--- refresh %d, ", n)
			writeSnapshot(&b, s, changes)
			b.WriteString("\n")
			// One write per refresh.
			if _, err := e.stdout.Write(b.Bytes()); err != nil {
				return err
			}
			prev = &s
			if *count > 0 && n >= *count {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(*interval):
			}
		}
	}
}
