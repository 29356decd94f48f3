package status

import (
	"context"
	"strings"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// snapshot is what one request serves; its JSON encoding is the JSON
// format of the handler. Times are by the database clock, in UTC, except
// those of renewal, which are by this process's clock.
type snapshot struct {
	Holder       string    `json:"holder"`                 // this process
	DatabaseTime time.Time `json:"database_time,omitzero"` // the database clock at the read; absent with no rows
	Renewal      renewal   `json:"renewal"`
	Leases       []lease   `json:"leases"`
	Pools        []pool    `json:"pools"`
}

// renewal is this process's renewal state (coordination.RenewalState).
type renewal struct {
	Running     bool      `json:"running"`
	Held        int       `json:"held"`
	TrustLeft   *float64  `json:"trust_left_seconds,omitempty"` // until the trust deadline; absent with no session
	Failures    int       `json:"failures"`
	LastSuccess time.Time `json:"last_success,omitzero"`
}

// lease is one election lease.
type lease struct {
	Name       string    `json:"name"`
	Holder     string    `json:"holder"` // "" when free
	Epoch      int64     `json:"epoch"`
	AcquiredAt time.Time `json:"acquired_at,omitzero"`
	RenewedAt  time.Time `json:"renewed_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Left       float64   `json:"left_seconds"` // until ExpiresAt by the database clock; 0 when not live
	Live       bool      `json:"live"`
	Mine       bool      `json:"mine"`
}

// pool is one pool.
type pool struct {
	Key          string    `json:"pool"`
	Generation   int64     `json:"generation"`
	DatabaseTime time.Time `json:"database_time,omitzero"`
	// Members lists the members of the generation in index order, then
	// the member rows outside it (joining, or left and not yet pruned).
	Members []member `json:"members"`
}

// member is one member of a pool.
type member struct {
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

// poolRowPrefix starts the key of every pool row in Coordinator.Leases;
// the pools are listed by Coordinator.Pools instead.
const poolRowPrefix = "pool|"

// read reads the leases and pools of c's database, with now the process's
// clock for the renewal state.
func read(ctx context.Context, c *coordination.Coordinator, now time.Time) (snapshot, error) {
	rs := c.Renewal()
	s := snapshot{
		Holder: c.Holder(),
		Renewal: renewal{
			Running: rs.Running, Held: rs.Held, Failures: rs.Failures, LastSuccess: rs.LastSuccess.UTC(),
		},
		Leases: []lease{},
		Pools:  []pool{},
	}
	if !rs.TrustDeadline.IsZero() {
		left := seconds(rs.TrustDeadline.Sub(now))
		s.Renewal.TrustLeft = &left
	}
	infos, err := c.Leases(ctx)
	if err != nil {
		return snapshot{}, err
	}
	for _, li := range infos {
		s.DatabaseTime = li.DatabaseTime
		if strings.HasPrefix(li.Name, poolRowPrefix) {
			continue
		}
		l := lease{
			Name: li.Name, Holder: li.Holder, Epoch: li.Epoch,
			AcquiredAt: li.AcquiredAt, RenewedAt: li.RenewedAt, ExpiresAt: li.ExpiresAt,
			Live: li.Live, Mine: li.Mine,
		}
		if li.Live {
			l.Left = seconds(li.ExpiresAt.Sub(li.DatabaseTime))
		}
		s.Leases = append(s.Leases, l)
	}
	states, err := c.Pools(ctx)
	if err != nil {
		return snapshot{}, err
	}
	for _, st := range states {
		s.Pools = append(s.Pools, poolOf(st, c.Holder()))
	}
	return s, nil
}

// poolOf lays out one pool: the generation's members in index order, then
// the rows outside it.
func poolOf(st coordination.PoolState, self string) pool {
	p := pool{Key: st.Pool, Generation: st.Generation, DatabaseTime: st.DBNow, Members: []member{}}
	rows := make(map[string]coordination.Member, len(st.Members))
	for _, m := range st.Members {
		rows[m.ID] = m
	}
	add := func(index *int, id string) {
		m := member{Index: index, ID: id}
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
