package history

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// DialectResult is the verdict on one dialect's run.
type DialectResult struct {
	Dialect string
	Result  Result
}

// Report writes one line per dialect, then the summary line, which is
// exactly
//
//	chaos: OK faults=N kinds=K violations=0 slots=S locks=L max_failover_ms=M bound_ms=B
//
// when every dialect passed, and otherwise starts with "chaos: FAIL" and is
// followed by every violation, with its dialect and excerpt. N counts the
// faults of every dialect, K the distinct fault kinds among them, S the
// completed slots of the scheduled jobs, L the grant terms (keyed locks,
// semaphore slots and the runs of the jobs' slots), M is the largest
// failover and B the largest bound. Report returns whether every
// dialect passed; with no dialects it reports FAIL.
func Report(w io.Writer, runs ...DialectResult) bool {
	var faults, violations, slots, locks int
	var maxFO, bound int64
	kinds := map[FaultKind]bool{}
	for _, r := range runs {
		st := r.Result.Stats
		faults += st.Faults
		violations += len(r.Result.Violations)
		slots += st.SlotsCompleted
		locks += st.GrantTerms
		for k := range st.FaultsByKind {
			kinds[k] = true
		}
		maxFO = max(maxFO, st.MaxFailover.Milliseconds())
		bound = max(bound, st.Bound.Milliseconds())
		verdict := "OK"
		if !r.Result.OK() {
			verdict = "FAIL"
		}
		var byKind []string
		for _, k := range sortedKeys(st.FaultsByKind) {
			byKind = append(byKind, fmt.Sprintf("%s:%d", k, st.FaultsByKind[k]))
		}
		fmt.Fprintf(w, "chaos: %s: %s faults=%d kinds=%d violations=%d slots=%d locks=%d failovers=%d max_failover_ms=%d p50_failover_ms=%d p99_failover_ms=%d bound_ms=%d by_kind=%s",
			r.Dialect, verdict, st.Faults, len(st.FaultsByKind), len(r.Result.Violations), st.SlotsCompleted, st.GrantTerms, len(st.Failovers),
			st.MaxFailover.Milliseconds(), st.P50Failover.Milliseconds(), st.P99Failover.Milliseconds(), st.Bound.Milliseconds(),
			strings.Join(byKind, ","))
		if len(st.Truncated) > 0 {
			fmt.Fprintf(w, " truncated=%d", len(st.Truncated))
		}
		fmt.Fprintln(w)
	}
	ok := len(runs) > 0 && violations == 0
	verdict := "OK"
	if !ok {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "chaos: %s faults=%d kinds=%d violations=%d slots=%d locks=%d max_failover_ms=%d bound_ms=%d\n",
		verdict, faults, len(kinds), violations, slots, locks, maxFO, bound)
	if len(runs) == 0 {
		fmt.Fprintln(w, "  no dialect results")
	}
	for _, r := range runs {
		for _, v := range r.Result.Violations {
			fmt.Fprintf(w, "  %s %s\n", r.Dialect, strings.ReplaceAll(v.String(), "\n", "\n  "))
		}
	}
	return ok
}

// KindFailovers are the failover figures of one fault kind, for the
// leases (Of "leader") or the pools (Of "assignment").
type KindFailovers struct {
	Kind FaultKind
	Of   string
	// Faults counts the faults of the kind.
	Faults int
	// N counts the measured failovers (one per lease or pool and fault);
	// Superseded those left out because another fault struck first.
	N, Superseded        int
	P50, P99, Max, Bound time.Duration
}

// ByKind returns the failover figures of each fault kind of results, for
// leaders and for assignments, sorted by kind, leaders first.
func ByKind(results ...Result) []KindFailovers {
	type key struct {
		kind FaultKind
		of   string
	}
	by := map[key]*KindFailovers{}
	ds := map[key][]time.Duration{}
	faults := map[FaultKind]int{}
	for _, r := range results {
		for k, n := range r.Stats.FaultsByKind {
			faults[k] += n
		}
		for _, f := range r.Stats.Failovers {
			k := key{f.Fault, "leader"}
			if f.Pool != "" {
				k.of = "assignment"
			}
			kf := by[k]
			if kf == nil {
				kf = &KindFailovers{Kind: k.kind, Of: k.of}
				by[k] = kf
			}
			kf.Bound = max(kf.Bound, f.Bound)
			switch {
			case f.Superseded:
				kf.Superseded++
			case f.Recovered:
				kf.N++
				ds[k] = append(ds[k], f.Duration)
			}
		}
	}
	keys := make([]key, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(string(a.kind), string(b.kind)); c != 0 {
			return c
		}
		return -strings.Compare(a.of, b.of) // leader before assignment
	})
	out := make([]KindFailovers, 0, len(keys))
	for _, k := range keys {
		kf := by[k]
		kf.Faults = faults[k.kind]
		d := ds[k]
		slices.Sort(d)
		kf.P50, kf.P99 = percentile(d, 50), percentile(d, 99)
		if len(d) > 0 {
			kf.Max = d[len(d)-1]
		}
		out = append(out, *kf)
	}
	return out
}

// FailoverTable writes the failover figures of each fault kind, for
// leaders and for assignments, one line each per dialect, then over every
// dialect:
//
//	chaos: failovers kind=kill of=leader dialect=postgres faults=F n=N p50_ms=A p99_ms=B max_ms=C bound_ms=D superseded=S
func FailoverTable(w io.Writer, runs ...DialectResult) {
	line := func(dialect string, kf KindFailovers) {
		fmt.Fprintf(w, "chaos: failovers kind=%s of=%s dialect=%s faults=%d n=%d p50_ms=%d p99_ms=%d max_ms=%d bound_ms=%d superseded=%d\n",
			kf.Kind, kf.Of, dialect, kf.Faults, kf.N, kf.P50.Milliseconds(), kf.P99.Milliseconds(), kf.Max.Milliseconds(), kf.Bound.Milliseconds(), kf.Superseded)
	}
	all := make([]Result, 0, len(runs))
	for _, r := range runs {
		for _, kf := range ByKind(r.Result) {
			line(r.Dialect, kf)
		}
		all = append(all, r.Result)
	}
	for _, kf := range ByKind(all...) {
		line("all", kf)
	}
}
