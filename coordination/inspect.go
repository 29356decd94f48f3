package coordination

import (
	"strings"
	"time"

	"github.com/leasehold/leasehold/coordination/internal/membership"
	"github.com/leasehold/leasehold/internal/store"
)

// poolKeyOf returns the pool key of a pool row key ("pool|<key>|..."), and
// false for any other key. The first '|' after "pool|" ends the key, since
// keys never contain '|' (see names.go).
func poolKeyOf(rowKey string) (string, bool) {
	rest, ok := strings.CutPrefix(rowKey, "pool"+keySep)
	if !ok {
		return "", false
	}
	key, _, ok := strings.Cut(rest, keySep)
	return key, ok && key != ""
}

// poolStateOf builds the state of the pool with the given key from its
// rows, as read by one statement.
func poolStateOf(key string, rows membership.Rows, rs []store.Row) PoolState {
	return poolStateFrom(key, membership.StateOf(rows, rs))
}

// poolStateFrom is the pool with the given key as the member protocol
// read it.
func poolStateFrom(key string, s membership.State) PoolState {
	st := PoolState{Pool: key, Generation: s.Generation, List: s.List, DBNow: s.DBNow, HoldUntil: s.HoldUntil}
	if s.Members != nil {
		st.Members = make([]Member, len(s.Members))
		for i, m := range s.Members {
			st.Members[i] = Member{ID: m.ID, Holder: m.Holder, Ack: m.Ack, Live: m.Live, ExpiresAt: m.ExpiresAt}
		}
	}
	return st
}

// RenewalState is the state of a coordinator's renewal loop and of its
// health checks (Config.HealthCheck), for health checks and status pages.
// Coordinator.Renewal returns it.
type RenewalState struct {
	// Running reports whether Run is serving: Ready is closed and Done
	// is not.
	Running bool
	// Held is the number of leases and pool memberships this process
	// holds and trusts now.
	Held int
	// TrustDeadline is the trust deadline of the process's session, on
	// this process's clock: without a successful renewal, every lease it
	// holds ends then. Zero when there is no session.
	TrustDeadline time.Time
	// Failures is the number of consecutive failed renewal statements
	// of the renewal loop since its last successful one. The loop renews
	// only while the process holds something, so the count stays as it
	// was while nothing is held; renewals made on the way to an acquire
	// are not counted.
	Failures int
	// LastError is the error of the last renewal statement; nil after a
	// success.
	LastError error
	// LastSuccess is when the last successful renewal statement returned,
	// on this process's clock; zero before the first.
	LastSuccess time.Time
	// Unhealthy reports whether the health checks keep this process
	// from campaigning: a HealthCheck is set, and no check has passed
	// yet or the last one failed. The process keeps the terms it holds
	// until HealthFailures checks in a row failed. Always false without
	// a HealthCheck.
	Unhealthy bool
	// HealthChanged is when Unhealthy last changed, on this process's
	// clock: a passing check after failed ones, or the reverse. Until
	// then it is when Run started, unhealthy until a first check passes.
	// Zero without a HealthCheck, and before Run.
	HealthChanged time.Time
	// HealthError is the error of the last health check (its own, or
	// why it counted as failed: a panic, an overrun of HealthInterval);
	// nil after a passing check, and before the first check returns.
	// Its text is the application's: think before showing it to whoever
	// can reach a status page.
	HealthError error
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
	return st
}
