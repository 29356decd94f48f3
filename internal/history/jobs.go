package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// jobRules are the checks of the jobs on the lease table: semaphores
// (rule G2) and scheduled slots (rules S1, S2). They read the checker's
// terms and report through it.
type jobRules struct{ *checker }

// checkSemaphores applies rule G2: at no time are more grants of a
// semaphore's slots live than its limit.
func (c jobRules) checkSemaphores() {
	bySem := map[string][]*term{}
	for _, lease := range sortedKeys(c.grantTerms) {
		for _, t := range c.grantTerms[lease] {
			if t.semaphore != "" {
				bySem[t.semaphore] = append(bySem[t.semaphore], t)
			}
		}
	}
	for _, sem := range sortedKeys(bySem) {
		terms := bySem[sem]
		limit := 0
		for _, t := range terms {
			limit = max(limit, t.limit)
		}
		if limit < 1 {
			c.violate(Malformed, []*Event{terms[0].startEv}, "grants of semaphore %q give no limit (Limit %d), so rule G2 cannot be applied", sem, limit)
			continue
		}
		type edge struct {
			at    int64
			delta int
			t     *term
		}
		var edges []edge
		for _, t := range terms {
			if end := c.heldUntil(t); end > t.start {
				edges = append(edges, edge{t.start, 1, t}, edge{end, -1, t})
			}
		}
		// Ends before starts at the same time: touching grants do not
		// overlap.
		slices.SortStableFunc(edges, func(a, b edge) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
		})
		live := map[*term]bool{}
		var first []*term
		var firstAt int64
		over, peak := 0, 0
		for _, e := range edges {
			if e.delta < 0 {
				delete(live, e.t)
				continue
			}
			live[e.t] = true
			if len(live) <= limit {
				continue
			}
			over++
			peak = max(peak, len(live))
			if first == nil {
				firstAt = e.at
				for t := range live {
					first = append(first, t)
				}
				slices.SortStableFunc(first, func(a, b *term) int { return cmp.Compare(a.start, b.start) })
			}
		}
		if over == 0 {
			continue
		}
		var descs []string
		var evs []*Event
		for _, t := range first {
			descs = append(descs, fmt.Sprintf("%q %s", t.name, c.describe(t)))
			evs = append(evs, t.events()...)
		}
		c.violate(SemaphoreOverflow, evs, "semaphore %q (limit %d): %d grants were live at once at %s: %s; over the limit %d times, with at most %d grants at once",
			sem, limit, len(first), c.at(firstAt), strings.Join(descs, "; "), over, peak)
	}
}

// heldUntil is when the grant x stops counting towards its semaphore's
// limit: its end, or the start of a successor on its slot that took over
// while x was paused (rule P), when that comes first. An overlap on a slot
// that rule P does not allow is reported by rule G1.
func (c jobRules) heldUntil(x *term) int64 {
	end := x.end
	for _, y := range c.grantTerms[x.name] {
		if y.holder == x.holder || y.start < x.start || y.start >= end {
			continue
		}
		if pause, accepted := c.pauseException(x, y); pause != nil && len(accepted) == 0 {
			end = y.start
		}
	}
	return end
}

// takeBackLostSlots removes, for each SlotLost, the SlotCompleted of the
// same job, slot, holder and epoch recorded before it: a completion the
// database lost (rule S1).
func (c jobRules) takeBackLostSlots() {
	for _, l := range c.lostSlots {
		evs := c.slots[l.Lease]
		i := slices.IndexFunc(evs, func(e *Event) bool {
			return e.Slot == l.Slot && e.Holder == l.Holder && e.Epoch == l.Epoch && e.Time <= l.Time
		})
		if i < 0 {
			c.violate(Malformed, []*Event{l}, "slot %s of %q lost at %s by holder %q epoch %d, which has no such completion before it",
				slotTime(l.Slot), l.Lease, c.at(l.Time), l.Holder, l.Epoch)
			continue
		}
		c.slots[l.Lease] = slices.Delete(evs, i, i+1)
		c.res.Stats.SlotsLost++
	}
}

// checkSlots applies rules S1 and S2.
func (c jobRules) checkSlots() {
	c.takeBackLostSlots()
	for _, lease := range sortedKeys(c.slots) {
		bySlot := map[int64][]*Event{}
		for _, e := range c.slots[lease] {
			bySlot[e.Slot] = append(bySlot[e.Slot], e)
		}
		var parts []string
		var evs []*Event
		dups := 0
		for _, s := range sortedKeys(bySlot) {
			done := bySlot[s]
			if len(done) < 2 {
				continue
			}
			if dups++; dups > maxListed {
				continue
			}
			var by []string
			for _, e := range done {
				by = append(by, fmt.Sprintf("%q epoch %d at %s", e.holder(), e.Epoch, c.at(e.Time)))
				evs = append(evs, e)
			}
			parts = append(parts, fmt.Sprintf("%s (%d times: %s)", slotTime(s), len(done), strings.Join(by, ", ")))
		}
		if dups > maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", dups-maxListed))
		}
		if dups > 0 {
			c.violate(DuplicateSlots, evs, "job %q: %d slots completed more than once: %s", lease, dups, strings.Join(parts, "; "))
		}
	}
	for i, r := range c.cfg.Slots {
		c.dueSlots(i, r)
	}
}

// dueSlots applies rule S2 to one required job.
func (c jobRules) dueSlots(i int, r SlotRequirement) {
	if r.Lease == "" || r.Every <= 0 || r.Margin < 0 {
		c.violate(BadConfig, nil, "Config.Slots[%d] is {Lease: %q, Every: %v, Margin: %v}, want a lease, a positive interval and a margin of at least 0",
			i, r.Lease, r.Every, r.Margin)
		return
	}
	from, ok := c.quietFrom(r.Lease)
	if !ok {
		return
	}
	obs := c.cfg.ObserveUntil
	if obs == 0 {
		obs = c.res.Stats.End
	}
	until := obs - int64(r.Margin)
	every := int64(r.Every)
	done := c.slots[r.Lease]
	if len(done) == 0 {
		if until-from >= every {
			c.violate(MissedSlots, nil, "job %q completed no slot at all, though slots were due from %s to %s", r.Lease, c.at(from), c.at(until))
		}
		return
	}
	// The slot times are by the database clock: map them to history
	// times by the median of the completions' delays (an on-time slot
	// completes milliseconds after its time; the median ignores the few
	// missed ones run late).
	delays := make([]int64, len(done))
	for j, e := range done {
		delays[j] = e.Time - e.Slot
	}
	slices.Sort(delays)
	off := delays[len(delays)/2]
	completed := map[int64]bool{}
	for _, e := range done {
		completed[e.Slot] = true
	}
	var missing []int64
	due := 0
	for s := ceilMultiple(from-off, every); s+off <= until; s += every {
		due++
		if !completed[s] {
			missing = append(missing, s)
		}
	}
	c.res.Stats.SlotsDue += due
	if len(missing) == 0 {
		return
	}
	var ts []string
	for _, s := range missing[:min(len(missing), maxListed)] {
		ts = append(ts, fmt.Sprintf("%s (%s)", slotTime(s), c.at(s+off)))
	}
	if len(missing) > maxListed {
		ts = append(ts, fmt.Sprintf("and %d more", len(missing)-maxListed))
	}
	c.violate(MissedSlots, nil, "job %q: %d of %d slots due from %s to %s were never completed: %s",
		r.Lease, len(missing), due, c.at(from), c.at(until), strings.Join(ts, ", "))
}

// quietFrom is when the job lease has recovered from every fault (rule
// S2): the latest, over the faults, of the earlier of r + its kind's
// bound (r: the kill, or the heal) and the first run at or after r of the
// job's final term (the term of its last run); the history's first event
// when there was no fault. It is false when a fault kind has no bound.
func (c jobRules) quietFrom(lease string) (int64, bool) {
	runs := slices.Clone(c.grantTerms[lease])
	slices.SortStableFunc(runs, func(a, b *term) int { return cmp.Compare(a.start, b.start) })
	from := c.res.Stats.Start
	for _, f := range c.faults {
		b, ok := c.cfg.Bound[f.kind()]
		if !ok {
			if len(c.cfg.Leases) == 0 && len(c.cfg.Pools) == 0 {
				// Otherwise rule E reports it.
				c.violate(BadConfig, nil, "no recovery bound for fault kind %q; rule S2 needs Config.Bound[%q]", f.kind(), f.kind())
			}
			return 0, false
		}
		at := f.start.Time
		if f.kind() != FaultKill {
			if f.heal == nil {
				continue // reported by scan
			}
			at = f.heal.Time
		}
		q := at + int64(b)
		if len(runs) > 0 {
			last := runs[len(runs)-1]
			for _, t := range runs {
				if t.start >= at && t.epoch == last.epoch && t.holder == last.holder {
					q = min(q, t.start)
					break
				}
			}
		}
		from = max(from, q)
	}
	return from, true
}

// ceilMultiple returns the least multiple of m at or after t.
func ceilMultiple(t, m int64) int64 {
	q := t / m
	if q*m < t {
		q++
	}
	return q * m
}

// slotTime formats a slot time (Unix nanoseconds) in UTC.
func slotTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}
