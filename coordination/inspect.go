package coordination

import (
	"strings"
	"time"

	"github.com/leasehold/leasehold/coordination/internal/membership"
	"github.com/leasehold/leasehold/internal/store"
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
