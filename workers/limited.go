package workers

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/coordination"
)

// Limited returns a worker that runs fn in at most limit processes at
// once, across every cluster that shares the database: fn gets the lease
// of one slot of the GlobalScope semaphore name, with its own fencing
// epoch. Every process must give the same limit. fn runs as a singleton's
// does, at most once at a time in a process.
func Limited(name string, limit int, fn coordination.LeaderFunc) Worker {
	return &limited{name: name, limit: limit, fn: fn}
}

type limited struct {
	name  string
	limit int
	fn    coordination.LeaderFunc
}

func (w *limited) Name() string { return w.name }
func (w *limited) kind() kind   { return kindLimited }

func (w *limited) validate() error {
	if w.fn == nil {
		return fmt.Errorf("%w: %s worker %q has a nil function", coordination.ErrInvalidConfig, kindLimited, w.name)
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
// ctx is cancelled, on the semaphore's term loop.
func (w *limited) run(ctx context.Context, h *Host) error {
	st := h.stateOf(w)
	return st.semaphore.Run(ctx, w.fn, termOptions(h, st, w.name, st.semaphore.Key()))
}
