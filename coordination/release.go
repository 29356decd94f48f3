package coordination

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// Releases are batched: while no batch is in flight, the loop sends every
// queued release at once, one statement per session and chunk of terms.

// shutdownBatchWait is how long a batch waits for more releases once
// shutdown has begun.
const shutdownBatchWait = 5 * time.Millisecond

// releaseReq is one term to release. done receives the result; a nil done
// is a give-back nobody waits for, whose failure is logged.
type releaseReq struct {
	session string
	term    store.Term
	held    bool       // the term was held (not a give-back): its release is reported
	done    chan error // buffered 1
}

// releaseQueue is the loop's queue of releases.
type releaseQueue struct {
	queue   []*releaseReq
	sending int   // releases of the batch in flight
	flush   alarm // at shutdown: the batch waits for more until it fires
}

// pending counts the releases queued or being sent.
func (q *releaseQueue) pending() int { return len(q.queue) + q.sending }

// fail answers every queued release with err.
func (q *releaseQueue) fail(t *termSet, err error) {
	for _, r := range q.queue {
		if r.done != nil {
			r.done <- t.released(r, err)
		}
	}
	q.queue = nil
}

// releaseTicket is what Lease.Release waits on.
type releaseTicket struct {
	done chan error // nil when nothing is sent: the database showed the term over
}

// release ends the term of l, the lease of name, and queues its release.
// It reports false when l was released already.
func (st *termState) release(name string, l *Lease) (releaseTicket, bool) {
	tm := st.leases[name]
	if tm == nil || tm.lease != l {
		return releaseTicket{}, false
	}
	delete(st.leases, name)
	if _, over := tm.sess.over(); over {
		st.lose(tm, nil, 0) // the holder saw its session end before the loop did
	}
	var r releaseTicket
	held := tm.held
	if held {
		tm.span.SetAttributes(attribute.String(attrTermEnd, termReleased))
	}
	st.drop(tm)
	tm.cancel(ErrReleased)
	if tm.election != nil {
		st.idle(tm.election)
	}
	if !tm.confirmedLost {
		r.done = make(chan error, 1)
		st.releases.queue = append(st.releases.queue, &releaseReq{session: tm.sess.id, term: store.Term{Name: tm.name, Epoch: tm.epoch},
			held: held, done: r.done})
	}
	st.settle()
	return r, true
}

// giveBackTerm releases a term that was acquired but is not wanted.
func (st *termState) giveBackTerm(s *session, name string, epoch int64) {
	st.queueRelease(&releaseReq{session: s.id, term: store.Term{Name: name, Epoch: epoch}})
}

func (st *termState) queueRelease(r *releaseReq) {
	st.releases.queue = append(st.releases.queue, r)
	st.sendReleases(false)
}

// sendReleases sends the queued releases unless a batch is in flight. At
// shutdown, while terms are still to queue theirs, it waits for them until
// the flush alarm (force), and then sends only whole chunks.
func (st *termState) sendReleases(force bool) {
	q := &st.releases
	if q.sending > 0 || len(q.queue) == 0 {
		return
	}
	more := st.closing && len(st.held) > 0
	if more && !force {
		if !q.flush.armed() {
			q.flush.arm(shutdownBatchWait)
		}
		return
	}
	q.flush.disarm()
	n := wholeChunks(len(q.queue), more)
	batch := q.queue[:n:n]
	q.queue = append([]*releaseReq(nil), q.queue[n:]...)
	q.sending = len(batch)
	t := st.t
	st.spawn(func() {
		t.sendBatch(batch)
		t.call(func(st *termState) {
			st.releases.sending = 0
			st.sendReleases(false)
			st.checkDrained()
		})
	})
}

// wholeChunks returns how many of queued releases a batch sends: all of
// them, or only the whole chunks while more terms are still to queue
// theirs.
func wholeChunks(queued int, more bool) int {
	if n := queued - queued%store.WriteChunk; more && n > 0 {
		return n
	}
	return queued
}

// sendBatch releases a batch, one statement per session (which the store
// cuts into chunks), and answers every request.
func (t *termSet) sendBatch(batch []*releaseReq) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.ShutdownTimeout)
	defer cancel()
	bySession := make(map[string][]*releaseReq)
	var order []string
	for _, r := range batch {
		if _, ok := bySession[r.session]; !ok {
			order = append(order, r.session)
		}
		bySession[r.session] = append(bySession[r.session], r)
	}
	for _, id := range order {
		reqs := bySession[id]
		terms := make([]store.Term, len(reqs))
		for i, r := range reqs {
			terms[i] = r.term
		}
		sctx, span := t.tracer.Start(ctx, spanRelease)
		if span.IsRecording() {
			names := make([]string, len(terms))
			for i, tm := range terms {
				names[i] = tm.Name
			}
			span.SetAttributes(leasesAttr(names))
		}
		_, err := t.store.Release(sctx, id, terms)
		endSpan(span, err)
		for _, r := range reqs {
			switch {
			case r.done != nil:
				r.done <- t.released(r, err)
			case err != nil:
				t.log.Warn("could not give back a lease nobody waits for; it is free once its session expires",
					zap.String("lease", r.term.Name), zap.Int64("epoch", r.term.Epoch), zap.Error(err))
			}
		}
	}
}

// released reports the release of r that ended with err, before the
// release counts as done, so that the report precedes the end of Run's
// event stream, and returns the error Lease.Release returns.
func (t *termSet) released(r *releaseReq, err error) error {
	log := t.log.With(zap.String("lease", r.term.Name), zap.Int64("epoch", r.term.Epoch))
	if err != nil {
		err = fmt.Errorf("coordination: release lease %q epoch %d (it is free once its session expires): %w", r.term.Name, r.term.Epoch, err)
		log.Warn("release failed", zap.Error(err))
		t.events.emit(Event{Kind: EventError, Key: r.term.Name, Epoch: r.term.Epoch, Err: err})
		return err
	}
	if r.held {
		t.metrics.released()
		log.Log(grantLevel(r.term.Name), "released lease")
		t.events.emit(Event{Kind: EventReleased, Key: r.term.Name, Holder: t.holder, Epoch: r.term.Epoch})
	}
	return nil
}

// giveBackNow releases terms at once, outside the loop, once it has
// stopped.
func (t *termSet) giveBackNow(s *session, terms []store.Term) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.ShutdownTimeout)
	defer cancel()
	if _, err := t.store.Release(ctx, s.id, terms); err != nil {
		t.log.Warn("could not give back leases taken after shutdown; they are free once the session expires",
			zap.Int("leases", len(terms)), zap.Error(err))
	}
}

// alarm is a timer the loop selects on: C is nil while it is not armed.
type alarm struct {
	t  *time.Timer
	on bool
}

func (a *alarm) arm(d time.Duration) {
	if a.t == nil {
		a.t = time.NewTimer(d)
	} else {
		a.t.Reset(d)
	}
	a.on = true
}

func (a *alarm) disarm() {
	if a.t != nil {
		a.t.Stop()
	}
	a.on = false
}

func (a *alarm) armed() bool { return a.on }

// C is the channel to select on: nil, which never fires, while disarmed.
func (a *alarm) C() <-chan time.Time {
	if !a.on {
		return nil
	}
	return a.t.C
}
