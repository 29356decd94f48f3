package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/broadcast"
	"github.com/leasehold/leasehold/internal/version"
)

type runState int32

const (
	stateIdle runState = iota
	stateRunning
	stateStopped
)

// Host runs workers in one process on a coordination.Coordinator that the
// caller runs beside it. Create it with NewHost, start it with Run. It is
// safe for concurrent use.
type Host struct {
	cfg     Config
	coord   *coordination.Coordinator
	log     *zap.Logger
	tracer  trace.Tracer  // on the coordinator's TracerProvider
	timeout time.Duration // the coordinator's ShutdownTimeout
	events  broadcast.Broadcaster[Event]
	states  []*workerState // in the order given to NewHost
	byKey   map[workerKey]*workerState
	byLease map[string]*workerState // by the lease of its election
	state   atomic.Int32            // a runState
}

type workerKey struct {
	kind kind
	name string
}

// workerState is the host's record of one worker: its logger, whether its
// goroutine still runs, what it runs on, and what Status reports for it.
type workerState struct {
	w    Worker
	log  *zap.Logger
	done chan struct{} // closed when the worker's goroutine has returned

	election  *coordination.Election  // a singleton's or scheduled worker's election
	semaphore *coordination.Semaphore // a limited worker's semaphore
	pool      *coordination.Pool      // a partitioned worker's pool

	mu       sync.Mutex
	term     *coordination.Lease             // the term the worker runs under, until released
	assigned map[int]coordination.Assignment // a partitioned worker's assignments, by index
}

// setTerm records the term the worker runs under; nil when none.
func (st *workerState) setTerm(l *coordination.Lease) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.term = l
}

// NewHost returns a host that runs ws, at least one, on coord, which the
// caller runs beside it; it does no I/O. Errors name the bad field or
// worker and wrap coordination.ErrInvalidConfig.
func NewHost(coord *coordination.Coordinator, cfg Config, ws ...Worker) (*Host, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("%w: no workers given (ws has 0 entries); a host runs at least one", coordination.ErrInvalidConfig)
	}
	for i, w := range ws {
		if err := checkWorker(i, w); err != nil {
			return nil, err
		}
	}
	if coord == nil {
		return nil, fmt.Errorf("%w: coord is nil", coordination.ErrInvalidConfig)
	}
	c := coord.Config()
	log := c.Logger.Named("leasehold").Named("workers").With(zap.String("identity", coord.Holder()))
	tracer := c.TracerProvider.Tracer("github.com/leasehold/leasehold/workers", trace.WithInstrumentationVersion(version.Module()))
	h := &Host{cfg: cfg, coord: coord, log: log, tracer: tracer, timeout: c.ShutdownTimeout,
		events: broadcast.Broadcaster[Event]{Stamp: stampDropped},
		byKey:  make(map[workerKey]*workerState, len(ws)), byLease: make(map[string]*workerState)}
	for _, w := range ws {
		key := workerKey{kind: w.kind(), name: w.Name()}
		if h.byKey[key] != nil {
			return nil, fmt.Errorf("%w: two %s workers are named %q; names must be unique per kind", coordination.ErrInvalidConfig, key.kind, key.name)
		}
		st := &workerState{w: w, done: make(chan struct{}), log: log.With(zap.String("worker", w.Name()), zap.Stringer("kind", w.kind()))}
		h.byKey[key] = st
		h.states = append(h.states, st)
		if err := w.bind(h, st); err != nil {
			return nil, fmt.Errorf("%w: %s worker %q: %w", coordination.ErrInvalidConfig, w.kind(), w.Name(), err)
		}
	}
	return h, nil
}

// checkWorker checks the i-th worker given to NewHost.
func checkWorker(i int, w Worker) error {
	if w == nil {
		return fmt.Errorf("%w: worker %d is nil", coordination.ErrInvalidConfig, i)
	}
	if v, ok := w.(validator); ok {
		return v.validate()
	}
	return nil
}

// Run runs every worker until ctx is cancelled, once the coordinator,
// which the caller runs beside it, is ready. A worker never stops the
// host: errors and panics in worker functions are reported as
// EventWorkerError and followed by a restart.
//
// On cancellation every worker's context ends, and each lease is released
// after its function returned; Run then returns nil, or, for functions
// still running the coordinator's ShutdownTimeout later, an error wrapping
// ErrShutdownOverrun that names them (see EventShutdownOverrun). Run
// returns an error wrapping coordination.ErrClosed when called a second
// time or when the coordinator stops first.
func (h *Host) Run(ctx context.Context) error {
	if !h.state.CompareAndSwap(int32(stateIdle), int32(stateRunning)) {
		return fmt.Errorf("%w: Run was called already on this host", coordination.ErrClosed)
	}
	defer func() {
		h.state.Store(int32(stateStopped))
		h.events.Close()
	}()
	select {
	case <-h.coord.Ready():
	case <-h.coord.Done():
		if ctx.Err() != nil {
			return nil // both ended: a shutdown, not a failure
		}
		return fmt.Errorf("workers: %w before it was ready", coordination.ErrClosed)
	case <-ctx.Done():
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, st := range h.states {
		go h.supervise(wctx, st)
	}
	h.log.Info("host running", zap.Int("workers", len(h.states)))
	var stopped error
	select {
	case <-ctx.Done():
	case <-h.coord.Done():
		if ctx.Err() == nil {
			stopped = fmt.Errorf("workers: %w", coordination.ErrClosed)
		}
	}
	cancel()
	deadline := time.NewTimer(h.timeout)
	defer deadline.Stop()
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
			h.reportOverrun(st, h.timeout)
			stuck = append(stuck, fmt.Sprintf("%s %q", st.w.kind(), st.w.Name()))
		}
	}
	var overrun error
	if len(stuck) > 0 {
		overrun = fmt.Errorf("%w (%v): %s", ErrShutdownOverrun, h.timeout, strings.Join(stuck, ", "))
	}
	h.log.Info("host stopped")
	return errors.Join(stopped, overrun)
}

// reportOverrun reports a worker still running at the shutdown deadline.
func (h *Host) reportOverrun(st *workerState, timeout time.Duration) {
	st.mu.Lock()
	term := st.term
	st.mu.Unlock()
	ev := Event{Kind: EventShutdownOverrun, Worker: st.w.Name()}
	fields := []zap.Field{zap.Duration("shutdown_timeout", timeout)}
	detail := "its goroutine is left running"
	if term != nil {
		ev.Key, ev.Epoch = term.Key(), term.Epoch()
		fields = append(fields, zap.String("lease", term.Key()), zap.Int64("epoch", term.Epoch()))
		detail += fmt.Sprintf(", and lease %q epoch %d is not released: it expires after TTL", term.Key(), term.Epoch())
	}
	ev.Err = fmt.Errorf("%w: %s worker %q ignored its cancelled context for %v; %s",
		ErrShutdownOverrun, st.w.kind(), st.w.Name(), timeout, detail)
	st.log.Error("worker function still running at the shutdown timeout", append(fields, zap.Error(ev.Err))...)
	h.emit(ev)
}

// supervise runs one worker until ctx is cancelled or the coordinator
// stopped. It restarts nothing: the worker's term loop retries failed
// work with backoff and recovers its panics.
func (h *Host) supervise(ctx context.Context, st *workerState) {
	defer close(st.done)
	err := st.w.run(ctx, h)
	switch {
	case ctx.Err() != nil:
		if err != nil {
			st.log.Warn("worker returned an error while stopping", zap.Error(err))
		}
	case errors.Is(err, coordination.ErrClosed):
		// The coordinator stopped: Run cancels ctx and reports it.
		<-ctx.Done()
	default:
		// Not expected (a term loop returns early only when the
		// coordinator stopped): said loudly, and the worker stays down.
		if err == nil {
			err = errors.New("worker returned before the host stopped")
		}
		h.reportError(st, "", 0, err, 0)
		<-ctx.Done()
	}
}

// stateOf returns the host's record of w; a worker the host was not given
// is a bug in this package, and a panic.
func (h *Host) stateOf(w Worker) *workerState {
	st, ok := h.byKey[workerKey{kind: w.kind(), name: w.Name()}]
	if !ok {
		panic(fmt.Sprintf("workers: %s worker %q is not registered with this host", w.kind(), w.Name()))
	}
	return st
}

// reportError logs a failure of a worker, with the stack for a panic, and
// emits EventWorkerError. lease, epoch and restartIn are zero when none.
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
	var pe *coordination.PanicError
	if errors.As(err, &pe) {
		msg = "worker panicked; recovered"
		fields = append(fields, zap.String("stack", string(pe.Stack)))
	}
	st.log.Error(msg, fields...)
	h.emit(Event{Kind: EventWorkerError, Worker: st.w.Name(), Key: lease, Epoch: epoch, Err: err})
}
