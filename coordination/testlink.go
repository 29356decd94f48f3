package coordination

import (
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/leasehold/leasehold/internal/testlink"
)

// The store a coordinator runs on and the one the tests wrap have the same
// methods.
var (
	_ testlink.LeaseStore = leaseStore(nil)
	_ leaseStore          = testlink.LeaseStore(nil)
)

// The seam of the tests that need a database (through internal/testlink),
// which live in a module of their own: what they read of a coordinator's
// insides and the hooks they install. Nothing else calls these.
func init() {
	testlink.OnRenew = func(c any, f func(terms, lost int, err error)) { c.(*Coordinator).signals.afterRenew.Store(&f) }
	testlink.OnRound = func(c any, f func(names int)) { c.(*Coordinator).signals.afterRound.Store(&f) }
	testlink.OnWoken = func(c any, f func(attempted int)) { c.(*Coordinator).signals.afterWoken.Store(&f) }
	testlink.DropWakes = func(c any, drop bool) { c.(*Coordinator).signals.dropWakes.Store(drop) }
	testlink.WakeFor = func(c any, names []string) { c.(*Coordinator).wakes.wakeFor(names) }
	testlink.Listening = func(c any) bool { return c.(*Coordinator).wakes.listening.Load() }
	testlink.ListenChanged = func(c any) <-chan struct{} { return c.(*Coordinator).wakes.listenChanged }
	testlink.Transport = func(c any) any { return c.(*Coordinator).wakes.transport }
	testlink.Store = func(c any) any { return c.(*Coordinator).store }
	testlink.SessionID = func(l any) string { return l.(*Lease).sess.id }
	testlink.AssignmentMember = func(a any) any { return a.(Assignment).member }
	testlink.EndOfTerm = endOfTerm
	testlink.ErrLostInFailover = errLostInFailover
	testlink.ConfigDefaults = func(cfg any) any { return cfg.(Config).withDefaults() }
	testlink.LeaseName = func(scope any, cluster, name string) (string, error) { return leaseName(scope.(Scope), cluster, name) }
	testlink.PoolRowsFor = func(key string) testlink.PoolRows {
		r := poolRowsFor(key)
		return testlink.PoolRows{Prefix: r.Prefix, Generation: r.Generation, Members: r.Members, Member: r.Member, Wake: r.Wake}
	}
	testlink.Metrics = func(mp any) (func(time.Duration, error), func(time.Duration), error) {
		m, err := newMetrics(mp.(metric.MeterProvider))
		if err != nil {
			return nil, nil, err
		}
		return m.renewal, m.headroom, nil
	}
	testlink.DeadMemberGrace = deadMemberGrace
	testlink.LockRowPrefix, testlink.KeySep, testlink.LockFloors = lockRowPrefix, keySep, lockFloors
}
