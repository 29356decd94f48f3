package coordination

import (
	"fmt"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/metric"
)

// handles is the coordinator's registry of the handles it gave out, so
// that a scope and name always return the same one, and of the pools
// whose Run is active in this process, with the memberships each has
// started. It holds no state of a term; its lock is taken for map
// operations only, and it calls nothing while holding it.
type handles struct {
	instance string // the process's instance id, the base of its member ids

	mu        sync.Mutex
	elections map[string]*Election
	locks     map[string]*Locks
	sems      map[string]*Semaphore
	running   map[string]*poolRun // by pool key
	joins     map[string]int      // per pool key, the memberships this process started
}

func newHandles(instance string) *handles {
	return &handles{instance: instance, elections: make(map[string]*Election), locks: make(map[string]*Locks),
		sems: make(map[string]*Semaphore), running: make(map[string]*poolRun), joins: make(map[string]int)}
}

// registered returns m[key], made by mk the first time.
func registered[T any](h *handles, m map[string]*T, key string, mk func() *T) *T {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := m[key]; ok {
		return v
	}
	v := mk()
	m[key] = v
	return v
}

func (h *handles) election(key string, mk func() *Election) *Election {
	return registered(h, h.elections, key, mk)
}

func (h *handles) locksOf(key string, mk func() *Locks) *Locks {
	return registered(h, h.locks, key, mk)
}

func (h *handles) semaphore(key string, mk func() *Semaphore) *Semaphore {
	return registered(h, h.sems, key, mk)
}

// electionList returns the elections given out, for their gauges.
func (h *handles) electionList() []*Election {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Election, 0, len(h.elections))
	for _, e := range h.elections {
		out = append(out, e)
	}
	return out
}

// enter makes r the running pool of its key. Busy per key, not per Pool
// value: two Runs of one key in one process would be two members of one
// process, working on two indexes under one session and identity.
func (h *handles) enter(r *poolRun) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := r.key()
	if h.running[key] != nil {
		return fmt.Errorf("%w: pool %q", ErrBusy, key)
	}
	h.running[key] = r
	return nil
}

// leave ends r's Run.
func (h *handles) leave(r *poolRun) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if key := r.key(); h.running[key] == r {
		delete(h.running, key)
	}
}

// run returns the running pool of key, nil when none.
func (h *handles) run(key string) *poolRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running[key]
}

// memberID returns the member id of a new membership of pool key, never
// used before: the instance id for the process's first join of the pool,
// "<instance>.<n>" for its n-th.
func (h *handles) memberID(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.joins[key]++
	if n := h.joins[key]; n > 1 {
		return h.instance + "." + strconv.Itoa(n)
	}
	return h.instance
}

// woke wakes the running pools whose rows names names, every one for a
// nil names.
func (h *handles) woke(names []string) {
	h.mu.Lock()
	var runs []*poolRun
	if names == nil {
		for _, r := range h.running {
			runs = append(runs, r)
		}
	}
	for _, n := range names {
		key, ok := poolKeyOf(n)
		if !ok {
			continue
		}
		if r := h.running[key]; r != nil && r.wokenBy(n) {
			runs = append(runs, r)
		}
	}
	h.mu.Unlock()
	for _, r := range runs {
		poke(r.wake)
	}
}

// observe observes the gauges of each running pool that has been read.
func (h *handles) observe(o metric.Observer, m *metrics) {
	h.mu.Lock()
	runs := make([]*poolRun, 0, len(h.running))
	for _, r := range h.running {
		runs = append(runs, r)
	}
	h.mu.Unlock()
	for _, r := range runs {
		r.observe(o, m)
	}
}
