package status

import (
	"context"
	"strings"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/workers"
)

// Snapshot is one read of every lease and pool in a coordinator's database.
// Its JSON encoding is what Handler serves as JSON and what the leasehold
// command's "status -json" prints. Times are by the database clock, in UTC,
// except those of Renewal, which are by the serving process's clock.
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
	// members, which Pools shows. Their Data is left empty: it is what
	// the leases' holders wrote, the application's; Schedules decodes
	// that of the scheduled workers.
	Leases []coordination.LeaseInfo `json:"leases"`
	// Pools lists the pools, by key, as Admin.Pools reads them.
	Pools []coordination.PoolState `json:"pools"`
	// Schedules lists the scheduled workers (workers.Scheduled), by name,
	// from the progress their lease rows keep. Their leases are among
	// Leases too.
	Schedules []Schedule `json:"schedules"`
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

// poolRowPrefix starts the key of every pool row in Admin.Leases; the
// pools are listed by Admin.Pools instead.
const poolRowPrefix = "pool|"

// scheduleRowPrefix starts the lease key of every scheduled worker.
var scheduleRowPrefix = workers.ScheduleLease("")

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

// Read reads every election lease and every pool of a's database, by the
// database clock, in two statements. It needs no running coordinator:
// coordination.NewAdmin builds a from a *gorm.DB, and
// Coordinator.Admin returns one for a coordinator's database. Holder and
// Renewal are left empty: they describe a serving process (Handler fills
// them in).
func Read(ctx context.Context, a *coordination.Admin) (Snapshot, error) {
	s := Snapshot{Leases: []coordination.LeaseInfo{}, Pools: []coordination.PoolState{}, Schedules: []Schedule{}}
	infos, err := a.Leases(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	for _, li := range infos {
		s.DatabaseTime = li.DatabaseTime
		if strings.HasPrefix(li.Key, poolRowPrefix) {
			continue
		}
		if name, ok := strings.CutPrefix(li.Key, scheduleRowPrefix); ok {
			s.Schedules = append(s.Schedules, scheduleOf(name, li))
		}
		li.Data = ""
		s.Leases = append(s.Leases, li)
	}
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
	return s, nil
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
