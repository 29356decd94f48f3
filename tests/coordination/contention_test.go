package coordination_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// seenTerm is one leader term as the leader itself saw it.
type seenTerm struct {
	holder     string
	epoch      int64
	start, end time.Time // this process's monotonic clock
}

// checkTerms asserts that terms never overlap and epochs strictly grow in
// the order the terms started.
func checkTerms(t testing.TB, terms []seenTerm) {
	t.Helper()
	sort.Slice(terms, func(i, j int) bool { return terms[i].start.Before(terms[j].start) })
	for i := 1; i < len(terms); i++ {
		prev, cur := terms[i-1], terms[i]
		if cur.epoch <= prev.epoch {
			t.Fatalf("epoch did not increase: term %d %s@%d started after %s@%d", i, cur.holder, cur.epoch, prev.holder, prev.epoch)
		}
		if cur.start.Before(prev.end) {
			t.Fatalf("two leaders at once: %s@%d started %v before %s@%d ended",
				cur.holder, cur.epoch, prev.end.Sub(cur.start), prev.holder, prev.epoch)
		}
	}
}

// heavyCases lets one target at a time run caseContention: its twenty
// processes are the conformance suite's heaviest load on the CPU, and
// while two or three targets ran it at once on a two-core machine the
// other targets' cases, which hold short trust windows, saw their
// statements time out for 20 s and more.
var heavyCases = make(chan struct{}, 1)

// takeHeavy waits for heavyCases and returns its release.
func takeHeavy(t *testing.T) func() {
	t.Helper()
	select {
	case heavyCases <- struct{}{}:
		return func() { <-heavyCases }
	case <-time.After(20 * wait):
		t.Fatalf("another target's contention case did not end within %v", 20*wait)
		return nil
	}
}

// caseContention runs 20 contenders for one name over repeated terms.
// Most terms end by release; every fifth ends with the leader cut off from
// the database, so the next term starts only after expiry.
func caseContention(t *testing.T, b *bundle) {
	const contenders, wantTerms = 20, 25
	// Registered first, so released last: after the processes' own
	// cleanups have stopped them.
	t.Cleanup(takeHeavy(t))
	cfg := b.fastConfig()
	var (
		mu    sync.Mutex
		terms []seenTerm
		done  = make(chan struct{})
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	db := rawStore(t, b.db)
	for i := range contenders {
		r, fs := startFaulty(t, b.db, fmt.Sprintf("node-%02d", i), cfg)
		e := election(t, r.Coordinator, coordination.GlobalScope, "contended")
		wg.Go(func() {
			_ = e.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
				tm := seenTerm{holder: r.Holder(), epoch: l.Epoch(), start: time.Now()}
				// The database agrees this process holds this term, as
				// long as it trusts it: a term still valid after the read
				// returned was valid when the database answered. (Under
				// load the read can outlast the term; then there is
				// nothing to compare, nor when the read fails.)
				rows, err := db.Get(context.Background(), []string{l.Key()})
				if err != nil || len(rows) != 1 {
					t.Logf("read %s: %d rows, %v", l.Key(), len(rows), err)
				} else if got := rows[0]; l.Valid() && (got.Holder != r.Holder() || got.Epoch != l.Epoch() || !got.Live()) {
					t.Errorf("leader %s@%d, still trusting its term, but database shows %+v", r.Holder(), l.Epoch(), got)
				}
				mu.Lock()
				n := len(terms)
				mu.Unlock()
				if n%5 == 4 {
					fs.failAll.Store(true) // cut off for good: the term must end by itself
					<-ctx.Done()
				}
				// A term ends when its work returns, or earlier, when the
				// process stops trusting it: at its deadline, if that
				// passes without a renewal; Valid turns false and the
				// context is cancelled then. A cut-off term always ends
				// so; under load, so can one whose session could not be
				// renewed while the read above waited. A deadline only
				// moves while it is ahead, so one read after the work
				// returned that lies before that moment was the term's
				// end. How much later this goroutine runs is the
				// scheduler's delay, not the term's.
				tm.end = time.Now()
				if d := l.TrustDeadline(); d.Before(tm.end) {
					if lag := tm.end.Sub(d); n%5 == 4 && lag > 100*time.Millisecond {
						t.Logf("LOUD: %s@%d: work saw the end of its term %v after the deadline (a busy machine)", r.Holder(), l.Epoch(), lag.Round(time.Millisecond))
					} else if n%5 != 4 {
						t.Logf("LOUD: %s@%d: the term ended at its deadline, %v before its work's read returned (a busy machine)", r.Holder(), l.Epoch(), lag.Round(time.Millisecond))
					}
					tm.end = d
				}
				mu.Lock()
				terms = append(terms, tm)
				if len(terms) == wantTerms {
					close(done)
				}
				mu.Unlock()
				return nil
			}, nil)
		})
	}
	select {
	case <-done:
	case <-time.After(4 * wait):
		mu.Lock()
		n := len(terms)
		mu.Unlock()
		t.Fatalf("only %d of %d terms within %v", n, wantTerms, 4*wait)
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	checkTerms(t, terms)
	t.Logf("%d terms by %d contenders, epochs %d..%d, no overlap", len(terms), contenders, terms[0].epoch, terms[len(terms)-1].epoch)
}
