package history

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// recoveryRules are the checks of recovery after a fault (rule E) and
// the failover statistics. They read the checker's terms and faults and
// report through it.
type recoveryRules struct{ *checker }

// checkRecovery applies rule E and fills the failover statistics.
func (c recoveryRules) checkRecovery() {
	st := &c.res.Stats
	for k := range st.FaultsByKind {
		if b, ok := c.cfg.Bound[k]; ok && b > st.Bound {
			st.Bound = b
		}
	}
	if len(c.cfg.Leases) == 0 && len(c.cfg.Pools) == 0 {
		return
	}
	for i, l := range c.cfg.Leases {
		if l == "" {
			c.violate(BadConfig, nil, "Config.Leases[%d] is empty", i)
		}
	}
	for i, p := range c.cfg.Pools {
		if p.Pool == "" || p.Members < 0 {
			c.violate(BadConfig, nil, "Config.Pools[%d] is {Pool: %q, Members: %d}, want a name and a count of at least 0", i, p.Pool, p.Members)
		}
	}
	for _, k := range sortedKeys(c.cfg.Bound) {
		if b := c.cfg.Bound[k]; b < 0 {
			c.violate(BadConfig, nil, "Config.Bound[%q] is %v, want at least 0", k, b)
		}
	}
	for _, k := range sortedKeys(st.FaultsByKind) {
		if _, ok := c.cfg.Bound[k]; !ok {
			c.violate(BadConfig, nil, "no recovery bound for fault kind %q (%d faults); set Config.Bound[%q]", k, st.FaultsByKind[k], k)
		}
	}
	obs := c.cfg.ObserveUntil
	if obs == 0 {
		obs = st.End
	}
	var ds []time.Duration
	for _, f := range c.faults {
		bound, ok := c.cfg.Bound[f.kind()]
		if !ok || bound < 0 {
			continue
		}
		from := f.start.Time
		if f.kind() != FaultKill {
			if f.heal == nil {
				continue // reported by scan
			}
			from = f.heal.Time
		}
		next := c.nextFault(f, from)
		w := max(min(from+int64(bound), next, obs), from)
		for _, lease := range c.cfg.Leases {
			fo := Failover{Lease: lease}
			what := fmt.Sprintf("lease %q", lease)
			c.recover(f, fo, what, "a leader", c.leaseTerms[lease], c.leaseSegs(lease), from, w, next, obs, bound, &ds)
		}
		for _, p := range c.cfg.Pools {
			members := p.Members
			if f.heal != nil && f.heal.Members[p.Pool] > 0 {
				members = f.heal.Members[p.Pool]
			} else if f.start.Members[p.Pool] > 0 {
				members = f.start.Members[p.Pool]
			}
			fo := Failover{Pool: p.Pool, Members: members}
			what, full := fmt.Sprintf("pool %q", p.Pool), "a full assignment"
			if members > 0 {
				full = fmt.Sprintf("a full assignment of %d members", members)
			}
			c.recover(f, fo, what, full, c.poolTerms[p.Pool], c.poolSegs(p.Pool, members), from, w, next, obs, bound, &ds)
		}
	}
	slices.Sort(ds)
	if len(ds) > 0 {
		st.MaxFailover = ds[len(ds)-1]
	}
	st.P50Failover = percentile(ds, 50)
	st.P99Failover = percentile(ds, 99)
}

// recover measures one failover and reports it if it broke its bound.
func (c recoveryRules) recover(f *faultRec, fo Failover, what, held string, terms []*term, segs []seg,
	from, w, next, obs int64, bound time.Duration, ds *[]time.Duration) {
	fo.Fault, fo.Target, fo.FaultAt, fo.From, fo.Bound = f.kind(), f.target(), f.start.Time, from, bound
	at, ok := recoveryTime(segs, from, w)
	if ok {
		fo.Recovered, fo.At, fo.Duration = true, at, time.Duration(at-from)
	}
	defer func() { c.res.Stats.Failovers = append(c.res.Stats.Failovers, fo) }()
	switch {
	case ok && fo.Duration <= bound:
		*ds = append(*ds, fo.Duration)
		return
	case next <= from+int64(bound) && (!ok || next <= at):
		fo.Superseded = true
		return
	}
	evs := []*Event{f.start, f.heal}
	until := w
	if ok {
		until = at
	}
	n := 0
	for _, t := range terms {
		if t.end > from && t.start <= until && n < maxListed {
			evs = append(evs, t.events()...)
			n++
		}
	}
	if ok {
		c.violate(SlowRecovery, evs, "%s: %s came back %v after %s, at %s; bound %v",
			what, held, fo.Duration, c.faultDesc(f), c.at(at), bound)
		return
	}
	msg := fmt.Sprintf("%s: no %s held without a gap from %s through %s after %s (bound %v)",
		what, held[len("a "):], c.at(from), c.at(w), c.faultDesc(f), bound)
	if obs < from+int64(bound) {
		msg += fmt.Sprintf("; observation ended at %s, before the bound elapsed: leave at least the bound between the last fault and Config.ObserveUntil", c.at(obs))
	}
	c.violate(SlowRecovery, evs, "%s", msg)
}

func (c recoveryRules) faultDesc(f *faultRec) string {
	if f.kind() == FaultKill {
		return fmt.Sprintf("the kill of %q at %s", f.target(), c.at(f.start.Time))
	}
	return fmt.Sprintf("the heal at %s of the %s fault on %q (started at %s)", c.at(f.heal.Time), f.kind(), f.target(), c.at(f.start.Time))
}

// nextFault returns the time of the first Fault event after from that is
// not f's own start or heal, or MaxInt64.
func (c recoveryRules) nextFault(f *faultRec, from int64) int64 {
	for _, e := range c.faultEvents {
		if e.Time > from && e != f.start && e != f.heal {
			return e.Time
		}
	}
	return math.MaxInt64
}

// recoveryTime returns the earliest t ≥ from such that segs cover [t, w)
// without a gap, or, when no such t < w exists, the first t ≥ w that segs
// cover. segs are merged (disjoint, sorted, not touching).
func recoveryTime(segs []seg, from, w int64) (int64, bool) {
	for _, s := range segs {
		if s.end <= from {
			continue
		}
		t := max(s.start, from)
		if t >= w || s.end >= w {
			return t, true
		}
	}
	return 0, false
}

// leaseSegs returns when lease had a live term.
func (c recoveryRules) leaseSegs(lease string) []seg {
	key := "lease\x00" + lease
	if s, ok := c.segCache[key]; ok {
		return s
	}
	var segs []seg
	for _, t := range c.leaseTerms[lease] {
		segs = append(segs, seg{t.start, t.end})
	}
	segs = merge(segs)
	c.segCache[key] = segs
	return segs
}

// poolSegs returns when pool had a full assignment: some generation,
// whose count is members (any count when members is 0), with every index
// 0..count-1 held by a live term of that generation.
func (c recoveryRules) poolSegs(pool string, members int) []seg {
	key := fmt.Sprintf("pool\x00%s\x00%d", pool, members)
	if s, ok := c.segCache[key]; ok {
		return s
	}
	byGen := map[int64][]*term{}
	for _, t := range c.poolTerms[pool] {
		byGen[t.gen] = append(byGen[t.gen], t)
	}
	var segs []seg
	for _, g := range sortedKeys(byGen) {
		terms := byGen[g]
		count := terms[0].count // disagreements are reported by rule B2
		if members > 0 && count != members {
			continue
		}
		segs = append(segs, fullSegments(terms, count)...)
	}
	segs = merge(segs)
	c.segCache[key] = segs
	return segs
}

// fullSegments returns when every index 0..count-1 is held by one of terms.
func fullSegments(terms []*term, count int) []seg {
	type edge struct {
		t     int64
		index int
		d     int
	}
	var edges []edge
	for _, t := range terms {
		if t.end > t.start && t.index >= 0 && t.index < count {
			edges = append(edges, edge{t.start, t.index, 1}, edge{t.end, t.index, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.t, b.t) })
	live := make([]int, count)
	covered := 0
	var segs []seg
	open, since := false, int64(0)
	for i := 0; i < len(edges); {
		t := edges[i].t
		for ; i < len(edges) && edges[i].t == t; i++ {
			e := edges[i]
			if e.d > 0 && live[e.index] == 0 {
				covered++
			}
			live[e.index] += e.d
			if e.d < 0 && live[e.index] == 0 {
				covered--
			}
		}
		switch full := covered == count; {
		case full && !open:
			open, since = true, t
		case !full && open:
			open = false
			segs = append(segs, seg{since, t})
		}
	}
	return segs
}

// merge sorts segments and joins those that overlap or touch.
func merge(segs []seg) []seg {
	segs = slices.DeleteFunc(segs, func(s seg) bool { return s.end <= s.start })
	slices.SortFunc(segs, func(a, b seg) int { return cmp.Compare(a.start, b.start) })
	var out []seg
	for _, s := range segs {
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.start, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}
