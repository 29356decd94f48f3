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
	// Renewal is the serving process's renewal state; nil from Read.
	Renewal *Renewal `json:"renewal,omitempty"`
	Leases  []Lease  `json:"leases"`
	Pools   []Pool   `json:"pools"`
	// Schedules lists the scheduled workers (workers.Scheduled), by name,
	// from the progress their lease rows keep. Their leases are among
	// Leases too.
	Schedules []Schedule `json:"schedules"`
}

// Schedule is one scheduled worker: its next slot and its recent runs, as
// the holders of its lease recorded them (workers.ScheduleState).
type Schedule struct {
	Name   string `json:"name"`   // the worker's name
	Lease  string `json:"lease"`  // its lease, workers.ScheduleLease(Name)
	Holder string `json:"holder"` // the lease's holder; "" when free
	Epoch  int64  `json:"epoch"`
	Live   bool   `json:"live"`
	// Next is the next slot the holder waits for; zero when unknown.
	Next time.Time `json:"next,omitzero"`
	// Done is the latest slot that is over.
	Done time.Time `json:"done,omitzero"`
	// Running is the run in progress, if any: with no live holder, a run
	// that was interrupted and that the next holder retries or abandons.
	Running *workers.RunRecord `json:"running,omitempty"`
	// History lists the latest runs, oldest first.
	History []workers.RunRecord `json:"history"`
	// Error says why the lease row's data could not be read as a
	// schedule's; the other fields but the lease's are then empty.
	Error string `json:"error,omitempty"`
}

// Renewal is a process's renewal state and the state of its health checks
// (coordination.RenewalState).
type Renewal struct {
	Running     bool      `json:"running"`
	Held        int       `json:"held"`
	TrustLeft   *float64  `json:"trust_left_seconds,omitempty"` // until the trust deadline; absent with no session
	Failures    int       `json:"failures"`
	LastSuccess time.Time `json:"last_success,omitzero"`
	// HealthCheck reports whether the process has a
	// coordination.Config.HealthCheck; without one the fields below are
	// false, zero and absent.
	HealthCheck bool `json:"health_check"`
	// Unhealthy reports whether the health checks keep the process from
	// campaigning: none has passed yet, or the last one failed. The
	// checks' error text is not shown: it is the application's, and the
	// process's log has it.
	Unhealthy bool `json:"unhealthy"`
	// HealthChanged is when Unhealthy last changed (or the process's
	// coordinator started), and HealthFor how long ago that was, in
	// seconds.
	HealthChanged time.Time `json:"health_changed,omitzero"`
	HealthFor     *float64  `json:"health_for_seconds,omitempty"`
}

// Lease is one election lease.
type Lease struct {
	Name       string    `json:"name"`
	Holder     string    `json:"holder"` // "" when free
	Epoch      int64     `json:"epoch"`
	AcquiredAt time.Time `json:"acquired_at,omitzero"`
	RenewedAt  time.Time `json:"renewed_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Left       float64   `json:"left_seconds"` // until ExpiresAt by the database clock; 0 when not live
	Live       bool      `json:"live"`
	Mine       bool      `json:"mine"` // held by the reading coordinator's process
}

// Pool is one pool.
type Pool struct {
	Key          string    `json:"pool"`
	Generation   int64     `json:"generation"`
	DatabaseTime time.Time `json:"database_time,omitzero"`
	// Members lists the members of the generation in index order, then
	// the member rows outside it (joining, or left and not yet pruned).
	Members []Member `json:"members"`
}

// Member is one member of a pool.
type Member struct {
	Index     *int      `json:"index"` // its index in the generation; null outside it
	ID        string    `json:"id"`
	Holder    string    `json:"holder"` // "" when its row is free or missing
	Ack       int64     `json:"ack"`    // the newest generation it acknowledged
	Acked     bool      `json:"acked"`  // Ack is the pool's generation
	Live      bool      `json:"live"`
	Mine      bool      `json:"mine"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	Left      float64   `json:"left_seconds"` // until ExpiresAt by the database clock; 0 when not live
}

// poolRowPrefix starts the key of every pool row in Admin.Leases; the
// pools are listed by Admin.Pools instead.
const poolRowPrefix = "pool|"

// scheduleRowPrefix starts the lease name of every scheduled worker.
var scheduleRowPrefix = workers.ScheduleLease("")

// scheduleOf decodes the progress of the scheduled worker name from its
// lease row.
func scheduleOf(name string, li coordination.LeaseInfo) Schedule {
	sc := Schedule{Name: name, Lease: li.Name, Holder: li.Holder, Epoch: li.Epoch, Live: li.Live, History: []workers.RunRecord{}}
	st, err := workers.DecodeScheduleState(li.Data)
	if err != nil {
		sc.Error = err.Error()
		return sc
	}
	sc.Next, sc.Done, sc.Running = st.Next, st.Done, st.Running
	if st.History != nil {
		sc.History = st.History
	}
	return sc
}

// Read reads every election lease and every pool of a's database, by the
// database clock, in two statements. It needs no running coordinator:
// coordination.NewAdmin builds a from a *gorm.DB, and
// Coordinator.Admin returns one for a coordinator's database. Holder and
// Renewal are left empty, and Mine false: they describe a serving process
// (Handler fills them in).
func Read(ctx context.Context, a *coordination.Admin) (Snapshot, error) {
	return readAs(ctx, a, "")
}

// readAs is Read with Mine set for the leases and members that self, a
// holder string, holds; "" is nobody.
func readAs(ctx context.Context, a *coordination.Admin, self string) (Snapshot, error) {
	s := Snapshot{Leases: []Lease{}, Pools: []Pool{}, Schedules: []Schedule{}}
	infos, err := a.Leases(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	for _, li := range infos {
		s.DatabaseTime = li.DatabaseTime
		if strings.HasPrefix(li.Name, poolRowPrefix) {
			continue
		}
		l := Lease{
			Name: li.Name, Holder: li.Holder, Epoch: li.Epoch,
			AcquiredAt: li.AcquiredAt, RenewedAt: li.RenewedAt, ExpiresAt: li.ExpiresAt,
			Live: li.Live, Mine: self != "" && li.Holder == self,
		}
		if li.Live {
			l.Left = seconds(li.ExpiresAt.Sub(li.DatabaseTime))
		}
		s.Leases = append(s.Leases, l)
		if name, ok := strings.CutPrefix(li.Name, scheduleRowPrefix); ok {
			s.Schedules = append(s.Schedules, scheduleOf(name, li))
		}
	}
	states, err := a.Pools(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	for _, st := range states {
		s.Pools = append(s.Pools, poolOf(st, self))
		if s.DatabaseTime.IsZero() {
			s.DatabaseTime = st.DBNow
		}
	}
	return s, nil
}

// read is Read with the serving process's holder, the leases and members
// it holds, and its renewal state, with now the process's clock.
func read(ctx context.Context, c *coordination.Coordinator, now time.Time) (Snapshot, error) {
	s, err := readAs(ctx, c.Admin(), c.Holder())
	if err != nil {
		return Snapshot{}, err
	}
	rs := c.Renewal()
	s.Holder = c.Holder()
	s.Renewal = &Renewal{
		Running: rs.Running, Held: rs.Held, Failures: rs.Failures, LastSuccess: rs.LastSuccess.UTC(),
		HealthCheck: c.Config().HealthCheck != nil, Unhealthy: rs.Unhealthy, HealthChanged: rs.HealthChanged.UTC(),
	}
	if !rs.TrustDeadline.IsZero() {
		left := seconds(rs.TrustDeadline.Sub(now))
		s.Renewal.TrustLeft = &left
	}
	if !rs.HealthChanged.IsZero() {
		since := seconds(now.Sub(rs.HealthChanged))
		s.Renewal.HealthFor = &since
	}
	return s, nil
}

// poolOf lays out one pool: the generation's members in index order, then
// the rows outside it.
func poolOf(st coordination.PoolState, self string) Pool {
	p := Pool{Key: st.Pool, Generation: st.Generation, DatabaseTime: st.DBNow, Members: []Member{}}
	rows := make(map[string]coordination.Member, len(st.Members))
	for _, m := range st.Members {
		rows[m.ID] = m
	}
	add := func(index *int, id string) {
		m := Member{Index: index, ID: id}
		if r, ok := rows[id]; ok {
			m.Holder, m.Ack, m.Acked, m.Live, m.ExpiresAt = r.Holder, r.Ack, r.Ack == st.Generation, r.Live, r.ExpiresAt
			m.Mine = r.Holder != "" && r.Holder == self
			if r.Live {
				m.Left = seconds(r.ExpiresAt.Sub(st.DBNow))
			}
		}
		p.Members = append(p.Members, m)
	}
	listed := make(map[string]bool, len(st.List))
	for i, id := range st.List {
		listed[id] = true
		add(&i, id)
	}
	for _, m := range st.Members {
		if !listed[m.ID] {
			add(nil, m.ID)
		}
	}
	return p
}

// seconds returns d in seconds, to the millisecond, and never below zero.
func seconds(d time.Duration) float64 {
	return max(d, 0).Round(time.Millisecond).Seconds()
}
