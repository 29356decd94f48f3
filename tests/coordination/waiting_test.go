package coordination_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
)

// Cases of TestConformance about statements that wait on a row lock while
// other sessions come and go, and about member rows used more than once.

// casePruneWaitingDeletesNewTerm: a pool member prunes the member rows of
// a session expired long ago. Its DELETE waits for the row lock of the
// first (a fenced transaction holds it). Meanwhile the second row is taken
// by a session started after the DELETE began. The DELETE must not remove
// that live row.
func casePruneWaitingDeletesNewTerm(t *testing.T, b *bundle) {
	if b.target.Dialect == "sqlite" {
		t.Skip("SQLite: a writing transaction excludes every other writer")
	}
	ctx := context.Background()
	s := rawStore(t, b.db)
	if _, err := s.Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	prefix := poolMembersPrefix("global/prune")
	m1, m2 := prefix+"m1", prefix+"m2"
	sd := newSession(t, s, "holder-d")
	for _, n := range []string{m1, m2} {
		if _, ok, err := acquireOne(ctx, s, sd, "holder-d", n); err != nil || !ok {
			t.Fatalf("acquire %s: %v, %v", n, ok, err)
		}
	}
	// The session expired long before the grace.
	if err := b.db.Exec("UPDATE "+s.Tables().Sessions+" SET expires_at_us = 1 WHERE id = ?", sd).Error; err != nil {
		t.Fatal(err)
	}
	tx := fencedTx(t, b.db, s, m1)
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	pctx, pcancel := context.WithTimeout(ctx, wait)
	defer pcancel()
	go func() {
		n, err := s.PruneDead(pctx, prefix, 10*time.Second)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		t.Logf("the prune did not wait on this database: %+v", r)
		done <- r
	case <-time.After(time.Second):
	}
	qs := rawStore(t, b.db)
	sq := newSession(t, qs, "holder-q")
	qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
	qterms, qerr := qs.Acquire(qctx, sq, "holder-q", []string{m2})
	qcancel()
	t.Logf("Q's acquire of m2: %+v, %v", qterms, qerr)
	if err := tx.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(wait):
		t.Fatalf("the prune did not return within %v", wait)
	}
	t.Logf("prune: %+v", r)
	rows, err := s.Get(ctx, []string{m2})
	if err != nil {
		t.Fatal(err)
	}
	if qerr == nil && len(qterms) == 1 && len(rows) == 0 {
		t.Fatalf("Q holds %s at epoch %d under its live session, and the prune deleted the row", m2, qterms[0].Epoch)
	}
}

// caseMemberEpochAfterPrune: a process runs a pool, leaves it, and runs
// it again later, in the same coordinator. Meanwhile another member's
// publish pruned the released member row. The second membership must not
// get the token (member row and epoch) the first one had: a token of the
// first membership must not pass CheckFence.
func caseMemberEpochAfterPrune(t *testing.T, b *bundle) {
	cfg := b.fastConfig() // the prune grace is ten TTLs: 12s
	ra := start(t, b.db, "node-a", cfg)
	rb := start(t, b.db, "node-b", cfg)
	runUntilAssigned := func(r *running) (coordination.Assignment, context.CancelFunc, chan struct{}) {
		p, err := r.Pool(coordination.GlobalScope, "reuse", coordination.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan coordination.Assignment, 16)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
				got <- a
				<-ctx.Done()
				return nil
			}, nil)
		}()
		select {
		case a := <-got:
			return a, cancel, done
		case <-time.After(wait):
			cancel()
			t.Fatalf("no assignment within %v", wait)
		}
		return coordination.Assignment{}, nil, nil
	}
	a1, leave, done := runUntilAssigned(ra)
	old := membershipToken(a1)
	t.Logf("first membership of A: %s", old)
	leave()
	<-done
	// After the grace of ten TTLs, B joins: its publish prunes A's released row.
	time.Sleep(deadMemberGrace*cfg.TTL + 500*time.Millisecond)
	_, leaveB, doneB := runUntilAssigned(rb)
	defer func() { leaveB(); <-doneB }()
	a2, leave2, done2 := runUntilAssigned(ra)
	defer func() { leave2(); <-done2 }()
	t.Logf("second membership of A: %s", membershipToken(a2))
	err := b.db.Transaction(func(tx *gorm.DB) error { return ra.CheckFence(tx, old) })
	if tok := membershipToken(a2); tok == old || err == nil {
		t.Fatalf("the second membership of A runs as %s, the first ran as %s; CheckFence of the first's token = %v",
			tok, old, err)
	}
}

// caseSamePoolTwice: Pool.Run promises ErrBusy "if the pool already runs
// in this process". Two Pool values of one key (Coordinator.Pool returns a
// new one per call, e.g. a workers.Host partitioned worker and code of the
// service) must never both run work for the same index at once.
func caseSamePoolTwice(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", b.fastConfig())
	p1, err := r.Pool(coordination.GlobalScope, "twice", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := r.Pool(coordination.GlobalScope, "twice", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	type running struct {
		who string
		a   coordination.Assignment
	}
	got := make(chan running, 16)
	// p1's current assignment: the one its work runs under now.
	var mu sync.Mutex
	var p1Now *coordination.Assignment
	p1Current := func() (coordination.Assignment, bool) {
		mu.Lock()
		defer mu.Unlock()
		if p1Now == nil {
			return coordination.Assignment{}, false
		}
		return *p1Now, true
	}
	fn := func(who string) coordination.AssignmentFunc {
		return func(ctx context.Context, a coordination.Assignment) error {
			if who == "p1" {
				mu.Lock()
				p1Now = &a
				mu.Unlock()
				defer func() {
					mu.Lock()
					p1Now = nil
					mu.Unlock()
				}()
			}
			got <- running{who, a}
			<-ctx.Done()
			return nil
		}
	}
	// Both Runs return before the test does: one still logging as it
	// leaves would write to a finished test's log.
	var runs sync.WaitGroup
	defer runs.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2)
	runs.Go(func() { errs <- p1.Run(ctx, fn("p1"), nil) })
	select {
	case w := <-got:
		t.Logf("%s runs index %d of generation %d, member epoch %d", w.who, w.a.Index, w.a.Generation, w.a.Epoch)
	case <-time.After(wait):
		t.Fatalf("p1 got no assignment within %v", wait)
	}
	runs.Go(func() { errs <- p2.Run(ctx, fn("p2"), nil) })
	deadline := time.After(3 * time.Second)
	for {
		select {
		case err := <-errs:
			t.Logf("a Run returned: %v", err)
			if errors.Is(err, coordination.ErrBusy) {
				return
			}
		case w := <-got:
			a1, ok1 := p1Current()
			t.Logf("%s runs index %d of generation %d, member epoch %d (valid %v); p1 current %v: index %d gen %d epoch %d valid %v",
				w.who, w.a.Index, w.a.Generation, w.a.Epoch, w.a.Valid(), ok1, a1.Index, a1.Generation, a1.Epoch, a1.Valid())
			if w.who == "p2" && ok1 && a1.Valid() && a1.Index == w.a.Index {
				t.Fatalf("index %d runs twice at once in one process: p1 (member epoch %d, still valid) and p2 (member epoch %d)",
					w.a.Index, a1.Epoch, w.a.Epoch)
			}
		case <-deadline:
			return
		}
	}
}

// caseAcquireWaitingTakesNewerTerm: process P acquires two names in one
// batch. Its statement waits for the row lock of the first (a fenced
// transaction of the expired holder holds it). Meanwhile process Q starts
// a session and takes the second name. When the first row is freed, P's
// statement reaches the second row, whose newest version is held by Q's
// live session. P must not take it: Q holds and trusts it.
func caseAcquireWaitingTakesNewerTerm(t *testing.T, b *bundle) {
	if b.target.Dialect == "sqlite" {
		t.Skip("SQLite: a writing transaction excludes every other writer; nothing runs beside the waiting acquire")
	}
	ctx := context.Background()
	s := rawStore(t, b.db)
	if _, err := s.Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	const na, nb = "global/epq-a", "global/epq-b"
	// a: held by H, whose session then expires; b: created after, so it
	// comes after a in index and heap order.
	if epoch, ok, err := acquireOne(ctx, s, newSession(t, s, "holder-h"), "holder-h", na); err != nil || !ok || epoch != 1 {
		t.Fatalf("H acquires a = %d, %v, %v", epoch, ok, err)
	}
	if err := s.EnsureRows(ctx, []string{nb}); err != nil {
		t.Fatal(err)
	}
	expireNow(t, b.db, na)
	sp := newSession(t, s, "holder-p")

	// H's fenced transaction, still open, locks a.
	tx := fencedTx(t, b.db, s, na)

	type result struct {
		terms []store.Term
		err   error
	}
	pDone := make(chan result, 1)
	pctx, pcancel := context.WithTimeout(ctx, wait)
	defer pcancel()
	go func() {
		terms, err := s.Acquire(pctx, sp, "holder-p", []string{na, nb})
		pDone <- result{terms, err}
	}()
	// Let P's statement start and wait for a's lock.
	select {
	case r := <-pDone:
		t.Logf("P's acquire did not wait on this database: %+v, %v", r.terms, r.err)
		pDone <- r
	case <-time.After(time.Second):
	}

	// Q starts a session after P's statement began, and takes b.
	// (Q is another process: a store of its own, with its own connection
	// bound.)
	qs := rawStore(t, b.db)
	sq := newSession(t, qs, "holder-q")
	qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
	qterms, qerr := qs.Acquire(qctx, sq, "holder-q", []string{nb})
	qcancel()
	t.Logf("Q's acquire of b: %+v, %v", qterms, qerr)

	if err := tx.Rollback().Error; err != nil {
		t.Fatalf("end the fenced transaction: %v", err)
	}
	var pr result
	select {
	case pr = <-pDone:
	case <-time.After(wait):
		t.Fatalf("P's acquire did not return within %v", wait)
	}
	t.Logf("P's acquire: %+v, %v", pr.terms, pr.err)

	var pb, qb int64
	for _, tm := range pr.terms {
		if tm.Name == nb {
			pb = tm.Epoch
		}
	}
	if qerr == nil && len(qterms) == 1 {
		qb = qterms[0].Epoch
	}
	got := row(t, b.db, nb)
	if pb != 0 && qb != 0 {
		t.Fatalf("two holders of %s: Q holds epoch %d under its live session, and P's acquire took epoch %d over it; row now %+v",
			nb, qb, pb, got)
	}
}
