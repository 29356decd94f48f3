package workers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/term"
)

// Kind says what sort of worker a Worker is.
type Kind int

const (
	// KindClusterSingleton runs on one process per (name, cluster).
	KindClusterSingleton Kind = iota + 1
	// KindGlobalSingleton runs on one process across every cluster that
	// shares the database.
	KindGlobalSingleton
	// KindPartitioned runs on every live process of a pool, each with its
	// own index and the pool's count.
	KindPartitioned
)

// String returns "cluster-singleton", "global-singleton" or "partitioned".
func (k Kind) String() string {
	switch k {
	case KindClusterSingleton:
		return "cluster-singleton"
	case KindGlobalSingleton:
		return "global-singleton"
	case KindPartitioned:
		return "partitioned"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Worker is one unit of work a Host runs. Build one with ClusterSingleton,
// GlobalSingleton or Partitioned; the set of kinds is closed.
type Worker interface {
	// Name is the worker's name: unique per kind within a host, and the
	// election name of a singleton (see coordination.ValidateName).
	Name() string
	// Kind says which sort of worker this is.
	Kind() Kind

	// run runs the worker on h until ctx is cancelled. It returns early
	// only when the host's coordinator stopped; the host restarts a worker
	// that returns or panics otherwise. It must leave nothing running
	// behind once it returns.
	run(ctx context.Context, h *Host) error
}

// validator is implemented by workers with checks of their own beyond the
// name; NewHost calls it. Errors wrap ErrInvalidWorker and name the worker.
type validator interface {
	validate() error
}

// SingletonFunc is the work of a singleton worker. It runs while this
// process holds the worker's lease. ctx ends with the term: at the trust
// deadline, on a confirmed loss, or when the host shuts down; the function
// must return promptly then. lease gives Epoch() for fencing (and Fence for
// a check inside a transaction), and Valid() for a synchronous check before
// each unit of work.
//
// Returning an error, or panicking, while the term is still valid makes
// the host call the function again under the same term, after
// Config.RestartBackoff. Returning nil while the term is valid means the
// work is done for this term: the lease is released and the worker
// campaigns again.
type SingletonFunc func(ctx context.Context, lease *coordination.Lease) error

// ClusterSingleton returns a worker that runs fn on one process per
// cluster (identity.Identity.Cluster) at a time: the holder of the
// cluster-scoped election name, lease "cluster/<cluster>/<name>".
func ClusterSingleton(name string, fn SingletonFunc) Worker {
	return &singleton{kind: KindClusterSingleton, name: name, fn: fn}
}

// GlobalSingleton returns a worker that runs fn on one process at a time
// across every cluster that shares the database: the holder of the
// global election name, lease "global/<name>".
func GlobalSingleton(name string, fn SingletonFunc) Worker {
	return &singleton{kind: KindGlobalSingleton, name: name, fn: fn}
}

// singleton is a cluster or global singleton worker. It holds no state of
// its own, so one value may be given to several hosts.
type singleton struct {
	kind Kind
	name string
	fn   SingletonFunc
}

func (s *singleton) Name() string { return s.name }
func (s *singleton) Kind() Kind   { return s.kind }

func (s *singleton) validate() error {
	if s.fn == nil {
		return fmt.Errorf("%w: %s worker %q has a nil function", ErrInvalidWorker, s.kind, s.name)
	}
	return nil
}

func (s *singleton) scope() coordination.Scope {
	if s.kind == KindGlobalSingleton {
		return coordination.GlobalScope
	}
	return coordination.ClusterScope
}

// run campaigns, leads while elected, and campaigns again, until ctx is
// cancelled.
func (s *singleton) run(ctx context.Context, h *Host) error {
	st := h.stateOf(s)
	e, err := h.coord.Election(s.scope(), s.name)
	if err != nil {
		return err
	}
	b := h.cfg.backoff()
	for {
		l, err := e.Campaign(ctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, coordination.ErrClosed):
			return err // the coordinator stopped; the host is stopping too
		default:
			// ErrBusy: code outside the host campaigns for the same
			// election in this process.
			d := b.Failed(0)
			h.reportError(st, e.Name(), 0, fmt.Errorf("campaign for %q: %w", e.Name(), err), d)
			if !sleepCtx(ctx, d) {
				return nil
			}
			continue
		}
		finished := s.lead(ctx, h, st, l, b)
		if ctx.Err() != nil {
			return nil
		}
		if finished && !sleepCtx(ctx, h.cfg.RestartBackoff) {
			return nil
		}
	}
}

// lead runs fn for one term, calling it again after an error or panic
// while the term lasts, and releases the lease once fn has returned for
// the last time, never before. It reports whether fn finished its work
// (returned nil) while the term was still valid.
func (s *singleton) lead(ctx context.Context, h *Host, st *workerState, l *coordination.Lease, b *term.Backoff) (finished bool) {
	work, cancel := context.WithCancelCause(l.Context())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	log := st.log.With(zap.String("lease", l.Name()), zap.Int64("epoch", l.Epoch()))
	st.setTerm(l)
	log.Info("started leading")
	h.emit(Event{Kind: EventStartedLeading, Worker: s.name, Lease: l.Name(), Epoch: l.Epoch()})
	defer func() {
		stop()
		cause := termCause(ctx, l, finished)
		cancel(cause)
		if finished {
			log.Info("worker function finished its work for this term; releasing the lease",
				zap.Duration("campaign_in", h.cfg.RestartBackoff))
		}
		// A failed release is logged and emitted by the coordinator; the
		// lease then expires after TTL.
		_ = l.Release(context.WithoutCancel(ctx))
		st.setTerm(nil)
		log.Info("stopped leading", zap.NamedError("cause", cause))
		h.emit(Event{Kind: EventStoppedLeading, Worker: s.name, Lease: l.Name(), Epoch: l.Epoch(), Err: cause})
	}()

	return term.Run(work, l.Valid, func(ctx context.Context) error { return s.fn(ctx, l) }, term.Policy{
		Backoff: b,
		Report: func(err error, retryIn time.Duration) {
			h.reportError(st, l.Name(), l.Epoch(), err, retryIn)
		},
		EndOfTerm: coordination.EndOfTerm,
	})
}

// termCause says why a term ended, before Release overwrites the lease
// context's cause.
func termCause(ctx context.Context, l *coordination.Lease, finished bool) error {
	if finished {
		return coordination.ErrReleased
	}
	if cause := context.Cause(l.Context()); cause != nil {
		return cause
	}
	if ctx.Err() != nil {
		return coordination.ErrClosed
	}
	// Valid turned false before the deadline timer cancelled the context.
	return fmt.Errorf("%w: trust deadline passed", coordination.ErrLeaseLost)
}
