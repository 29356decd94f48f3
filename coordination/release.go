package coordination

import (
	"context"
	"time"

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

// release sends req together with every other queued release, and returns
// its result. The caller has counted it in c.releasing.
func (c *Coordinator) release(ctx context.Context, req *releaseReq) error {
	c.mu.Lock()
	c.releaseQ = append(c.releaseQ, req)
	c.mu.Unlock()
	c.relMu.Lock()
	select {
	case err := <-req.done: // sent by the previous batch
		c.relMu.Unlock()
		return err
	default:
	}
	if c.closingNow() {
		// At shutdown every term ends at about the same moment: a short
		// wait lets the releases of the terms whose work is returning join
		// this batch. It ends as soon as no term is left to join it, so
		// the last lease (or the only one) goes out at once.
		c.awaitReleases(shutdownBatchWait)
	}
	c.mu.Lock()
	batch := c.releaseQ
	c.releaseQ = nil
	c.mu.Unlock()
	c.sendReleases(ctx, batch)
	c.relMu.Unlock()
	return <-req.done
}

// awaitReleases waits up to d for every lease still held to queue its
// release: each term leaving c.held signals heldDropped.
func (c *Coordinator) awaitReleases(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		c.mu.Lock()
		left := len(c.held)
		c.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-c.heldDropped:
		case <-t.C:
			return
		}
	}
}

// sendReleases releases a batch, one statement per session and chunk, and
// tells every request its result.
func (c *Coordinator) sendReleases(ctx context.Context, batch []*releaseReq) {
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
		_, err := c.store.Release(ctx, id, terms)
		for _, r := range reqs {
			r.done <- err
		}
	}
}
