package status

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/workers"
)

// Snapshot is one read of every lease, pool, keyed lock, semaphore and
// process in a coordinator's database. Its JSON encoding is what Handler
// serves as JSON and what the leasehold command's "status -json" prints.
// Times are by the database clock, in UTC, except those of Renewal, which
// are by the serving process's clock.
type Snapshot struct {
	// Holder is the serving process's holder string; empty from Read.
	Holder string `json:"holder,omitempty"`
	// DatabaseTime is the database clock at the read; zero when there
	// are no rows.
	DatabaseTime time.Time `json:"database_time,omitzero"`
	// Renewal is the serving process's renewal state, without the
	// errors' text (LastError and HealthError are nil); nil from Read.
	Renewal *coordination.RenewalState `json:"renewal,omitempty"`
	// Leases lists the election leases, by key: not the rows of pool
	// members, keyed locks and semaphores, which Pools and Locks show,
	// nor the rows the keyed locks keep for their epochs. Their Data is
	// left empty: it is what the leases' holders wrote, the
	// application's; Schedules decodes that of the scheduled workers.
	Leases []coordination.LeaseInfo `json:"leases"`
	// Pools lists the pools, by key, as Admin.Pools reads them.
	Pools []coordination.PoolState `json:"pools"`
	// Locks lists the namespaces of keyed locks, by key, then the
	// semaphores, by key.
	Locks []Locks `json:"locks"`
	// Sessions lists the processes, by holder, as Admin.Sessions reads
	// them.
	Sessions []coordination.SessionInfo `json:"sessions"`
	// Schedules lists the scheduled workers (workers.Scheduled), by name,
	// from the progress their lease rows keep. Their leases are among
	// Leases too.
	Schedules []Schedule `json:"schedules"`
}

// Locks is a namespace of keyed locks (coordination.Locks) or a semaphore
// (coordination.Semaphore), as its rows show it.
type Locks struct {
	// Key is the namespace's Locks.Key or the semaphore's Semaphore.Key.
	Key string `json:"key"`
	// Slots is, for a semaphore, its highest slot row's number plus one:
	// at most its limit, which is not stored (a slot's row is made when a
	// process first tries the slot). It is 0 for keyed locks.
	Slots int `json:"slots,omitempty"`
	// Holders lists the lock keys or slots with a holder, live or
	// expired, in row order. Their Key is the lock key, or the slot's
	// number, and their Data is left empty.
	Holders []coordination.LeaseInfo `json:"holders"`
}

// Schedule is one scheduled worker: its lease and the progress its lease
// row keeps (its next slot, the run in progress and its recent runs).
type Schedule struct {
	// Name is the worker's name; its lease's key is
	// workers.ScheduleLease(Name).
	Name string `json:"name"`
	// Lease is the worker's lease, with its Data decoded into State.
	Lease coordination.LeaseInfo `json:"lease"`
	// State is the progress the holders of the lease recorded. With no
	// live holder, a run in progress is one that was interrupted, which
	// the next holder retries or abandons.
	State workers.ScheduleState `json:"state"`
	// Error says why the lease row's data could not be read as a
	// schedule's; State is then zero.
	Error string `json:"error,omitempty"`
}

// scheduleRowPrefix starts the lease key of every scheduled worker.
var scheduleRowPrefix = workers.ScheduleLease("")

// Kinds of the lease table's row keys (coordination's package doc, "Names
// and rows") that the snapshot shows apart from the election leases.
const (
	lockRowKind = "lock" // lock|<namespace>|<lock key>
	semRowKind  = "sem"  // sem|<semaphore>|<slot>
)

// splitRow splits a row key of the lease table at its first two '|': kind
// is "" for an election's key (which has none), owner the scoped key of
// the pool, lock namespace or semaphore, rest what follows it. No name has
// a '|', so owner never does; a lock key may.
func splitRow(key string) (kind, owner, rest string) {
	kind, tail, ok := strings.Cut(key, "|")
	if !ok {
		return "", key, ""
	}
	owner, rest, _ = strings.Cut(tail, "|")
	return kind, owner, rest
}

// scheduleOf decodes the progress of the scheduled worker name from its
// lease row.
func scheduleOf(name string, li coordination.LeaseInfo) Schedule {
	sc := Schedule{Name: name, Lease: li}
	sc.Lease.Data = ""
	st, err := workers.DecodeScheduleState(li.Data)
	if err != nil {
		sc.Error = err.Error()
		return sc
	}
	sc.State = st
	return sc
}

// Read reads every lease, pool, keyed lock, semaphore and process of a's
// database, by the database clock, in three statements (Admin.Leases,
// Admin.Pools and Admin.Sessions). It needs no running coordinator:
// coordination.NewAdmin builds a from a *gorm.DB, and Coordinator.Admin
// returns one for a coordinator's database. Holder and Renewal are left
// empty: they describe a serving process (Handler fills them in).
func Read(ctx context.Context, a *coordination.Admin) (Snapshot, error) {
	s := Snapshot{Leases: []coordination.LeaseInfo{}, Pools: []coordination.PoolState{}, Locks: []Locks{},
		Sessions: []coordination.SessionInfo{}, Schedules: []Schedule{}}
	infos, err := a.Leases(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	var locks, sems lockSets
	for _, li := range infos {
		s.DatabaseTime = li.DatabaseTime
		// Other kinds than these are the pools' rows, which Admin.Pools
		// reads, and the rows the keyed locks keep for their epochs.
		switch kind, owner, rest := splitRow(li.Key); kind {
		case "":
			if name, ok := strings.CutPrefix(li.Key, scheduleRowPrefix); ok {
				s.Schedules = append(s.Schedules, scheduleOf(name, li))
			}
			li.Data = ""
			s.Leases = append(s.Leases, li)
		case lockRowKind:
			locks.add(owner, rest, li)
		case semRowKind:
			sem := sems.add(owner, rest, li)
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
				sem.Slots = max(sem.Slots, n+1)
			}
		}
	}
	s.Locks = append(append(s.Locks, locks.list...), sems.list...)
	states, err := a.Pools(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	for _, st := range states {
		// Empty lists rather than nil ones: the JSON has [] for them.
		if st.List == nil {
			st.List = []string{}
		}
		if st.Members == nil {
			st.Members = []coordination.Member{}
		}
		s.Pools = append(s.Pools, st)
		if s.DatabaseTime.IsZero() {
			s.DatabaseTime = st.DatabaseTime
		}
	}
	sessions, err := a.Sessions(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	for _, si := range sessions {
		s.Sessions = append(s.Sessions, si)
		if s.DatabaseTime.IsZero() {
			s.DatabaseTime = si.DatabaseTime
		}
	}
	return s, nil
}

// lockSets gathers the rows of keyed locks or of semaphores by namespace
// or semaphore, in the order of their first rows.
type lockSets struct {
	list  []Locks
	index map[string]int
}

// add adds the row li, of the key key of the namespace or semaphore owner,
// and returns owner's element. A row without a holder only makes the
// element.
func (ls *lockSets) add(owner, key string, li coordination.LeaseInfo) *Locks {
	i, ok := ls.index[owner]
	if !ok {
		if ls.index == nil {
			ls.index = make(map[string]int)
		}
		i = len(ls.list)
		ls.index[owner] = i
		ls.list = append(ls.list, Locks{Key: owner, Holders: []coordination.LeaseInfo{}})
	}
	l := &ls.list[i]
	if li.Holder != "" {
		li.Key, li.Data = key, ""
		l.Holders = append(l.Holders, li)
	}
	return l
}

// read is Read with the serving process's holder and its renewal state,
// without the errors' text, times in UTC. It returns the process's clock
// at the read of the renewal state too.
func read(ctx context.Context, c *coordination.Coordinator) (Snapshot, time.Time, error) {
	s, err := Read(ctx, c.Admin())
	if err != nil {
		return Snapshot{}, time.Time{}, err
	}
	rs, now := c.Renewal(), time.Now()
	// The errors are not shown: the renewal's is the database driver's,
	// the health check's the application's; the process's log has both.
	rs.LastError, rs.HealthError = nil, nil
	rs.TrustDeadline, rs.LastSuccess, rs.HealthChanged = rs.TrustDeadline.UTC(), rs.LastSuccess.UTC(), rs.HealthChanged.UTC()
	s.Holder, s.Renewal = c.Holder(), &rs
	return s, now, nil
}
