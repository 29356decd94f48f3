package coordination

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// TestMetricsRenewPathAllocatesNothing: with metrics on, what a renewal
// records (its round trip, the trust headroom) allocates nothing per
// tick in this package's code: no attributes, no context of its own. The
// tests module's test of the same name checks that the OpenTelemetry
// SDK's instruments, as the coordinator creates them, record those values
// without allocating either: the SDK is not among this module's
// requirements.
func TestMetricsRenewPathAllocatesNothing(t *testing.T) {
	mp := &countingProvider{}
	m, err := newMetrics(mp)
	if err != nil {
		t.Fatal(err)
	}
	if !m.on {
		t.Fatal("metrics off with a provider that is not the no-op one")
	}
	m.renewal(time.Millisecond, nil)
	m.headroom(time.Second)
	allocs := testing.AllocsPerRun(100, func() {
		m.renewal(time.Millisecond, nil)
		m.headroom(time.Second)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per renewal, want 0", allocs)
	}
	if n := mp.recorded(metricRenewDuration); n != 102 {
		t.Fatalf("renew round trips recorded = %d, want 102", n)
	}
	if n := mp.recorded(metricTrustHeadroom); n != 102 {
		t.Fatalf("trust headroom values recorded = %d, want 102", n)
	}
}

// countingProvider is a MeterProvider, other than the no-op one, whose
// histograms count the values recorded on them, by name, and allocate
// nothing; its other instruments are the no-op ones.
type countingProvider struct {
	noop.MeterProvider
	renew, headroom atomic.Int64
}

func (p *countingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return countingMeter{p: p}
}

// recorded returns how many values the histogram named name got.
func (p *countingProvider) recorded(name string) int64 {
	switch name {
	case metricRenewDuration:
		return p.renew.Load()
	case metricTrustHeadroom:
		return p.headroom.Load()
	}
	return 0
}

type countingMeter struct {
	noop.Meter
	p *countingProvider
}

func (m countingMeter) Float64Histogram(name string, _ ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	switch name {
	case metricRenewDuration:
		return countingHistogram{n: &m.p.renew}, nil
	case metricTrustHeadroom:
		return countingHistogram{n: &m.p.headroom}, nil
	}
	return noop.Float64Histogram{}, nil
}

type countingHistogram struct {
	noop.Float64Histogram
	n *atomic.Int64
}

func (h countingHistogram) Record(context.Context, float64, ...metric.RecordOption) { h.n.Add(1) }
