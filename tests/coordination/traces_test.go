package coordination_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// The span names and attribute keys docs/operations.md documents.
const (
	spanAcquire   = "leasehold.acquire"
	spanRelease   = "leasehold.release"
	spanTerm      = "leasehold.term"
	spanFence     = "leasehold.fence"
	spanRebalance = "leasehold.pool.rebalance"
	attrEpoch     = "leasehold.lease.epoch"
	attrTermEnd   = "leasehold.term.end"
	scopeName     = "github.com/leasehold/leasehold/coordination"
)

// spanProbe records what a coordinator traced through the SDK, in memory.
type spanProbe struct {
	t   testing.TB
	exp *tracetest.InMemoryExporter
}

func newSpanProbe(t testing.TB) (trace.TracerProvider, *spanProbe) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, &spanProbe{t: t, exp: exp}
}

// until waits, at most wait, for an ended span named name whose
// attributes include kv, and returns it.
func (p *spanProbe) until(name string, kv ...attribute.KeyValue) tracetest.SpanStub {
	p.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		for _, s := range p.exp.GetSpans() {
			if s.Name == name && hasAll(s.Attributes, kv) {
				return s
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no ended span %s with %v within %v; ended: %v", name, kv, wait, p.names())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *spanProbe) names() []string {
	var ns []string
	for _, s := range p.exp.GetSpans() {
		ns = append(ns, fmt.Sprintf("%s%v", s.Name, s.Attributes))
	}
	return ns
}

func hasAll(have, want []attribute.KeyValue) bool {
	set := attribute.NewSet(have...)
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// caseTracesTerm: an acquire, the term, a fencing check in a transaction
// of the leader's work and the release are spans with the lease's name and
// epoch; the work's own spans and the fencing check are children of the
// term's span; the scope has its version.
func caseTracesTerm(t *testing.T, b *bundle) {
	tp, probe := newSpanProbe(t)
	cfg := b.fastConfig()
	cfg.TracerProvider = tp
	r := start(t, b.db, "node-a", cfg)
	l := mustCampaign(t, election(t, r.Coordinator, coordination.GlobalScope, "traced"))
	name, epoch := attribute.String(attrLease, l.Key()), attribute.Int64(attrEpoch, l.Epoch())

	work, span := tp.Tracer("app").Start(l.Context(), "app.work")
	err := b.db.WithContext(work).Transaction(func(tx *gorm.DB) error { return l.Fence(tx) })
	span.End()
	if err != nil {
		t.Fatalf("Fence: %v", err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}

	acq := probe.until(spanAcquire, name)
	term := probe.until(spanTerm, name, epoch, attribute.String(attrTermEnd, "released"))
	fence := probe.until(spanFence, name, epoch)
	probe.until(spanRelease, name)
	app := probe.until("app.work")
	if acq.Status.Code == codes.Error || term.Status.Code == codes.Error || fence.Status.Code == codes.Error {
		t.Errorf("statuses: acquire %v, term %v, fence %v; want none an error", acq.Status, term.Status, fence.Status)
	}
	if app.Parent.SpanID() != term.SpanContext.SpanID() {
		t.Errorf("the work's span has parent %v; want the term's span %v", app.Parent.SpanID(), term.SpanContext.SpanID())
	}
	if fence.Parent.SpanID() != app.SpanContext.SpanID() {
		t.Errorf("the fencing check's span has parent %v; want the work's span %v", fence.Parent.SpanID(), app.SpanContext.SpanID())
	}
	if term.InstrumentationScope.Name != scopeName || term.InstrumentationScope.Version == "" {
		t.Errorf("scope = %+v; want %s with a version", term.InstrumentationScope, scopeName)
	}
}

// caseTracesLockAndLoss: a keyed lock's acquire is a child of the caller's
// span; a term that ends without a release is an error span saying how.
func caseTracesLockAndLoss(t *testing.T, b *bundle) {
	tp, probe := newSpanProbe(t)
	cfg := b.fastConfig()
	cfg.TracerProvider = tp
	r := start(t, b.db, "node-a", cfg)
	ns := locks(t, r.Coordinator, coordination.GlobalScope, "traced-files")
	caller, span := tp.Tracer("app").Start(context.Background(), "app.request")
	if err := ns.Do(caller, "file-1", func(ctx context.Context, l *coordination.Lease) error { return nil }); err != nil {
		t.Fatalf("Do: %v", err)
	}
	span.End()
	acq := probe.until(spanAcquire)
	if acq.Parent.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("the lock's acquire has parent %v; want the caller's span %v", acq.Parent.SpanID(), span.SpanContext().SpanID())
	}

	l := mustCampaign(t, election(t, r.Coordinator, coordination.GlobalScope, "traced-resign"))
	if _, err := r.Admin().Resign(context.Background(), l.Key(), ""); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	probe.until(spanTerm, attribute.String(attrLease, l.Key()), attribute.String(attrTermEnd, "resigned"))
}

// caseTracesRebalance: a pool member's move into a generation is a span
// with the pool's key and the generation.
func caseTracesRebalance(t *testing.T, b *bundle) {
	tp, probe := newSpanProbe(t)
	cfg := b.fastConfig()
	cfg.TracerProvider = tp
	r := start(t, b.db, "node-a", cfg)
	p, err := r.Pool(coordination.GlobalScope, "traced", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
			<-ctx.Done()
			return nil
		}, nil)
	}()
	defer func() {
		cancel()
		<-done
	}()
	s := probe.until(spanRebalance, attribute.String(attrPool, p.Key()))
	set := attribute.NewSet(s.Attributes...)
	if v, ok := set.Value("leasehold.pool.generation"); !ok || v.AsInt64() < 1 {
		t.Errorf("rebalance span's generation = %v; want one of at least 1", v)
	}
}
