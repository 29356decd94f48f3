package coordination

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// Releases are batched. Each Lease.Release queues its term; the first
// caller to find no batch in flight sends every queued term at once, in
// statements of up to a few hundred terms, while the callers that queued
// meanwhile wait for its result. So a shutdown, a pool leave or the loss of
// a session, which end many terms together, cost a bounded number of
// statements, and never more connections than the store allows.

// shutdownBatchWait is how long the sender of a batch waits for more
// releases once shutdown has begun.
const shutdownBatchWait = 5 * time.Millisecond

// releaseReq is one term waiting to be released.
type releaseReq struct {
	session string
	term    store.Term
	done    chan error // buffered 1
}

// releaser owns the queue of releases waiting for a statement, and
// batches them: at most one batch is in flight at a time.
type releaser struct {
	store   leaseOps
	closing <-chan struct{}
	terms   *termSet // whose terms still to queue a release it waits for, at shutdown

	// send is held by the one caller that sends the queued releases.
	send sync.Mutex

	mu    sync.Mutex
	queue []*releaseReq // releases waiting for a statement
}

func newReleaser(st leaseOps, closing <-chan struct{}, t *termSet) *releaser {
	return &releaser{store: st, closing: closing, terms: t}
}

// release sends req together with every other queued release, and returns
// its result. The caller has counted it in termSet.releasing.
func (r *releaser) release(ctx context.Context, req *releaseReq) error {
	r.mu.Lock()
	r.queue = append(r.queue, req)
	r.mu.Unlock()
	r.send.Lock()
	select {
	case err := <-req.done: // sent by the previous batch
		r.send.Unlock()
		return err
	default:
	}
	more := false
	select {
	case <-r.closing:
		// At shutdown every term ends at about the same moment: a short
		// wait lets the releases of the terms whose work is returning join
		// this batch. It ends as soon as no term is left to join it, so
		// the last lease (or the only one) goes out at once.
		r.awaitReleases(shutdownBatchWait)
		more = r.terms.left() > 0
	default:
	}
	r.mu.Lock()
	batch, keep := wholeChunks(r.queue, req, more)
	r.queue = keep
	r.mu.Unlock()
	r.sendReleases(ctx, batch)
	r.send.Unlock()
	return <-req.done
}

// wholeChunks splits a shutdown's batch when more terms are still to
// queue their releases (more) and the batch is not a whole number of
// store.WriteChunk terms: send holds the whole chunks, own among them,
// and keep the rest, which joins the releases still to come in the next
// batch (one of its callers sends it). On a machine too busy for every
// term to queue within shutdownBatchWait, a shutdown then still sends
// about one statement per chunk of its leases, rather than a partial
// chunk per batch. Outside shutdown, or with less than a chunk queued,
// everything is sent.
func wholeChunks(batch []*releaseReq, own *releaseReq, more bool) (send, keep []*releaseReq) {
	n := len(batch) - len(batch)%store.WriteChunk
	if !more || n == 0 || n == len(batch) {
		return batch, nil
	}
	if i := slices.Index(batch, own); i >= n {
		batch[0], batch[i] = batch[i], batch[0]
	}
	return batch[:n:n], slices.Clone(batch[n:])
}

// awaitReleases waits up to d for every lease still held to queue its
// release: each term leaving the term set signals its dropped channel.
func (r *releaser) awaitReleases(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for r.terms.left() > 0 {
		select {
		case <-r.terms.dropped:
		case <-t.C:
			return
		}
	}
}

// sendReleases releases a batch, one statement per session, which the
// store cuts into chunks, and tells every request its result.
func (r *releaser) sendReleases(ctx context.Context, batch []*releaseReq) {
	bySession := make(map[string][]*releaseReq)
	var order []string
	for _, q := range batch {
		if _, ok := bySession[q.session]; !ok {
			order = append(order, q.session)
		}
		bySession[q.session] = append(bySession[q.session], q)
	}
	for _, id := range order {
		reqs := bySession[id]
		terms := make([]store.Term, len(reqs))
		for i, q := range reqs {
			terms[i] = q.term
		}
		_, err := r.store.Release(ctx, id, terms)
		for _, q := range reqs {
			q.done <- err
		}
	}
}

// giveBack releases a term that was acquired but is not wanted, at once
// and on its own.
func (r *releaser) giveBack(log *zap.Logger, timeout time.Duration, s *session, name string, epoch int64) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := r.store.Release(ctx, s.id, []store.Term{{Name: name, Epoch: epoch}}); err != nil {
		log.Warn("could not give back a lease nobody waits for; it is free once its session expires",
			zap.String("lease", name), zap.Int64("epoch", epoch), zap.Error(err))
	}
}
