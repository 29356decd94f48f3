package workers

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/coordination"
)

// Limited returns a worker that runs fn in at most limit processes at
// once, across every cluster that shares the database: each run holds
// one slot of the semaphore name (coordination.Semaphore, GlobalScope),
// and fn gets that slot's lease, with its own fencing epoch. Every
// process must give the worker the same limit, from 1 to
// coordination.MaxLimit.
//
// fn runs on the term loop the singletons run on: the restarts, the
// backoff, the panic policy and the release after fn returned are theirs
// (see SingletonFunc). A process runs fn at most once at a time.
func Limited(name string, limit int, fn SingletonFunc) Worker {
	return &limited{name: name, limit: limit, fn: fn}
}

// limited is a worker of Limited. It holds no state of its own, so one
// value may be given to several hosts.
type limited struct {
	name  string
	limit int
	fn    SingletonFunc
}

func (w *limited) Name() string { return w.name }
func (w *limited) Kind() Kind   { return KindLimited }

func (w *limited) validate() error {
	if w.fn == nil {
		return fmt.Errorf("%w: %s worker %q has a nil function", ErrInvalidWorker, KindLimited, w.name)
	}
	if w.limit < 1 || w.limit > coordination.MaxLimit {
		return fmt.Errorf("%w: %s worker %q: limit %d is outside 1 to %d", ErrInvalidWorker, KindLimited, w.name, w.limit, coordination.MaxLimit)
	}
	return nil
}

func (w *limited) bind(h *Host, st *workerState) error {
	s, err := h.coord.Semaphore(coordination.GlobalScope, w.name, w.limit)
	if err != nil {
		return err
	}
	st.semaphore = s
	return nil
}

// run waits for a slot, runs fn while it holds it, and waits again, until
// ctx is cancelled, on the semaphore's term loop (Semaphore.Run).
func (w *limited) run(ctx context.Context, h *Host) error {
	st := h.stateOf(w)
	return st.semaphore.Run(ctx, coordination.LeaderFunc(w.fn), termOptions(h, st, w.name, st.semaphore.Key()))
}
