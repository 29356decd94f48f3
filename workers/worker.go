package workers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
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
	// own index and the pool's count, or, for a sticky worker, with its
	// own partitions of the pool's fixed number.
	KindPartitioned
	// KindScheduled runs a function at the slots of a schedule, each slot
	// once across every process that shares the database (Scheduled).
	KindScheduled
	// KindLimited runs on at most a limit of processes at once, across
	// every cluster that shares the database.
	KindLimited
)

// String returns "cluster-singleton", "global-singleton", "partitioned",
// "scheduled" or "limited".
func (k Kind) String() string {
	switch k {
	case KindClusterSingleton:
		return "cluster-singleton"
	case KindGlobalSingleton:
		return "global-singleton"
	case KindPartitioned:
		return "partitioned"
	case KindScheduled:
		return "scheduled"
	case KindLimited:
		return "limited"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Worker is one unit of work a Host runs. Build one with ClusterSingleton,
// GlobalSingleton, ClusterPartitioned, GlobalPartitioned, ClusterSticky,
// GlobalSticky, Scheduled or Limited; the set of kinds is closed.
type Worker interface {
	// Name is the worker's name: unique per kind within a host, and the
	// election name of a singleton (see coordination.ValidateName).
	Name() string
	// Kind says which sort of worker this is.
	Kind() Kind

	// run runs the worker on h until ctx is cancelled, on the term loop
	// of package coordination, which retries and backs off. It returns
	// early only when the host's coordinator stopped. It must leave
	// nothing running behind once it returns.
	run(ctx context.Context, h *Host) error
	// bind gets, from h's coordinator, the election or the pool the
	// worker runs on, records it in st, and tells h which events concern
	// it. NewHost calls it once per worker, before Run.
	bind(h *Host, st *workerState) error
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

func (s *singleton) bind(h *Host, st *workerState) error {
	return bindElection(h, st, s.scope(), s.name)
}

// bindElection gives st the election of name in scope, and files st
// under its lease's key.
func bindElection(h *Host, st *workerState, scope coordination.Scope, name string) error {
	e, err := h.coord.Election(scope, name)
	if err != nil {
		return err
	}
	if other, ok := h.byLease[e.Key()]; ok {
		// A global singleton "schedule/<name>" and a scheduled worker
		// <name> (ScheduleLease): one lease cannot serve two workers.
		return fmt.Errorf("%w: its lease %q is that of %s worker %q; rename one of them",
			ErrInvalidWorker, e.Key(), other.w.Kind(), other.w.Name())
	}
	st.election = e
	h.byLease[e.Key()] = st
	return nil
}

// run campaigns, leads while elected, and campaigns again, until ctx is
// cancelled, on the election's term loop (coordination.Election.Run): the
// restarts, the backoff and the panic policy are that loop's.
func (s *singleton) run(ctx context.Context, h *Host) error {
	st := h.stateOf(s)
	return st.election.Run(ctx, coordination.LeaderFunc(s.fn), termOptions(h, st, s.name, st.election.Key()))
}

// termOptions are the run options of a worker on a term loop (singleton
// and limited workers): the host's backoff, and its logs, events and
// status at the start and end of each term. key names what the worker
// campaigns for, in the report of a refused campaign.
func termOptions(h *Host, st *workerState, name, key string) coordination.RunOptions[*coordination.Lease] {
	return coordination.RunOptions[*coordination.Lease]{
		Backoff:    h.cfg.RestartBackoff,
		MaxBackoff: h.cfg.MaxRestartBackoff,
		// Code outside the host campaigns for the same election in this
		// process: report it, and campaign again after the backoff.
		RetryBusy: true,
		OnTermStart: func(l *coordination.Lease) {
			st.setTerm(l)
			st.log.Info("started leading", zap.String("lease", l.Key()), zap.Int64("epoch", l.Epoch()))
			h.emit(Event{Kind: EventStartedLeading, Worker: name, Lease: l.Key(), Epoch: l.Epoch()})
		},
		OnTermEnd: func(l *coordination.Lease, cause error) {
			log := st.log.With(zap.String("lease", l.Key()), zap.Int64("epoch", l.Epoch()))
			if errors.Is(cause, coordination.ErrReleased) {
				log.Info("worker function finished its work for this term; the lease is released",
					zap.Duration("campaign_in", h.cfg.RestartBackoff))
			}
			st.setTerm(nil)
			log.Info("stopped leading", zap.NamedError("cause", cause))
			h.emit(Event{Kind: EventStoppedLeading, Worker: name, Lease: l.Key(), Epoch: l.Epoch(), Err: cause})
		},
		OnError: func(l *coordination.Lease, err error, retryIn time.Duration) {
			if l == nil { // a refused campaign
				h.reportError(st, key, 0, err, retryIn)
				return
			}
			h.reportError(st, l.Key(), l.Epoch(), err, retryIn)
		},
	}
}
