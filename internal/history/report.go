package history

import (
	"fmt"
	"io"
	"strings"
)

// DialectResult is the verdict on one dialect's run.
type DialectResult struct {
	Dialect string
	Result  Result
}

// Report writes one line per dialect, then the summary line, which is
// exactly
//
//	chaos: OK faults=N kinds=K violations=0 max_failover_ms=M bound_ms=B
//
// when every dialect passed, and otherwise starts with "chaos: FAIL" and is
// followed by every violation, with its dialect and excerpt. N counts the
// faults of every dialect, K the distinct fault kinds among them, M is the
// largest failover and B the largest bound. Report returns whether every
// dialect passed; with no dialects it reports FAIL.
func Report(w io.Writer, runs ...DialectResult) bool {
	var faults, violations int
	var maxFO, bound int64
	kinds := map[FaultKind]bool{}
	for _, r := range runs {
		st := r.Result.Stats
		faults += st.Faults
		violations += len(r.Result.Violations)
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
		fmt.Fprintf(w, "chaos: %s: %s faults=%d kinds=%d violations=%d failovers=%d max_failover_ms=%d p50_failover_ms=%d p99_failover_ms=%d bound_ms=%d by_kind=%s",
			r.Dialect, verdict, st.Faults, len(st.FaultsByKind), len(r.Result.Violations), len(st.Failovers),
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
	fmt.Fprintf(w, "chaos: %s faults=%d kinds=%d violations=%d max_failover_ms=%d bound_ms=%d\n",
		verdict, faults, len(kinds), violations, maxFO, bound)
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
