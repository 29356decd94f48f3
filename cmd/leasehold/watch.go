package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/status"
)

// changeSet says what changed between two snapshots: per lease name,
// pool key and process (session holder) a word ("new", "holder", "epoch",
// "live", "expired", ...), and the leases, pools and processes that are
// gone.
type changeSet struct {
	leases, pools, sessions             map[string]string
	goneLeases, gonePools, goneSessions []string
}

// watched returns the leases of s and the keyed locks and semaphore slots
// held, each of these named "lock <namespace> <lock key>" or "slot
// <semaphore> <slot>": watch reports their changes as a lease's.
func watched(s status.Snapshot) []coordination.LeaseInfo {
	out := slices.Clone(s.Leases)
	for _, ls := range s.Locks {
		kind := "lock "
		if ls.Slots > 0 {
			kind = "slot "
		}
		for _, h := range ls.Holders {
			h.Key = kind + ls.Key + " " + h.Key
			out = append(out, h)
		}
	}
	return out
}

// diff compares s with the previous snapshot prev.
func diff(prev, s status.Snapshot) *changeSet {
	c := &changeSet{leases: map[string]string{}, pools: map[string]string{}, sessions: map[string]string{}}
	before := map[string]coordination.LeaseInfo{}
	for _, l := range watched(prev) {
		before[l.Key] = l
	}
	for _, l := range watched(s) {
		old, ok := before[l.Key]
		delete(before, l.Key)
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
			c.leases[l.Key] = strings.Join(what, ",")
		}
	}
	for name := range before {
		c.goneLeases = append(c.goneLeases, name)
	}
	slices.Sort(c.goneLeases)

	pools := map[string]coordination.PoolState{}
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

	live := map[string]bool{}
	for _, ss := range prev.Sessions {
		live[ss.Holder] = ss.Live
	}
	for _, ss := range s.Sessions {
		was, ok := live[ss.Holder]
		delete(live, ss.Holder)
		switch {
		case !ok:
			c.sessions[ss.Holder] = "new"
		case was != ss.Live:
			c.sessions[ss.Holder] = map[bool]string{true: "live", false: "expired"}[ss.Live]
		}
	}
	for holder := range live {
		c.goneSessions = append(c.goneSessions, holder)
	}
	slices.Sort(c.goneSessions)
	return c
}

// empty reports whether nothing changed.
func (c *changeSet) empty() bool {
	return len(c.leases) == 0 && len(c.pools) == 0 && len(c.sessions) == 0 &&
		len(c.goneLeases) == 0 && len(c.gonePools) == 0 && len(c.goneSessions) == 0
}

// writeChanges prints one line per lease (or lock held), pool or process
// of c, the change of prev into s: what changed, the key, and the holder,
// epoch and liveness of a lease (old → new where they changed), a pool's
// generation, or whether a process's session is live.
func writeChanges(w io.Writer, prev, s status.Snapshot, c *changeSet) {
	before := map[string]coordination.LeaseInfo{}
	for _, l := range watched(prev) {
		before[l.Key] = l
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range watched(s) {
		what := c.leases[l.Key]
		if what == "" {
			continue
		}
		old, ok := before[l.Key]
		if !ok {
			old = l
		}
		fmt.Fprintf(tw, "%s\t%s\tholder %s\tepoch %s\tlive %s\n", what, l.Key,
			change(orDash(old.Holder), orDash(l.Holder)), change(fmt.Sprint(old.Epoch), fmt.Sprint(l.Epoch)),
			change(yesNo(old.Live), yesNo(l.Live)))
	}
	for _, key := range c.goneLeases {
		fmt.Fprintf(tw, "gone\t%s\n", key)
	}
	generations := map[string]int64{}
	for _, p := range prev.Pools {
		generations[p.Key] = p.Generation
	}
	for _, p := range s.Pools {
		if what := c.pools[p.Key]; what != "" {
			old, ok := generations[p.Key]
			if !ok {
				old = p.Generation
			}
			fmt.Fprintf(tw, "%s\tpool %s\tgeneration %s\n", what, p.Key, change(fmt.Sprint(old), fmt.Sprint(p.Generation)))
		}
	}
	for _, key := range c.gonePools {
		fmt.Fprintf(tw, "gone\tpool %s\n", key)
	}
	for _, ss := range s.Sessions {
		if what := c.sessions[ss.Holder]; what != "" {
			fmt.Fprintf(tw, "%s\tprocess %s\tlive %s\n", what, ss.Holder, yesNo(ss.Live))
		}
	}
	for _, holder := range c.goneSessions {
		fmt.Fprintf(tw, "gone\tprocess %s\n", holder)
	}
	_ = tw.Flush()
}

// change is "old → now", or now where they are equal.
func change(old, now string) string {
	if old == now {
		return now
	}
	return old + " → " + now
}

// membersOf summarises a pool's members for comparison.
func membersOf(p coordination.PoolState) string {
	var b strings.Builder
	for _, m := range memberRows(p) {
		fmt.Fprintf(&b, "%d %s %s %t %d;", m.index, m.ID, m.Holder, m.Live, m.Ack)
	}
	return b.String()
}

// minWatchInterval is the shortest -interval: each refresh reads every
// lease and pool.
const minWatchInterval = 100 * time.Millisecond

// maxWatchBackoff bounds the wait between failed reads, unless -interval
// is longer.
const maxWatchBackoff = 30 * time.Second

func watchFlags(fs *flag.FlagSet) func(context.Context, *env, []string) error {
	interval := fs.Duration("interval", 2*time.Second, "time between refreshes; at least "+minWatchInterval.String())
	full := fs.Bool("full", false, "print every refresh whole, with a CHANGE column, instead of the changes alone")
	count := fs.Int("count", 0, "stop after this many refreshes; 0 means until SIGINT or SIGTERM")
	timeout := fs.Duration("timeout", 10*time.Second,
		"bound on each read; a read that fails or takes longer is tried again, waiting longer each time")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q: watch takes flags only", args[0])
		}
		if *interval < minWatchInterval {
			return usagef("invalid value %v for flag -interval: must be at least %v", *interval, minWatchInterval)
		}
		if *count < 0 {
			return usagef("invalid value %d for flag -count: must not be negative", *count)
		}
		if *timeout <= 0 {
			return usagef("invalid value %v for flag -timeout: must be positive", *timeout)
		}
		adm, closeDB, err := e.admin(ctx, readOnly)
		if err != nil {
			return err
		}
		defer closeDB()
		header := fmt.Sprintf("watching %s every %v\n\n", e.where(), *interval)
		var prev *status.Snapshot
		failed := 0 // reads failed in a row
		for n := 1; ; {
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			s, err := status.Read(rctx, adm)
			cancel()
			wait := *interval
			switch {
			case err != nil && ctx.Err() != nil:
				return nil
			case err != nil:
				failed++
				wait = watchBackoff(*interval, failed)
				fmt.Fprintf(e.stderr, "leasehold: watch: reading %s failed (%d in a row): %v; trying again in %v\n",
					e.where(), failed, err, wait)
			default:
				if failed > 0 {
					fmt.Fprintf(e.stderr, "leasehold: watch: read %s again after %d failed reads\n", e.where(), failed)
					failed = 0
				}
				var changes *changeSet
				if prev != nil {
					changes = diff(*prev, s)
				} else {
					changes = &changeSet{}
				}
				var b bytes.Buffer
				switch {
				case n == 1 || *full:
					if n == 1 {
						b.WriteString(header)
					}
					fmt.Fprintf(&b, "--- refresh %d, ", n)
					writeSnapshot(&b, s, changes)
					b.WriteString("\n")
				case !changes.empty():
					when := "no rows"
					if !s.DatabaseTime.IsZero() {
						when = s.DatabaseTime.Format(time.RFC3339Nano)
					}
					fmt.Fprintf(&b, "--- refresh %d, database time %s\n", n, when)
					writeChanges(&b, *prev, s, changes)
				}
				// One write per refresh, none for a refresh without changes.
				if _, err := e.stdout.Write(b.Bytes()); err != nil {
					return err
				}
				prev = &s
				if *count > 0 && n >= *count {
					return nil
				}
				n++
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}

// watchBackoff is the wait after the failed-th failed read in a row: the
// interval, doubled for each failure after the first, up to
// maxWatchBackoff or the interval if that is longer.
func watchBackoff(interval time.Duration, failed int) time.Duration {
	limit := max(interval, maxWatchBackoff)
	d := interval
	for i := 1; i < failed && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
