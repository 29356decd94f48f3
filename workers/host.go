package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/broadcast"
	"github.com/leasehold/leasehold/internal/hostlink"
	"github.com/leasehold/leasehold/internal/kitlink"
	"github.com/leasehold/leasehold/internal/testlink"
)

type runState int

const (
	stateIdle runState = iota
	stateRunning
	stateStopped
)

// Host runs workers in one process on top of one coordination.Coordinator.
// Create it with NewHost, start it with Run. It is safe for concurrent use.
type Host struct {
	cfg    Config
	coord  *coordination.Coordinator
	log    *zap.Logger
	events broadcast.Broadcaster[Event]
	states []*workerState // in the order given to NewHost
	byKey  map[workerKey]*workerState
	// byLease and byPool find the worker a coordinator event concerns:
	// by the election's lease name, by the pool's key.
	byLease, byPool map[string]*workerState

	mu    sync.Mutex
	state runState
}

type workerKey struct {
	kind Kind
	name string
}

// workerState is the host's record of one worker: its logger, whether its
// goroutine still runs, and what Status reports for it. Worker values hold
// no state of their own, so one value can serve several hosts.
type workerState struct {
	w    Worker
	log  *zap.Logger
	done chan struct{} // closed when the worker's goroutine has returned

	election  *coordination.Election  // a singleton's election
	semaphore *coordination.Semaphore // a limited worker's semaphore
	coordPool *coordination.Pool      // a partitioned worker's pool

	mu   sync.Mutex
	term *coordination.Lease // the term the worker runs under, until released
	pool *PoolStatus         // the partitioned worker's current assignment
	ref  *coordination.Pool  // the partitioned worker's pool, once it runs
	// parts are the partitions a sticky worker works on, by partition;
	// nil for other workers.
	parts map[int]coordination.Partition
}

// setTerm records the term the worker runs under; nil when none.
func (st *workerState) setTerm(l *coordination.Lease) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.term = l
}

// setPool records a partitioned worker's current assignment for Status;
// nil when it has none.
func (st *workerState) setPool(p *PoolStatus) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pool = p
}

// NewHost returns a host that runs ws on db as the process identity id.
// It checks cfg and every worker and does no I/O: the database may be down
// until Run. ws must hold at least one worker. Errors name the bad field
// or worker and wrap ErrInvalidConfig or ErrInvalidWorker.
func NewHost(db *gorm.DB, id identity.Identity, cfg Config, ws ...Worker) (*Host, error) {
	cfg, states, err := checkHost(cfg, ws)
	if err != nil {
		return nil, err
	}
	coord, err := coordination.New(db, id, cfg.Coordination)
	if err != nil {
		if errors.Is(err, coordination.ErrInvalidConfig) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return nil, fmt.Errorf("workers: create coordinator: %w", err)
	}
	return newHost(coord, cfg, states)
}

// checkHost checks cfg and ws as NewHost does, and returns cfg with its
// defaults and the state of each worker, in the order given.
func checkHost(cfg Config, ws []Worker) (Config, []*workerState, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return cfg, nil, err
	}
	if len(ws) == 0 {
		return cfg, nil, fmt.Errorf("%w: no workers given (ws has 0 entries); a host runs at least one", ErrInvalidWorker)
	}
	states := make([]*workerState, 0, len(ws))
	seen := make(map[workerKey]bool, len(ws))
	for i, w := range ws {
		if err := checkWorker(i, w); err != nil {
			return cfg, nil, err
		}
		key := workerKey{kind: w.Kind(), name: w.Name()}
		if seen[key] {
			return cfg, nil, fmt.Errorf("%w: two %s workers are named %q; names must be unique per kind", ErrInvalidWorker, key.kind, key.name)
		}
		seen[key] = true
		states = append(states, &workerState{w: w, done: make(chan struct{})})
	}
	return cfg, states, nil
}

// newHost returns a host that runs the workers of states on coord, which
// was built with cfg.Coordination.
func newHost(coord *coordination.Coordinator, cfg Config, states []*workerState) (*Host, error) {
	log := coord.Config().Logger.Named("leasehold").Named("workers").With(zap.String("identity", coord.Holder()))
	h := &Host{
		cfg:     cfg,
		coord:   coord,
		log:     log,
		events:  broadcast.Broadcaster[Event]{Stamp: stampDropped},
		states:  states,
		byKey:   make(map[workerKey]*workerState, len(states)),
		byLease: make(map[string]*workerState),
		byPool:  make(map[string]*workerState),
	}
	for _, st := range states {
		h.byKey[workerKey{kind: st.w.Kind(), name: st.w.Name()}] = st
		st.log = log.With(zap.String("worker", st.w.Name()), zap.Stringer("kind", st.w.Kind()))
		if err := st.w.bind(h, st); err != nil {
			return nil, fmt.Errorf("workers: %s worker %q: %w", st.w.Kind(), st.w.Name(), err)
		}
	}
	hostlink.Tap(coord, h.relay)
	return h, nil
}

// The seam of package leaseholdtest (through internal/kitlink): a host on
// a coordinator it built on an in-process store; and that of the tests
// that need a database (through internal/testlink).
func init() {
	kitlink.NewHost = func(coord, cfg, ws any) (any, error) {
		c, states, err := checkHost(cfg.(Config), ws.([]Worker))
		if err != nil {
			return nil, err
		}
		return newHost(coord.(*coordination.Coordinator), c, states)
	}
	testlink.Workers = func(h any) []testlink.Worker {
		var ws []testlink.Worker
		for _, st := range h.(*Host).states {
			ws = append(ws, testlink.Worker{Name: st.w.Name(), Done: st.done})
		}
		return ws
	}
	testlink.WorkerPoolKey = func(h, w any) string { return h.(*Host).stateOf(w.(Worker)).coordPool.Key() }
	testlink.EncodeSchedule = func(s any) string { return s.(ScheduleState).encode() }
}

// checkWorker checks the i-th worker given to NewHost.
func checkWorker(i int, w Worker) error {
	if w == nil {
		return fmt.Errorf("%w: worker %d is nil", ErrInvalidWorker, i)
	}
	switch w.Kind() {
	case KindClusterSingleton, KindGlobalSingleton, KindPartitioned, KindScheduled, KindLimited:
	default:
		return fmt.Errorf("%w: worker %q has unknown kind %v", ErrInvalidWorker, w.Name(), w.Kind())
	}
	if err := coordination.ValidateName(w.Name()); err != nil {
		return fmt.Errorf("%w: %s worker %q: %w", ErrInvalidWorker, w.Kind(), w.Name(), err)
	}
	if v, ok := w.(validator); ok {
		return v.validate()
	}
	return nil
}

// Coordinator returns the host's coordinator, for queries (Leases,
// IsLeader through Election, CheckFence). Its events are on the host's
// Subscribe too, tagged with the worker. Host.Run runs it: do not call
// its Run.
func (h *Host) Coordinator() *coordination.Coordinator { return h.coord }

// Run runs the coordinator (which migrates the schema unless disabled) and
// every worker until ctx is cancelled. It blocks, so it composes with
// errgroup.
//
// A worker never stops the host: errors and panics in worker functions are
// logged, reported as EventWorkerError and followed by a restart.
//
// On cancellation every worker's context ends, the functions return,
// each lease is released after its function returned, and then the
// coordinator stops. Run then returns nil. A function still running
// ShutdownTimeout (of Config.Coordination) after cancellation is logged as
// an error and reported as EventShutdownOverrun; Run returns without it,
// with an error wrapping ErrShutdownOverrun that names the workers. Its
// goroutine is left running and its lease is not released; the lease
// expires after TTL. Run also returns an error when the coordinator fails
// (coordination.ErrSchemaMissing with DisableAutoMigrate), or
// ErrAlreadyRunning when called a second time.
func (h *Host) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.state != stateIdle {
		h.mu.Unlock()
		return ErrAlreadyRunning
	}
	h.state = stateRunning
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.state = stateStopped
		h.mu.Unlock()
		h.events.Close()
	}()

	coordDone := make(chan error, 1)
	go func() { coordDone <- h.coord.Run(ctx) }()
	wctx, cancelWorkers := context.WithCancelCause(ctx)
	defer cancelWorkers(nil)
	for _, st := range h.states {
		go h.supervise(wctx, st)
	}
	h.log.Info("host running", zap.Int("workers", len(h.states)))

	var coordErr error
	coordRunning := true
	select {
	case <-ctx.Done():
	case coordErr = <-coordDone:
		// Before ctx ended, only for a schema it must not fix.
		coordRunning = false
		cancelWorkers(coordErr)
	}
	timeout := h.coord.Config().ShutdownTimeout
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if coordRunning {
		// The coordinator drains: it returns once every lease has been
		// released after its work returned, or at ShutdownTimeout.
		coordErr = <-coordDone
	}
	if coordErr != nil {
		coordErr = fmt.Errorf("workers: coordinator stopped: %w", coordErr)
		h.log.Error("coordinator failed; workers stopped", zap.Error(coordErr))
	}
	var stuck []string
	expired := false
	for _, st := range h.states {
		if !expired {
			select {
			case <-st.done:
				continue
			case <-deadline.C:
				expired = true
			}
		}
		select {
		case <-st.done:
		default:
			h.reportOverrun(st, timeout)
			stuck = append(stuck, fmt.Sprintf("%s %q", st.w.Kind(), st.w.Name()))
		}
	}
	var overrun error
	if len(stuck) > 0 {
		overrun = fmt.Errorf("%w (%v): %s", ErrShutdownOverrun, timeout, strings.Join(stuck, ", "))
	}
	h.log.Info("host stopped")
	return errors.Join(coordErr, overrun)
}

// reportOverrun reports a worker whose goroutine was still running at the
// shutdown deadline.
func (h *Host) reportOverrun(st *workerState, timeout time.Duration) {
	st.mu.Lock()
	term := st.term
	st.mu.Unlock()
	ev := Event{Kind: EventShutdownOverrun, Worker: st.w.Name()}
	fields := []zap.Field{zap.Duration("shutdown_timeout", timeout)}
	detail := "its goroutine is left running"
	if term != nil {
		ev.Lease, ev.Epoch = term.Key(), term.Epoch()
		fields = append(fields, zap.String("lease", term.Key()), zap.Int64("epoch", term.Epoch()))
		detail += fmt.Sprintf(", and lease %q epoch %d is not released: it expires after TTL", term.Key(), term.Epoch())
	}
	ev.Err = fmt.Errorf("%w: %s worker %q ignored its cancelled context for %v; %s",
		ErrShutdownOverrun, st.w.Kind(), st.w.Name(), timeout, detail)
	st.log.Error("worker function still running at the shutdown timeout", append(fields, zap.Error(ev.Err))...)
	h.emit(ev)
}

// supervise runs one worker and waits for it to return, which it does
// when ctx is cancelled or the coordinator stopped. It restarts nothing:
// the worker's term loop (Election.Run, Pool.Run of package coordination)
// retries failed work with backoff, and recovers its panics.
func (h *Host) supervise(ctx context.Context, st *workerState) {
	defer close(st.done)
	err := st.w.run(ctx, h)
	switch {
	case ctx.Err() != nil:
		if err != nil {
			st.log.Warn("worker returned an error while stopping", zap.Error(err))
		}
	case errors.Is(err, coordination.ErrClosed):
		// The coordinator stopped: Run cancels ctx and reports why.
		<-ctx.Done()
	default:
		// Not expected: the term loops return early only when the
		// coordinator stopped. Said loudly, and the worker stays down.
		if err == nil {
			err = errors.New("worker returned before the host stopped")
		}
		h.reportError(st, "", 0, err, 0)
		<-ctx.Done()
	}
}

// stateOf returns the host's record of w. It panics for a worker the host
// was not given, a bug in this package.
func (h *Host) stateOf(w Worker) *workerState {
	st, ok := h.byKey[workerKey{kind: w.Kind(), name: w.Name()}]
	if !ok {
		panic(fmt.Sprintf("workers: %s worker %q is not registered with this host", w.Kind(), w.Name()))
	}
	return st
}

// reportError logs a failure of a worker loudly, with the stack for a
// panic, and emits EventWorkerError. lease and epoch name the term, if
// any; restartIn is the wait before the next attempt, if any.
func (h *Host) reportError(st *workerState, lease string, epoch int64, err error, restartIn time.Duration) {
	fields := []zap.Field{zap.Error(err)}
	if lease != "" {
		fields = append(fields, zap.String("lease", lease))
	}
	if epoch != 0 {
		fields = append(fields, zap.Int64("epoch", epoch))
	}
	if restartIn > 0 {
		fields = append(fields, zap.Duration("restart_in", restartIn))
	}
	msg := "worker failed"
	var pe *PanicError
	if errors.As(err, &pe) {
		msg = "worker panicked; recovered"
		fields = append(fields, zap.String("stack", string(pe.Stack)))
	}
	st.log.Error(msg, fields...)
	h.emit(Event{Kind: EventWorkerError, Worker: st.w.Name(), Lease: lease, Epoch: epoch, Err: err})
}
