package workers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
)

// kind says what sort of worker a Worker is.
type kind int

const (
	kindClusterSingleton kind = iota + 1
	kindGlobalSingleton
	kindPartitioned
	kindScheduled
	kindLimited
)

// String returns the kind as Status reports it.
func (k kind) String() string {
	switch k {
	case kindClusterSingleton:
		return "cluster-singleton"
	case kindGlobalSingleton:
		return "global-singleton"
	case kindPartitioned:
		return "partitioned"
	case kindScheduled:
		return "scheduled"
	case kindLimited:
		return "limited"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Worker is one unit of work a Host runs, built by one of this package's
// constructors (the set is closed). A Worker holds no state of its own, so
// one value may be given to several hosts.
type Worker interface {
	// Name is the worker's name: unique per kind within a host, and the
	// name of its election, pool or semaphore.
	Name() string

	kind() kind
	// run runs the worker on h until ctx is cancelled, on a term loop of
	// package coordination; it returns early only when the coordinator
	// stopped, and leaves nothing running.
	run(ctx context.Context, h *Host) error
	// bind records in st what the worker runs on; NewHost calls it once.
	bind(h *Host, st *workerState) error
}

// validator is implemented by workers with checks of their own; errors
// wrap coordination.ErrInvalidConfig and name the worker.
type validator interface {
	validate() error
}

// ClusterSingleton returns a worker that runs fn on one process per
// cluster at a time: the holder of the lease "cluster/<cluster>/<name>",
// on coordination.Election.Run's term loop. A function that returns an
// error or panics while its term is valid is called again after
// Config.RestartBackoff; one that returns nil has finished its work for
// the term: the lease is released and the worker campaigns again.
func ClusterSingleton(name string, fn coordination.LeaderFunc) Worker {
	return &singleton{k: kindClusterSingleton, name: name, fn: fn}
}

// GlobalSingleton is ClusterSingleton across every cluster that shares
// the database: lease "global/<name>".
func GlobalSingleton(name string, fn coordination.LeaderFunc) Worker {
	return &singleton{k: kindGlobalSingleton, name: name, fn: fn}
}

// singleton is a cluster or global singleton worker.
type singleton struct {
	k    kind
	name string
	fn   coordination.LeaderFunc
}

func (s *singleton) Name() string { return s.name }
func (s *singleton) kind() kind   { return s.k }

func (s *singleton) validate() error {
	if s.fn == nil {
		return fmt.Errorf("%w: %s worker %q has a nil function", coordination.ErrInvalidConfig, s.k, s.name)
	}
	return nil
}

func (s *singleton) scope() coordination.Scope {
	if s.k == kindGlobalSingleton {
		return coordination.GlobalScope
	}
	return coordination.ClusterScope
}

func (s *singleton) bind(h *Host, st *workerState) error {
	return bindElection(h, st, s.scope(), s.name)
}

// bindElection gives st the election of name in scope, filed by its key.
func bindElection(h *Host, st *workerState, scope coordination.Scope, name string) error {
	e, err := h.coord.Election(scope, name)
	if err != nil {
		return err
	}
	if other, ok := h.byLease[e.Key()]; ok {
		// Say, a global singleton "schedule/<name>" and a scheduled worker.
		return fmt.Errorf("%w: its lease %q is that of %s worker %q; rename one of them",
			coordination.ErrInvalidConfig, e.Key(), other.w.kind(), other.w.Name())
	}
	st.election = e
	h.byLease[e.Key()] = st
	return nil
}

// run leads whenever elected until ctx is cancelled, on the election's
// term loop.
func (s *singleton) run(ctx context.Context, h *Host) error {
	st := h.stateOf(s)
	return st.election.Run(ctx, s.fn, termOptions(h, st, s.name, st.election.Key()))
}

// termOptions are the run options of a singleton, limited or scheduled
// worker: the host's backoff, and its logs, events and status at the start
// and end of each term. key names what it campaigns for.
func termOptions(h *Host, st *workerState, name, key string) *coordination.RunOptions[*coordination.Lease] {
	return &coordination.RunOptions[*coordination.Lease]{
		Backoff:    h.cfg.RestartBackoff,
		MaxBackoff: h.cfg.MaxRestartBackoff,
		// Code outside the host may campaign for the same election here.
		RetryBusy: true,
		OnTermStart: func(l *coordination.Lease) {
			st.setTerm(l)
			st.log.Info("started leading", zap.String("lease", l.Key()), zap.Int64("epoch", l.Epoch()))
			h.emit(Event{Kind: EventStartedLeading, Worker: name, Key: l.Key(), Epoch: l.Epoch()})
		},
		OnTermEnd: func(l *coordination.Lease, cause error) {
			log := st.log.With(zap.String("lease", l.Key()), zap.Int64("epoch", l.Epoch()))
			if errors.Is(cause, coordination.ErrReleased) {
				log.Info("worker function finished its work for this term; the lease is released",
					zap.Duration("campaign_in", h.cfg.RestartBackoff))
			}
			st.setTerm(nil)
			log.Info("stopped leading", zap.NamedError("cause", cause))
			h.emit(Event{Kind: EventStoppedLeading, Worker: name, Key: l.Key(), Epoch: l.Epoch(), Err: cause})
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
