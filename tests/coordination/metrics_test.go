package coordination_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/leasehold/leasehold/coordination"
)

// The names of the instruments, their attributes and the causes of a
// loss: the contract docs/operations.md documents for dashboards and
// alerts, pinned here as users write them.
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

	attrLease = "leasehold.lease.name"
	attrCause = "leasehold.loss.cause"
	attrPool  = "leasehold.pool.key"

	lossTrustDeadline   = "trust_deadline"
	lossLateRenewal     = "late_renewal"
	lossSessionGone     = "session_gone"
	lossShutdownTimeout = "shutdown_timeout"
	lossResigned        = "resigned"
	lossUnhealthy       = "unhealthy"
)

// meterProbe reads what a coordinator recorded through an SDK provider.
type meterProbe struct {
	t      testing.TB
	reader *sdkmetric.ManualReader
}

func newMeterProbe(t testing.TB) (metric.MeterProvider, *meterProbe) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, &meterProbe{t: t, reader: reader}
}

// snapshot is one collection, by instrument name.
type snapshot map[string]metricdata.Aggregation

func (p *meterProbe) collect() snapshot {
	p.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := p.reader.Collect(context.Background(), &rm); err != nil {
		p.t.Fatalf("Collect: %v", err)
	}
	out := snapshot{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// until collects until ok accepts a snapshot, for at most wait.
func (p *meterProbe) until(what string, ok func(snapshot) bool) snapshot {
	p.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		s := p.collect()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: not seen within %v; last collection: %v", what, wait, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hasAttr(set attribute.Set, key, value string) bool {
	v, ok := set.Value(attribute.Key(key))
	return ok && v.AsString() == value
}

// gauge returns the value of an int64 gauge at the point whose attribute
// key is value.
func (s snapshot) gauge(name, key, value string) (int64, bool) {
	g, _ := s[name].(metricdata.Gauge[int64])
	for _, dp := range g.DataPoints {
		if hasAttr(dp.Attributes, key, value) {
			return dp.Value, true
		}
	}
	return 0, false
}

// value returns the value of a gauge observed without attributes, int64
// or float64, and whether it was observed.
func (s snapshot) value(name string) (float64, bool) {
	switch g := s[name].(type) {
	case metricdata.Gauge[int64]:
		if len(g.DataPoints) == 1 && g.DataPoints[0].Attributes.Len() == 0 {
			return float64(g.DataPoints[0].Value), true
		}
	case metricdata.Gauge[float64]:
		if len(g.DataPoints) == 1 && g.DataPoints[0].Attributes.Len() == 0 {
			return g.DataPoints[0].Value, true
		}
	}
	return 0, false
}

// sum adds up an int64 counter over the points that have every key/value
// pair of kv.
func (s snapshot) sum(name string, kv ...string) int64 {
	c, _ := s[name].(metricdata.Sum[int64])
	var total int64
points:
	for _, dp := range c.DataPoints {
		for i := 0; i+1 < len(kv); i += 2 {
			if !hasAttr(dp.Attributes, kv[i], kv[i+1]) {
				continue points
			}
		}
		total += dp.Value
	}
	return total
}

// hist returns the count, minimum and maximum of a histogram over all its
// points.
func (s snapshot) hist(name string) (count uint64, lo, hi float64) {
	h, _ := s[name].(metricdata.Histogram[float64])
	first := true
	for _, dp := range h.DataPoints {
		count += dp.Count
		mn, okMin := dp.Min.Value()
		mx, okMax := dp.Max.Value()
		if !okMin || !okMax {
			continue
		}
		if first || mn < lo {
			lo = mn
		}
		if first || mx > hi {
			hi = mx
		}
		first = false
	}
	return count, lo, hi
}

// lossCauseOf maps the error of an EventLost to the cause its loss was
// counted under.
func lossCauseOf(t testing.TB, err error) string {
	t.Helper()
	msg := err.Error()
	switch {
	case errors.Is(err, coordination.ErrResigned):
		return lossResigned
	case errors.Is(err, coordination.ErrUnhealthy):
		return lossUnhealthy
	case strings.Contains(msg, "without a successful renewal"):
		return lossTrustDeadline
	case strings.Contains(msg, "before the renewal completed"):
		return lossLateRenewal
	case strings.Contains(msg, "session expired"):
		return lossSessionGone
	case strings.Contains(msg, "ShutdownTimeout"):
		return lossShutdownTimeout
	}
	t.Fatalf("no loss cause for %v", err)
	return ""
}

func caseMetricsAcquireRenewRelease(t *testing.T, b *bundle) {
	mp, probe := newMeterProbe(t)
	cfg := b.fastConfig()
	cfg.MeterProvider = mp
	r := start(t, b.db, "node-a", cfg)
	renewed := renewSignal(t, r)
	e := election(t, r.Coordinator, coordination.ClusterScope, "metered")

	if held, ok := probe.collect().gauge(metricLeaseHeld, attrLease, e.Key()); !ok || held != 0 {
		t.Fatalf("before the campaign: held = %d (present %v), want 0", held, ok)
	}
	l := mustCampaign(t, e)
	s := probe.collect()
	if held, _ := s.gauge(metricLeaseHeld, attrLease, l.Key()); held != 1 {
		t.Fatalf("after acquiring: held = %d, want 1", held)
	}
	if epoch, _ := s.gauge(metricLeaseEpoch, attrLease, l.Key()); epoch != l.Epoch() {
		t.Fatalf("after acquiring: epoch = %d, want %d", epoch, l.Epoch())
	}
	if n := s.sum(metricAcquisitions); n != 1 {
		t.Fatalf("acquisitions = %d, want 1", n)
	}
	if n, _, _ := s.hist(metricAcquireDuration); n == 0 {
		t.Fatalf("no acquire round trip recorded")
	}

	recvInt(t, renewed)
	recvInt(t, renewed)
	s = probe.collect()
	if n, _, _ := s.hist(metricRenewDuration); n == 0 {
		t.Fatalf("no renewal round trip recorded")
	}
	n, lo, hi := s.hist(metricTrustHeadroom)
	if n == 0 || lo <= 0 || hi > cfg.TTL.Seconds() {
		t.Fatalf("trust headroom: %d values in [%v, %v]s, want some, within (0, %v]", n, lo, hi, cfg.TTL.Seconds())
	}
	if n := s.sum(metricRenewErrors); n != 0 {
		t.Fatalf("renew errors = %d, want 0", n)
	}

	release(t, l)
	s = probe.collect()
	if n := s.sum(metricReleases); n != 1 {
		t.Fatalf("releases = %d, want 1", n)
	}
	if held, _ := s.gauge(metricLeaseHeld, attrLease, l.Key()); held != 0 {
		t.Fatalf("after release: held = %d, want 0", held)
	}
	if n := s.sum(metricLosses); n != 0 {
		t.Fatalf("losses = %d, want 0", n)
	}

	// The gauges' callback ends with Run.
	r.cancel()
	select {
	case <-r.Done():
	case <-time.After(wait):
		t.Fatalf("Run did not return within %v", wait)
	}
	if _, ok := probe.collect().gauge(metricLeaseHeld, attrLease, l.Key()); ok {
		t.Fatalf("the held gauge is still observed after Run returned")
	}
}

// caseMetricsTryAcquire: an attempt that takes a lease counts an
// acquisition and an acquire round trip, as a campaign's grant does; an
// attempt refused by the read sends no acquire and counts nothing.
func caseMetricsTryAcquire(t *testing.T, b *bundle) {
	cfg := attempting(b)
	mpA, probeA := newMeterProbe(t)
	mpC, probeC := newMeterProbe(t)
	cfgA, cfgC := cfg, cfg
	cfgA.MeterProvider, cfgC.MeterProvider = mpA, mpC
	a := start(t, b.db, "node-a", cfgA)
	c := start(t, b.db, "node-c", cfgC)
	ea := election(t, a.Coordinator, coordination.GlobalScope, "metered-try")
	ec := election(t, c.Coordinator, coordination.GlobalScope, "metered-try")

	la, err := tryAcquire(ea)
	if err != nil {
		t.Fatalf("A: TryAcquire on a free lease: %v", err)
	}
	s := probeA.collect()
	if n := s.sum(metricAcquisitions); n != 1 {
		t.Fatalf("A: acquisitions = %d, want 1", n)
	}
	if n, _, _ := s.hist(metricAcquireDuration); n != 1 {
		t.Fatalf("A: acquire round trips = %d, want 1", n)
	}
	if held, _ := s.gauge(metricLeaseHeld, attrLease, la.Key()); held != 1 {
		t.Fatalf("A: held = %d, want 1", held)
	}
	if epoch, _ := s.gauge(metricLeaseEpoch, attrLease, la.Key()); epoch != la.Epoch() {
		t.Fatalf("A: epoch = %d, want %d", epoch, la.Epoch())
	}

	settle(t, b.db) // C's read on its node sees A's lease
	if l, err := tryAcquire(ec); !errors.Is(err, coordination.ErrNotAcquired) {
		t.Fatalf("C: TryAcquire of a held lease = %v (lease %v), want ErrNotAcquired", err, l)
	}
	s = probeC.collect()
	if n := s.sum(metricAcquisitions); n != 0 {
		t.Fatalf("C: acquisitions = %d after a refused attempt, want 0", n)
	}
	if n, _, _ := s.hist(metricAcquireDuration); n != 0 {
		t.Fatalf("C: acquire round trips = %d after an attempt refused by its read, want 0", n)
	}
	if held, _ := s.gauge(metricLeaseHeld, attrLease, ec.Key()); held != 0 {
		t.Fatalf("C: held = %d, want 0", held)
	}

	release(t, la)
	settle(t, b.db) // C's read on its node sees the release
	lc, err := tryAcquire(ec)
	if err != nil {
		t.Fatalf("C: TryAcquire after A's release: %v", err)
	}
	defer release(t, lc)
	s = probeC.collect()
	if n := s.sum(metricAcquisitions); n != 1 {
		t.Fatalf("C: acquisitions = %d, want 1", n)
	}
	if n, _, _ := s.hist(metricAcquireDuration); n != 1 {
		t.Fatalf("C: acquire round trips = %d, want 1", n)
	}
	if held, _ := s.gauge(metricLeaseHeld, attrLease, lc.Key()); held != 1 {
		t.Fatalf("C: held = %d, want 1", held)
	}
	if epoch, _ := s.gauge(metricLeaseEpoch, attrLease, lc.Key()); epoch != lc.Epoch() || epoch <= la.Epoch() {
		t.Fatalf("C: epoch = %d, want %d, above A's %d", epoch, lc.Epoch(), la.Epoch())
	}
	if n := probeA.collect().sum(metricReleases); n != 1 {
		t.Fatalf("A: releases = %d, want 1", n)
	}
}

// caseMetricsLossAndHandoff: a holder cut off from the database loses its
// lease at its trust deadline, another process takes it over and records
// the handoff gap, and then loses it when the database shows its session
// expired.
func caseMetricsLossAndHandoff(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	mpA, probeA := newMeterProbe(t)
	mpC, probeC := newMeterProbe(t)
	cfgA, cfgC := cfg, cfg
	cfgA.MeterProvider, cfgC.MeterProvider = mpA, mpC
	a, fa := startFaulty(t, b.db, "node-a", cfgA)
	c := start(t, b.db, "node-c", cfgC)
	eventsA := a.Subscribe(t.Context(), 16)
	eventsC := c.Subscribe(t.Context(), 16)

	la := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "handoff"))
	ec := election(t, c.Coordinator, coordination.GlobalScope, "handoff")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	type result struct {
		l   *coordination.Lease
		err error
	}
	taken := make(chan result, 1)
	go func() {
		l, err := ec.Campaign(ctx)
		taken <- result{l, err}
	}()

	fa.failAll.Store(true)
	ev := recvEvent(t, eventsA, kindIs(coordination.EventLost, la.Key()))
	fa.failAll.Store(false)
	cause := lossCauseOf(t, ev.Err)
	s := probeA.collect()
	if n, all := s.sum(metricLosses, attrCause, cause), s.sum(metricLosses); n != 1 || all != 1 {
		t.Fatalf("A: losses with cause %s = %d, all = %d, want 1 and 1", cause, n, all)
	}
	if n := s.sum(metricRenewErrors); n == 0 {
		t.Fatalf("A: no renew error counted while cut off")
	}
	if held, _ := s.gauge(metricLeaseHeld, attrLease, la.Key()); held != 0 {
		t.Fatalf("A: held = %d after the loss, want 0", held)
	}
	release(t, la)

	var lc *coordination.Lease
	select {
	case res := <-taken:
		if res.err != nil {
			t.Fatalf("C's campaign: %v", res.err)
		}
		lc = res.l
	case <-time.After(wait):
		t.Fatalf("C did not take the lease over within %v", wait)
	}
	s = probeC.collect()
	if held, _ := s.gauge(metricLeaseHeld, attrLease, lc.Key()); held != 1 {
		t.Fatalf("C: held = %d, want 1", held)
	}
	if epoch, _ := s.gauge(metricLeaseEpoch, attrLease, lc.Key()); epoch != lc.Epoch() || epoch <= la.Epoch() {
		t.Fatalf("C: epoch = %d, want %d, above A's %d", epoch, lc.Epoch(), la.Epoch())
	}
	n, lo, hi := s.hist(metricHandoffGap)
	if n != 1 || lo < 0 || hi > wait.Seconds() {
		t.Fatalf("C: handoff gap: %d values in [%v, %v]s, want 1 within [0, %v]", n, lo, hi, wait.Seconds())
	}
	t.Logf("handoff gap %.3fs (TTL %v, retry %v)", hi, cfg.TTL, cfg.RetryInterval)

	expireNow(t, b.db, lc.Key())
	ev = recvEvent(t, eventsC, kindIs(coordination.EventLost, lc.Key()))
	cause = lossCauseOf(t, ev.Err)
	s = probeC.collect()
	if n, all := s.sum(metricLosses, attrCause, cause), s.sum(metricLosses); n != 1 || all != 1 {
		t.Fatalf("C: losses with cause %s = %d, all = %d, want 1 and 1", cause, n, all)
	}
	if cause != lossSessionGone {
		t.Logf("C lost its lease with cause %s rather than %s: a slow renewal", cause, lossSessionGone)
	}
	release(t, lc)
}

// caseMetricsPool: two members of a pool report its generation, its
// members and their assignment, and a rebalance each.
func caseMetricsPool(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	type member struct {
		probe *meterProbe
		p     *coordination.Pool
		got   chan coordination.Assignment
	}
	var ms []*member
	for _, node := range []string{"node-a", "node-b"} {
		mp, probe := newMeterProbe(t)
		cfgN := cfg
		cfgN.MeterProvider = mp
		r := start(t, b.db, node, cfgN)
		p, err := r.Pool(coordination.GlobalScope, "metered", coordination.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		m := &member{probe: probe, p: p, got: make(chan coordination.Assignment, 16)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
				m.got <- a
				<-ctx.Done()
				return nil
			}, nil)
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(wait):
				t.Errorf("Pool.Run of %s did not return", node)
			}
		})
		ms = append(ms, m)
	}
	var last []coordination.Assignment
	for _, m := range ms {
		deadline := time.After(wait)
		for a := (coordination.Assignment{}); a.Count != 2; {
			select {
			case a = <-m.got:
				if a.Count == 2 {
					last = append(last, a)
				}
			case <-deadline:
				t.Fatalf("no assignment of a two-member generation within %v", wait)
			}
		}
	}
	for i, m := range ms {
		a := last[i]
		s := m.probe.until("a rebalance", func(s snapshot) bool {
			n, _, _ := s.hist(metricRebalanceDuration)
			return n > 0
		})
		if gen, _ := s.gauge(metricPoolGeneration, attrPool, m.p.Key()); gen != a.Generation {
			t.Errorf("member %d: generation = %d, want %d", i, gen, a.Generation)
		}
		if n, _ := s.gauge(metricPoolMembers, attrPool, m.p.Key()); n != 2 {
			t.Errorf("member %d: members = %d, want 2", i, n)
		}
		if n, _ := s.gauge(metricPoolAssigned, attrPool, m.p.Key()); n != 1 {
			t.Errorf("member %d: assigned = %d, want 1", i, n)
		}
		if held, _ := s.gauge(metricLeaseHeld, attrLease, membershipToken(a).Key); held != 1 {
			t.Errorf("member %d: membership lease held = %d, want 1", i, held)
		}
		// A join takes its membership on the acquire path of elections.
		if n := s.sum(metricAcquisitions); n < 1 {
			t.Errorf("member %d: acquisitions = %d, want at least the membership's", i, n)
		}
		if n, _, _ := s.hist(metricAcquireDuration); n < 1 {
			t.Errorf("member %d: no acquire round trip recorded for the join", i)
		}
		_, lo, hi := s.hist(metricRebalanceDuration)
		if lo < 0 || hi > wait.Seconds() {
			t.Errorf("member %d: rebalance durations in [%v, %v]s", i, lo, hi)
		}
	}
}

// TestMetricsRenewPathAllocatesNothing: the values a renewal records
// allocate nothing per tick with the SDK either. The test captures the
// instruments a coordinator creates on an SDK provider (capturingProvider)
// and records on them as the renewal loop does, without attributes and
// with a background context; package coordination's test of the same name
// checks that the loop's own recording allocates nothing.
func TestMetricsRenewPathAllocatesNothing(t *testing.T) {
	mp, probe := newMeterProbe(t)
	cp := &capturingProvider{MeterProvider: mp, hists: map[string]metric.Float64Histogram{}}
	c, err := coordination.New(memDB(t), testIdentity(t, "node-a"), coordination.Config{MeterProvider: cp})
	if err != nil {
		t.Fatal(err)
	}
	_ = c
	renewal, headroom := cp.hist(t, metricRenewDuration), cp.hist(t, metricTrustHeadroom)
	ctx := context.Background()
	renewal.Record(ctx, time.Millisecond.Seconds())
	headroom.Record(ctx, time.Second.Seconds())
	allocs := testing.AllocsPerRun(100, func() {
		renewal.Record(ctx, time.Millisecond.Seconds())
		headroom.Record(ctx, time.Second.Seconds())
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per renewal, want 0", allocs)
	}
	if n, _, _ := probe.collect().hist(metricRenewDuration); n != 102 {
		t.Fatalf("renew round trips recorded = %d, want 102", n)
	}
}

// capturingProvider is a MeterProvider that hands out its inner
// provider's instruments and keeps the histograms, by name.
type capturingProvider struct {
	metric.MeterProvider
	mu    sync.Mutex
	hists map[string]metric.Float64Histogram
}

func (p *capturingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return capturingMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

// hist returns the histogram named name, failing the test when the
// coordinator created none.
func (p *capturingProvider) hist(t testing.TB, name string) metric.Float64Histogram {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.hists[name]
	if !ok {
		t.Fatalf("the coordinator created no histogram %q", name)
	}
	return h
}

type capturingMeter struct {
	metric.Meter
	p *capturingProvider
}

func (m capturingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	h, err := m.Meter.Float64Histogram(name, opts...)
	if err == nil {
		m.p.mu.Lock()
		m.p.hists[name] = h
		m.p.mu.Unlock()
	}
	return h, err
}

// TestMetricsTrustRemaining runs caseMetricsTrustRemaining on every
// database target.
func TestMetricsTrustRemaining(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCases(t, []conformanceCase{{"CutOffHolder", caseMetricsTrustRemaining}})
}

// caseMetricsTrustRemaining: the trust remaining gauge reads 0 while
// nothing is held, the time left before the trust deadline while a lease
// is, falls below TTL/4 while a holder cut off from its database still
// holds its lease (no renewal succeeds then, so the headroom histogram
// has nothing to record), and reads 0 again once the lease is lost.
func caseMetricsTrustRemaining(t *testing.T, b *bundle) {
	// TTL/4 is 3s: a window no busy scheduler misses between two
	// collections.
	cfg := coordination.Config{
		TTL: 12 * time.Second, RenewInterval: time.Second, RetryInterval: 100 * time.Millisecond,
		Margin: time.Second, ShutdownTimeout: 5 * time.Second,
	}
	mp, probe := newMeterProbe(t)
	cfg.MeterProvider = mp
	r, fs := startFaulty(t, b.db, "node-a", cfg)
	events := r.Subscribe(t.Context(), 16)

	if v, ok := probe.collect().value(metricTrustRemaining); !ok || v != 0 {
		t.Fatalf("before any lease: trust remaining = %v (observed %v), want 0", v, ok)
	}
	l := mustCampaign(t, election(t, r.Coordinator, coordination.GlobalScope, "trust-remaining"))
	window := (cfg.TTL - cfg.Margin).Seconds()
	s := probe.until("trust remaining above 0 while holding", func(s snapshot) bool {
		v, _ := s.value(metricTrustRemaining)
		return v > 0
	})
	if v, _ := s.value(metricTrustRemaining); v > window {
		t.Fatalf("trust remaining = %vs while holding, want at most TTL - Margin (%vs)", v, window)
	}

	fs.failAll.Store(true)
	quarter := (cfg.TTL / 4).Seconds()
	var last float64
	deadline := time.Now().Add(wait)
	for {
		s := probe.collect()
		v, _ := s.value(metricTrustRemaining)
		held, _ := s.gauge(metricLeaseHeld, attrLease, l.Key())
		if held != 1 {
			t.Fatalf("the lease was lost (%v) before trust remaining fell below TTL/4 (%vs); last value %vs",
				context.Cause(l.Context()), quarter, last)
		}
		if v > 0 && v < quarter {
			t.Logf("trust remaining %.3fs while cut off, under TTL/4 (%vs)", v, quarter)
			break
		}
		last = v
		if time.Now().After(deadline) {
			t.Fatalf("trust remaining did not fall below TTL/4 (%vs) within %v of the cut; last value %vs", quarter, wait, last)
		}
		time.Sleep(10 * time.Millisecond)
	}

	recvEvent(t, events, kindIs(coordination.EventLost, l.Key()))
	probe.until("trust remaining 0 after the loss", func(s snapshot) bool {
		v, ok := s.value(metricTrustRemaining)
		return ok && v == 0
	})
	fs.failAll.Store(false)
	release(t, l)
}
