package coordination

import (
	"fmt"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/metric"
)

// poolSet owns the pools whose Run is active in this process, the count
// of memberships each has started (memberID), and each Pool's state as
// Run last saw it (busy, current, read, generation, members). Pool.Run
// enters and leaves it; the member protocol reports to it; wake-ups and
// the metrics callback read it.
type poolSet struct {
	instance string // the process's instance id, the base of its member ids

	mu    sync.Mutex
	pools map[string]*Pool // by key
	joins map[string]int   // per pool key, the memberships this process started
}

func newPoolSet(instance string) *poolSet {
	return &poolSet{instance: instance, pools: make(map[string]*Pool), joins: make(map[string]int)}
}

// enter makes p the running pool of its key. Busy per key, not per Pool
// value: two Runs of one key in one process would be two members of one
// process, working on two indexes under one coordinator's session and
// identity. It fails with ErrBusy.
func (ps *poolSet) enter(p *Pool) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p.busy || ps.pools[p.key] != nil {
		return fmt.Errorf("%w: pool %q", ErrBusy, p.key)
	}
	p.busy, ps.pools[p.key] = true, p
	return nil
}

// leave ends p's Run.
func (ps *poolSet) leave(p *Pool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.busy, p.current, p.read = false, nil, false
	delete(ps.pools, p.key)
}

// memberID returns the member id of a new membership of pool key: the
// instance id for the process's first join of the pool, "<instance>.<n>"
// for its n-th. Every join, a rejoin after a loss included, takes a member
// row that was never used: a member row is pruned once its session has
// been dead for a while, and a row created again under a used key would
// start its epochs at 1 again, handing out a fencing token an earlier
// membership had.
func (ps *poolSet) memberID(key string) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.joins[key]++
	if n := ps.joins[key]; n > 1 {
		return ps.instance + "." + strconv.Itoa(n)
	}
	return ps.instance
}

// noteRead records the generation and member count p's Run last read.
func (ps *poolSet) noteRead(p *Pool, generation int64, members int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.read, p.generation, p.members = true, generation, members
}

// setCurrent records the assignment p's Run works on, nil for none.
func (ps *poolSet) setCurrent(p *Pool, a *Assignment) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.current = a
}

// current returns the assignment p's Run works on, if any.
func (ps *poolSet) current(p *Pool) (Assignment, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p.current == nil {
		return Assignment{}, false
	}
	return *p.current, true
}

// woke wakes the pools whose rows names names, every running pool for a
// nil names. A wake-up for one member (membership.Rows.Wake) wakes the
// pool only if that member is this process's.
func (ps *poolSet) woke(names []string) {
	ps.mu.Lock()
	var pools []*Pool
	if names == nil {
		for _, p := range ps.pools {
			pools = append(pools, p)
		}
	}
	for _, n := range names {
		if key, ok := poolKeyOf(n); ok {
			if p := ps.pools[key]; p != nil {
				if id, one := p.rows.WakeFor(n); one && id != p.member {
					continue
				}
				pools = append(pools, p)
			}
		}
	}
	ps.mu.Unlock()
	for _, p := range pools {
		poke(p.wake)
	}
}

// joined records id as the member id of p's run in this process.
func (ps *poolSet) joined(p *Pool, id string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.member = id
}

// observe observes the gauges of each running pool that has been read.
func (ps *poolSet) observe(o metric.Observer, m *metrics) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.pools {
		if !p.read {
			continue
		}
		o.ObserveInt64(m.poolGeneration, p.generation, p.attrs)
		o.ObserveInt64(m.poolMembers, int64(p.members), p.attrs)
		o.ObserveInt64(m.poolAssigned, boolInt(p.current != nil), p.attrs)
	}
}
