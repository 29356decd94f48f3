package coordination

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/version"
)

// Spans go through the OpenTelemetry trace API to Config.TracerProvider
// (docs/operations.md lists them), under the scope of the metrics; a no-op
// provider records nothing. Each has the attributes that name what it
// concerns, under "leasehold.", and an error status when it failed.

// Span names.
const (
	spanAcquire   = "leasehold.acquire"
	spanRelease   = "leasehold.release"
	spanTerm      = "leasehold.term"
	spanFence     = "leasehold.fence"
	spanRebalance = "leasehold.pool.rebalance"
)

// Span attribute keys beside those the metrics share (attrLease, attrPool).
const (
	attrLeases     = "leasehold.lease.names" // several leases in one statement
	attrEpoch      = "leasehold.lease.epoch"
	attrAcquired   = "leasehold.lease.acquired" // terms an acquire took
	attrHolder     = "leasehold.holder"
	attrGeneration = "leasehold.pool.generation"
	// attrTermEnd says how a term ended: "released", or the loss cause of
	// leasehold.lease.losses.
	attrTermEnd  = "leasehold.term.end"
	termReleased = "released"
	eventGranted = "granted"
)

// newTracer is the coordinator's tracer on tp.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	return tp.Tracer(meterName, trace.WithInstrumentationVersion(version.Module()))
}

// leasesAttr names the leases of a statement: leasehold.lease.name for
// one, leasehold.lease.names for several.
func leasesAttr(names []string) attribute.KeyValue {
	if len(names) == 1 {
		return attribute.String(attrLease, names[0])
	}
	return attribute.StringSlice(attrLeases, names)
}

// termAttrs are the attributes of a term of name at epoch.
func termAttrs(name string, epoch int64) trace.SpanStartEventOption {
	return trace.WithAttributes(attribute.String(attrLease, name), attribute.Int64(attrEpoch, epoch))
}

// endSpan ends span, with an error status when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// fenceSpan starts the span of a fencing check of t in tx, a child of the
// span in tx's context.
func fenceSpan(tr trace.Tracer, tx *gorm.DB, t Token) trace.Span {
	ctx := tx.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	_, span := tr.Start(ctx, spanFence, termAttrs(t.Key, t.Epoch))
	return span
}

// rebalanceSpan records the span of a pool member's move into generation,
// which lasted d and ended now.
func rebalanceSpan(tr trace.Tracer, key string, generation int64, d time.Duration) {
	now := time.Now()
	_, span := tr.Start(context.Background(), spanRebalance, trace.WithTimestamp(now.Add(-d)),
		trace.WithAttributes(attribute.String(attrPool, key), attribute.Int64(attrGeneration, generation)))
	span.End(trace.WithTimestamp(now))
}
