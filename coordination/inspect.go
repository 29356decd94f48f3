package coordination

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold/coordination/internal/membership"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

// poolKeyOf returns the pool key of a pool row key ("pool|<key>|..."), and
// false for any other key.
func poolKeyOf(rowKey string) (string, bool) {
	rest, ok := strings.CutPrefix(rowKey, "pool"+keySep)
	if !ok {
		return "", false
	}
	key, _, ok := strings.Cut(rest, keySep)
	return key, ok && key != ""
}

// poolStateOf builds the state of the pool key from its rows.
func poolStateOf(key string, rows membership.Rows, rs []store.Row) PoolState {
	return poolStateFrom(key, membership.StateOf(rows, rs))
}

// poolStateFrom is the pool key as the member protocol read it.
func poolStateFrom(key string, s membership.State) PoolState {
	st := PoolState{Key: key, Generation: s.Generation, List: s.List, DatabaseTime: s.DBNow, HoldUntil: s.HoldUntil}
	if s.Members != nil {
		st.Members = make([]Member, len(s.Members))
		for i, m := range s.Members {
			st.Members[i] = Member{ID: m.ID, Holder: m.Holder, Ack: m.Ack, Live: m.Live, ExpiresAt: m.ExpiresAt}
		}
	}
	return st
}

// Sessions lists the processes with a row in the session table, one per
// holder string, ordered by it, by the database clock, in one statement.
// A process renews its session while it holds or acquires a lease or
// membership, and lets it expire when it holds nothing. A process that
// stopped renewing (a SIGKILLed one, say) is listed, not live, until its
// row is pruned: a coordinator ending its session prunes those expired
// for over ten of its TTLs.
func (a *Admin) Sessions(ctx context.Context) ([]SessionInfo, error) {
	rows, err := a.store.ListSessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("coordination: list sessions: %w", err)
	}
	return sessionInfos(rows), nil
}

// sessionInfos merges the session rows by holder: of a process's rows,
// the times are of its session of leases that expires last (of its
// advertising row when it has none), the addresses of its advertising row
// that expires last.
func sessionInfos(rows []store.SessionRow) []SessionInfo {
	type merged struct {
		lease, advert *store.SessionRow
	}
	by := make(map[string]*merged)
	for i := range rows {
		r := &rows[i]
		m := by[r.Holder]
		if m == nil {
			m = &merged{}
			by[r.Holder] = m
		}
		slot := &m.lease
		if r.WakeAddrs != "" {
			slot = &m.advert
		}
		if *slot == nil || r.ExpiresAt.After((*slot).ExpiresAt) {
			*slot = r
		}
	}
	out := make([]SessionInfo, 0, len(by))
	for holder, m := range by {
		r := cmp.Or(m.lease, m.advert)
		si := SessionInfo{Holder: holder, RenewedAt: r.RenewedAt, ExpiresAt: r.ExpiresAt, DatabaseTime: r.Now, Live: r.Live()}
		if m.advert != nil {
			si.WakeAddrs = wake.AdvertAddrs(m.advert.WakeAddrs)
		}
		out = append(out, si)
	}
	slices.SortFunc(out, func(x, y SessionInfo) int { return strings.Compare(x.Holder, y.Holder) })
	return out
}

// RenewalState is what Coordinator.Renewal reports.
type RenewalState struct {
	// Running reports whether Run is serving: Ready is closed, Done is not.
	Running bool `json:"running"`
	// Held counts the leases and pool memberships held and trusted now.
	Held int `json:"held"`
	// TrustDeadline is when, on this process's clock, every lease it holds
	// ends without a successful renewal; zero when there is no session.
	TrustDeadline time.Time `json:"trust_deadline,omitzero"`
	// Failures counts the renewal loop's failed statements since its last
	// success; renewals made for an acquire are not counted.
	Failures int `json:"failures"`
	// LastError is the last renewal statement's error; nil after a success.
	LastError error `json:"-"`
	// LastSuccess is when the last successful renewal returned, on this
	// process's clock; zero before the first.
	LastSuccess time.Time `json:"last_success,omitzero"`
	// Unhealthy reports whether the health checks keep this process from
	// campaigning (Config.HealthCheck); always false without a HealthCheck.
	Unhealthy bool `json:"unhealthy"`
	// HealthChanged is when Unhealthy last changed (until then, when Run
	// started), on this process's clock; zero without a HealthCheck, and
	// before Run.
	HealthChanged time.Time `json:"health_changed,omitzero"`
	// HealthError is why the last health check failed; nil after a passing
	// check, and before the first returns. Its text is the application's:
	// think before showing it on a status page.
	HealthError error `json:"-"`
	// Listening reports whether this process receives wake-ups.
	Listening bool `json:"listening"`
}

// Renewal reports the state of the renewal loop and of the health checks,
// for health checks and status pages. It does no I/O.
func (c *Coordinator) Renewal() RenewalState {
	var st RenewalState
	select {
	case <-c.ready:
		select {
		case <-c.done:
		default:
			st.Running = true
		}
	default:
	}
	c.terms.query(func(ts *termState) {
		for _, tm := range ts.held {
			if tm.valid() {
				st.Held++
			}
		}
	})
	c.keeper.state(&st)
	c.terms.health.state(&st)
	st.Listening = c.wakes.listening.Load()
	return st
}
