package coordination

import (
	"context"
	"slices"
	"testing"

	"github.com/leasehold/leasehold/internal/memstore"
	"github.com/leasehold/leasehold/internal/store"
)

// TestShutdownBatchSendsWholeChunks: while more terms are still to queue
// their releases, a shutdown's batch goes out in whole chunks of
// store.WriteChunk terms, and the rest waits for the next batch; nothing
// is dropped or sent twice.
func TestShutdownBatchSendsWholeChunks(t *testing.T) {
	const chunk = store.WriteChunk
	reqs := func(n int) []*releaseReq {
		out := make([]*releaseReq, n)
		for i := range out {
			out[i] = &releaseReq{term: store.Term{Epoch: int64(i)}}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		queued   int
		more     bool
		wantSend int
	}{
		{"MoreToComeSendsWholeChunks", 2*chunk + 17, true, 2 * chunk},
		{"OneMoreThanAChunkSendsTheChunk", chunk + 1, true, chunk},
		{"NothingMoreToComeSendsAll", 2*chunk + 17, false, 2*chunk + 17},
		{"LessThanAChunkSendsAll", chunk - 1, true, chunk - 1},
		{"WholeChunksSendAll", 3 * chunk, true, 3 * chunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batch := reqs(tc.queued)
			all := slices.Clone(batch)
			n := wholeChunks(len(batch), tc.more)
			send, keep := batch[:n], batch[n:]
			if len(send) != tc.wantSend {
				t.Errorf("sent %d of %d queued releases, want %d", len(send), tc.queued, tc.wantSend)
			}
			got := append(slices.Clone(send), keep...)
			if len(got) != len(all) {
				t.Fatalf("sent %d and kept %d releases of %d", len(send), len(keep), len(all))
			}
			for _, q := range all {
				if !slices.Contains(got, q) {
					t.Fatalf("release of epoch %d was neither sent nor kept", q.term.Epoch)
				}
			}
		})
	}
}

// TestReleaseAtShutdownIsReported: a lease released while Run shuts down
// is reported (EventReleased) before Run's event stream ends, however the
// goroutines are scheduled.
func TestReleaseAtShutdownIsReported(t *testing.T) {
	for i := range 50 {
		c := newCoordinator(memstore.New(), testIdentity(t, "node-a"), steady(fastConfig()).withDefaults())
		ctx, cancel := context.WithCancel(context.Background())
		runErr := make(chan error, 1)
		go func() { runErr <- c.Run(ctx) }()
		events := c.Subscribe(context.Background(), 64)
		l, err := election(t, c, GlobalScope, "report").Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		<-l.Context().Done()
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		released := false
		for ev := range events {
			released = released || (ev.Kind == EventReleased && ev.Key == l.Key())
		}
		if err := <-runErr; err != nil {
			t.Fatal(err)
		}
		if !released {
			t.Fatalf("round %d: the event stream ended without EventReleased for %s", i, l.Key())
		}
	}
}
