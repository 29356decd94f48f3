package coordination

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/version"
)

// Metrics go through the OpenTelemetry metric API to Config.MeterProvider
// (docs/operations.md lists the instruments); a no-op provider turns them
// all off. The gauges are observed by one callback, registered while Run
// runs; the loops only add to counters and record to histograms, with
// attribute sets made once per lease, pool or cause. The callback takes
// the owners' locks one at a time, and some counters are added to while
// one is held: safe with any SDK whose synchronous instruments do not wait
// for a collection in progress, as OpenTelemetry's do not.

// meterName is the instrumentation scope of the instruments.
const meterName = "github.com/leasehold/leasehold/coordination"

// Instrument names.
const (
	metricLeaseHeld         = "leasehold.lease.held"
	metricLeaseEpoch        = "leasehold.lease.epoch"
	metricAcquisitions      = "leasehold.lease.acquisitions"
	metricLosses            = "leasehold.lease.losses"
	metricReleases          = "leasehold.lease.releases"
	metricAcquireDuration   = "leasehold.lease.acquire.duration"
	metricHandoffGap        = "leasehold.lease.handoff.gap"
	metricRenewDuration     = "leasehold.session.renew.duration"
	metricRenewErrors       = "leasehold.session.renew.errors"
	metricTrustHeadroom     = "leasehold.session.trust.headroom"
	metricTrustRemaining    = "leasehold.session.trust.remaining"
	metricHealthUnhealthy   = "leasehold.health.unhealthy"
	metricPoolGeneration    = "leasehold.pool.generation"
	metricPoolMembers       = "leasehold.pool.members"
	metricPoolAssigned      = "leasehold.pool.assigned"
	metricRebalanceDuration = "leasehold.pool.rebalance.duration"
)

// Attribute keys.
const (
	attrLease = "leasehold.lease.name"
	attrCause = "leasehold.loss.cause"
	attrPool  = "leasehold.pool.key"
)

// lossCause is why a term ended without a Release: the value of the
// cause attribute of leasehold.lease.losses.
type lossCause int

const (
	// lossTrustDeadline: no successful renewal before the trust deadline.
	lossTrustDeadline lossCause = iota
	// lossLateRenewal: a renewal succeeded, but came back after the trust
	// deadline.
	lossLateRenewal
	// lossSessionGone: the database showed the session expired.
	lossSessionGone
	// lossShutdownTimeout: the work did not return within ShutdownTimeout;
	// the lease is left to expire.
	lossShutdownTimeout
	// lossResigned: a resign was requested for the term.
	lossResigned
	// lossUnhealthy: a step-down after HealthFailures failed health checks.
	lossUnhealthy
	// lossFailover: the new primary after a failover does not show the term.
	lossFailover
	numLossCauses
)

var lossCauseNames = [numLossCauses]string{"trust_deadline", "late_renewal", "session_gone", "shutdown_timeout", "resigned", "unhealthy", "failover"}

func (c lossCause) String() string { return lossCauseNames[c] }

// durationBuckets are the histogram bounds, in seconds, from 1ms to 60s.
var durationBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 60,
}

// metrics holds the instruments of one coordinator.
type metrics struct {
	on    bool // false for a no-op provider: nothing is recorded
	meter metric.Meter

	acquisitions, losses, releases, renewErrors                          metric.Int64Counter
	acquireDuration, handoffGap, renewDuration, trustHeadroom, rebalance metric.Float64Histogram
	held, epoch, poolGeneration, poolMembers, poolAssigned, unhealthy    metric.Int64ObservableGauge
	trustRemaining                                                       metric.Float64ObservableGauge
	lossAttrs                                                            [numLossCauses]metric.AddOption
}

// newMetrics creates the instruments on mp. If the provider refuses any,
// the error is returned together with metrics that record nothing.
func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	if _, isNoop := mp.(noop.MeterProvider); mp == nil || isNoop {
		return &metrics{}, nil
	}
	m := &metrics{on: true, meter: mp.Meter(meterName, metric.WithInstrumentationVersion(version.Module()))}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		inst, err := m.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		inst, err := m.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return inst
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		inst, err := m.meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	m.held = gauge(metricLeaseHeld, "{lease}",
		"1 while this process holds and trusts the lease, 0 for an election it knows but does not hold.")
	m.epoch = gauge(metricLeaseEpoch, "{epoch}",
		"Fencing epoch of the lease as this process knows it: its own term's while held, else the last live epoch it saw.")
	m.acquisitions = counter(metricAcquisitions, "{term}", "Terms this process started (each is an EventElected).")
	m.losses = counter(metricLosses, "{term}", "Terms this process lost without a Release (each is an EventLost), by cause.")
	m.releases = counter(metricReleases, "{term}", "Terms this process gave back by Release (each is an EventReleased).")
	m.acquireDuration = histogram(metricAcquireDuration, "Round trip of one acquire statement, whether or not it took any lease or succeeded.")
	m.handoffGap = histogram(metricHandoffGap,
		"For a lease this process acquired after another term ended: time from that end (its release or its session's expiry, by the database clock) to the acquire.")
	m.renewDuration = histogram(metricRenewDuration, "Round trip of one session renewal statement, whether or not it succeeded.")
	m.renewErrors = counter(metricRenewErrors, "{error}", "Session renewal statements that failed; the renewal is retried until the trust deadline.")
	m.trustHeadroom = histogram(metricTrustHeadroom,
		"Time left before the trust deadline when a successful renewal is applied. Near zero means the leases were nearly lost.")
	var err error
	m.trustRemaining, err = m.meter.Float64ObservableGauge(metricTrustRemaining, metric.WithUnit("s"),
		metric.WithDescription("Time left now before the trust deadline of the session this process's leases ride on; 0 when it holds nothing. It falls while renewals stall."))
	errs = append(errs, err)
	m.unhealthy = gauge(metricHealthUnhealthy, "{process}",
		"1 while the health checks keep this process from campaigning (no check has passed yet, or the last one failed), else 0. Observed only with a HealthCheck.")
	m.poolGeneration = gauge(metricPoolGeneration, "{generation}", "Current generation of the pool, as this member last read it.")
	m.poolMembers = gauge(metricPoolMembers, "{member}", "Members in the pool's current generation, as this member last read it.")
	m.poolAssigned = gauge(metricPoolAssigned, "{index}", "Indexes of the pool assigned to this process: 1 from the start of its work in a generation until that is revoked, else 0.")
	m.rebalance = histogram(metricRebalanceDuration,
		"Time this member spent out of work across a generation change: from the first read that unsettled it to the start of its work, or to idling, in the new generation.")
	if err := errors.Join(errs...); err != nil {
		return &metrics{}, err
	}
	for i := range m.lossAttrs {
		m.lossAttrs[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrCause, lossCause(i).String())))
	}
	return m, nil
}

// leaseAttrs returns the attribute set of a lease, or nil when off.
func (m *metrics) leaseAttrs(name string) metric.MeasurementOption {
	if !m.on {
		return nil
	}
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(attrLease, name)))
}

// poolAttrs returns the attribute set of a pool, or nil when off.
func (m *metrics) poolAttrs(key string) metric.MeasurementOption {
	if !m.on {
		return nil
	}
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(attrPool, key)))
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// renewal records the round trip of a renewal statement, and counts it
// when it failed.
func (m *metrics) renewal(d time.Duration, err error) {
	if !m.on {
		return
	}
	m.renewDuration.Record(context.Background(), seconds(d))
	if err != nil {
		m.renewErrors.Add(context.Background(), 1)
	}
}

// headroom records the time left before the trust deadline when a
// successful renewal is applied.
func (m *metrics) headroom(d time.Duration) {
	if m.on {
		m.trustHeadroom.Record(context.Background(), seconds(d))
	}
}

// acquireRoundTrip records the round trip of an acquire statement.
func (m *metrics) acquireRoundTrip(d time.Duration) {
	if m.on {
		m.acquireDuration.Record(context.Background(), seconds(d))
	}
}

// handoff records the gap before this process's acquire of a lease.
func (m *metrics) handoff(d time.Duration) {
	if m.on {
		m.handoffGap.Record(context.Background(), seconds(d))
	}
}

func (m *metrics) acquired() {
	if m.on {
		m.acquisitions.Add(context.Background(), 1)
	}
}

func (m *metrics) lost(cause lossCause) {
	if m.on {
		m.losses.Add(context.Background(), 1, m.lossAttrs[cause])
	}
}

func (m *metrics) released() {
	if m.on {
		m.releases.Add(context.Background(), 1)
	}
}

func (m *metrics) rebalanced(p *Pool, d time.Duration) {
	if m.on {
		m.rebalance.Record(context.Background(), seconds(d), p.attrs)
	}
}

// freeFor returns how long the lease read as r had been without a live
// term by the database clock at the read, and whether that is known: it
// had a term before (epoch above zero), that term is over, and the row
// tells when it ended (its release, or its session's expiry; a deleted
// session leaves no time).
func freeFor(r store.Row) (time.Duration, bool) {
	if r.Epoch == 0 || r.Live() || r.ExpiresAt.IsZero() {
		return 0, false
	}
	return r.Now.Sub(r.ExpiresAt), true
}

// registerMetrics registers the callback that observes the gauges, and
// returns the function that unregisters it.
func (c *Coordinator) registerMetrics() (unregister func()) {
	m := c.metrics
	if !m.on {
		return func() {}
	}
	reg, err := m.meter.RegisterCallback(c.observeMetrics,
		m.held, m.epoch, m.poolGeneration, m.poolMembers, m.poolAssigned, m.trustRemaining, m.unhealthy)
	if err != nil {
		c.log.Warn("could not register the metrics callback; the gauges report nothing", zap.Error(err))
		return func() {}
	}
	return func() {
		if err := reg.Unregister(); err != nil {
			c.log.Warn("could not unregister the metrics callback", zap.Error(err))
		}
	}
}

// observeMetrics observes the gauges: each held lease, each election this
// process knows, each running pool, the trust left, and the health.
func (c *Coordinator) observeMetrics(_ context.Context, o metric.Observer) error {
	m := c.metrics
	var held map[string]bool
	var seen map[string]int64
	c.terms.query(func(st *termState) { held, seen = st.observe(o, m) })
	if c.cfg.HealthCheck != nil {
		o.ObserveInt64(m.unhealthy, boolInt(c.terms.health.unhealthy()))
	}
	for _, e := range c.handles.electionList() {
		if held[e.key] {
			continue
		}
		o.ObserveInt64(m.held, 0, e.attrs)
		if epoch := seen[e.key]; epoch > 0 {
			o.ObserveInt64(m.epoch, epoch, e.attrs)
		}
	}
	c.handles.observe(o, m)
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
