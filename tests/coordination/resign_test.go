package coordination_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
)

// leader runs Election.Run for one election of a coordinator and reports
// each term it starts and how its work ended.
type runner struct {
	terms chan int64 // the epoch of each term whose work started
	ended chan error // the cause of each term's work context
	stop  context.CancelFunc
	done  chan struct{}
}

// runLeader runs e.Run until the test ends.
func runLeader(t testing.TB, e *coordination.Election) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ld := &runner{terms: make(chan int64, 16), ended: make(chan error, 16), stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(ld.done)
		_ = e.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
			ld.terms <- l.Epoch()
			<-ctx.Done()
			ld.ended <- context.Cause(ctx)
			return ctx.Err()
		}, nil)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ld.done:
		case <-time.After(wait):
			t.Errorf("Election.Run of %s did not return within %v", e.Key(), wait)
		}
	})
	return ld
}

func recvTerm(t testing.TB, ch <-chan int64, who string) int64 {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(wait):
		t.Fatalf("%s started no term within %v", who, wait)
	}
	return 0
}

// noTerm fails the test when ch delivers a term within d.
func noTerm(t testing.TB, ch <-chan int64, who string, d time.Duration) {
	t.Helper()
	select {
	case e := <-ch:
		t.Fatalf("%s started a term at epoch %d, want none", who, e)
	case <-time.After(d):
	}
}

// resignConfig renews and retries as often as fastConfig, but trusts a
// term for 5s, so that no term ends by itself while a case runs on a busy
// machine, and a resigning holder's hold-off (one TTL) stays well within
// wait.
func resignConfig() coordination.Config {
	cfg := fastConfig()
	cfg.TTL, cfg.Margin = 6*time.Second, time.Second
	return cfg
}

// operator returns an admin client, as a command-line tool's would be:
// no identity, nothing run. (Coordinator.Resign delegates to it; the
// case on tables never migrated calls it through a coordinator.)
func operator(t testing.TB, b *bundle) *coordination.Admin {
	t.Helper()
	a, err := coordination.NewAdmin(b.db, coordination.Config{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// caseResignHandsOver: a resign request ends the holder's term with
// ErrResigned; its work returns, the lease is released, and the follower
// takes it at the next epoch while the old holder holds off.
func caseResignHandsOver(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", resignConfig())
	bb := start(t, b.db, "node-b", resignConfig())
	ea := election(t, a.Coordinator, coordination.ClusterScope, "reports")
	la := runLeader(t, ea)
	epoch := recvTerm(t, la.terms, "A")
	lb := runLeader(t, election(t, bb.Coordinator, coordination.ClusterScope, "reports"))
	events := a.Subscribe(t.Context(), 64)

	info, err := operator(t, b).Resign(context.Background(), ea.Key(), "")
	if err != nil {
		t.Fatalf("Resign: %v", err)
	}
	if info.Holder != a.Holder() || info.Epoch != epoch || !info.Live || info.Key != ea.Key() {
		t.Fatalf("Resign returned %+v, want %s live at epoch %d", info, a.Holder(), epoch)
	}
	select {
	case cause := <-la.ended:
		if !errors.Is(cause, coordination.ErrResigned) || !endOfTerm(cause) {
			t.Fatalf("A's work ended with %v, want ErrResigned", cause)
		}
	case <-time.After(wait):
		t.Fatalf("A's work was not cancelled within %v", wait)
	}
	ev := recvEvent(t, events, kindIs(coordination.EventLost, ea.Key()))
	if !errors.Is(ev.Err, coordination.ErrResigned) || ev.Epoch != epoch {
		t.Fatalf("EventLost = %+v, want ErrResigned at epoch %d", ev, epoch)
	}
	if got := recvTerm(t, lb.terms, "B"); got != epoch+1 {
		t.Fatalf("B took the lease at epoch %d, want %d", got, epoch+1)
	}
	if r := row(t, b.db, ea.Key()); r.Holder != bb.Holder() || r.Epoch != epoch+1 || r.ResignEpoch != 0 {
		t.Fatalf("row = %+v, want B at epoch %d with no request left", r, epoch+1)
	}
	noTerm(t, la.terms, "A", 3*b.fastConfig().RetryInterval)
}

// caseResignIsFencedByEpoch: a request recorded for epoch E never ends a
// later term: neither one that a bumped notice finds with an older
// request in its row, nor one started after a release that beat the
// holder to the request.
func caseResignIsFencedByEpoch(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", resignConfig())
	renewed := renewSignal(t, r)
	e := election(t, r.Coordinator, coordination.GlobalScope, "fenced")
	l1 := mustCampaign(t, e)
	release(t, l1)
	l2 := mustCampaign(t, e)
	if l2.Epoch() != l1.Epoch()+1 {
		t.Fatalf("second term at epoch %d, want %d", l2.Epoch(), l1.Epoch()+1)
	}
	// A request for the first term, and a notice for it, reach the row
	// of the second.
	tables := rawStore(t, b.db).Tables()
	if err := b.db.Exec("UPDATE "+tables.Leases+" SET resign_epoch = ? WHERE name = ?", l1.Epoch(), e.Key()).Error; err != nil {
		t.Fatal(err)
	}
	if err := b.db.Exec("UPDATE "+tables.Sessions+" SET notice = notice + 1 WHERE id = ?", sessionOf(t, b.db, l2)).Error; err != nil {
		t.Fatal(err)
	}
	settle(t, b.db)
	for range 4 {
		recvInt(t, renewed)
	}
	if err := l2.Check(); err != nil {
		t.Fatalf("a request for epoch %d ended the term at epoch %d: %v", l1.Epoch(), l2.Epoch(), err)
	}

	// A request for the second term, which is released before its holder
	// acts on it: the next term is not affected.
	if _, err := operator(t, b).Resign(context.Background(), e.Key(), ""); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	release(t, l2)
	l3 := mustCampaign(t, e) // after the hold-off, if the holder saw the request first
	if l3.Epoch() != l2.Epoch()+1 {
		t.Fatalf("third term at epoch %d, want %d", l3.Epoch(), l2.Epoch()+1)
	}
	if got := row(t, b.db, e.Key()); got.ResignEpoch != 0 {
		t.Fatalf("the acquire left resign_epoch %d in the row, want 0", got.ResignEpoch)
	}
	for range 4 {
		recvInt(t, renewed)
	}
	if err := l3.Check(); err != nil {
		t.Fatalf("a request for epoch %d ended the term at epoch %d: %v", l2.Epoch(), l3.Epoch(), err)
	}

	// The check fails when it should: a request for the current term ends it.
	if _, err := operator(t, b).Resign(context.Background(), e.Key(), ""); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	select {
	case <-l3.Context().Done():
	case <-time.After(wait):
		t.Fatalf("a request for the current term did not end it within %v", wait)
	}
	if !errors.Is(l3.Check(), coordination.ErrResigned) {
		t.Fatalf("Check = %v, want ErrResigned", l3.Check())
	}
	release(t, l3)
}

// caseResignUnknownAndFree: requests that cannot be recorded say why and
// name the lease.
func caseResignUnknownAndFree(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", resignConfig())
	op := operator(t, b)
	ctx := context.Background()

	_, err := op.Resign(ctx, "global/nope", "")
	if !errors.Is(err, coordination.ErrNotHeld) || !strings.Contains(err.Error(), "has no lease row") ||
		!strings.Contains(err.Error(), `"global/nope"`) || !strings.Contains(err.Error(), "leasehold status") {
		t.Fatalf("Resign(unknown) = %v, want ErrNotHeld saying it has no row, naming it and suggesting leasehold status", err)
	}

	free := election(t, r.Coordinator, coordination.GlobalScope, "free")
	release(t, mustCampaign(t, free))
	_, err = op.Resign(ctx, free.Key(), "")
	if !errors.Is(err, coordination.ErrNotHeld) || !strings.Contains(err.Error(), free.Key()) {
		t.Fatalf("Resign(free) = %v, want ErrNotHeld naming %s", err, free.Key())
	}

	expired := election(t, r.Coordinator, coordination.GlobalScope, "expired")
	l := mustCampaign(t, expired)
	expireNow(t, b.db, expired.Key())
	_, err = op.Resign(ctx, expired.Key(), "")
	if !errors.Is(err, coordination.ErrNotHeld) || !strings.Contains(err.Error(), expired.Key()) {
		t.Fatalf("Resign(expired) = %v, want ErrNotHeld naming %s", err, expired.Key())
	}
	_ = l.Release(ctx)

	held := election(t, r.Coordinator, coordination.GlobalScope, "held")
	lh := mustCampaign(t, held)
	defer release(t, lh)
	for _, pref := range []string{r.Holder(), "node-a", r.Identity().Instance} {
		_, err = op.Resign(ctx, held.Key(), pref)
		if err == nil || !strings.Contains(err.Error(), "current holder") {
			t.Fatalf("Resign preferring the holder itself (%q) = %v, want it refused", pref, err)
		}
	}
	if _, err := op.Resign(ctx, held.Key(), strings.Repeat("x", 256)); !errors.Is(err, coordination.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "preferred holder") || !strings.Contains(err.Error(), "256 bytes") {
		t.Fatalf("Resign with a 256-byte preferred holder = %v, want ErrInvalidConfig naming the argument and its length", err)
	}
	if _, err := op.Resign(ctx, held.Key(), "nöde"); !errors.Is(err, coordination.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "printable ASCII") {
		t.Fatalf("Resign with a non-ASCII preferred holder = %v, want ErrInvalidConfig", err)
	}
	if got := row(t, b.db, held.Key()); got.ResignEpoch != 0 || got.PreferredHolder != "" {
		t.Fatalf("refused requests left %+v in the row", got)
	}
	if _, err := op.Resign(ctx, "pool|global/orders|member|0123", ""); err == nil || !strings.Contains(err.Error(), "pool membership") {
		t.Fatalf("Resign(pool member) = %v, want it refused", err)
	}
	if !lh.Valid() {
		t.Fatalf("a refused request ended the term")
	}

	// Tables that were never migrated: the error says how to migrate.
	cfg := resignConfig()
	cfg.Logger, cfg.TablePrefix = zaptest.NewLogger(t), "never_migrated_"
	bare, err := coordination.New(b.db, testIdentity(t, "operator"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Admin().Resign(ctx, held.Key(), ""); !errors.Is(err, coordination.ErrSchemaMissing) {
		t.Fatalf("Resign on tables never migrated = %v, want ErrSchemaMissing", err)
	}
}

// caseResignPreferredHolder: with two followers, the one a request
// prefers takes the lease, by node and then by instance id.
func caseResignPreferredHolder(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", resignConfig())
	bb := start(t, b.db, "node-b", resignConfig())
	cc := start(t, b.db, "node-c", resignConfig())
	ea := election(t, a.Coordinator, coordination.ClusterScope, "preferred")
	la := runLeader(t, ea)
	epoch := recvTerm(t, la.terms, "A")
	lb := runLeader(t, election(t, bb.Coordinator, coordination.ClusterScope, "preferred"))
	lc := runLeader(t, election(t, cc.Coordinator, coordination.ClusterScope, "preferred"))
	op := operator(t, b)

	if _, err := op.Resign(context.Background(), ea.Key(), "node-c"); err != nil {
		t.Fatalf("Resign preferring node-c: %v", err)
	}
	if got := recvTerm(t, lc.terms, "C"); got != epoch+1 {
		t.Fatalf("C took the lease at epoch %d, want %d", got, epoch+1)
	}
	if got := row(t, b.db, ea.Key()); got.Holder != cc.Holder() || got.PreferredHolder != "" {
		t.Fatalf("row = %+v, want C's with the preference cleared", got)
	}
	select {
	case e := <-lb.terms:
		t.Fatalf("B took the lease at epoch %d while C was preferred", e)
	default:
	}

	// In the acquire statement itself: while the preference lasts, only
	// the preferred process takes the free lease.
	s := rawStore(t, b.db)
	ctx := context.Background()
	const name = "global/direct"
	holder := newSession(t, s, "node-h/test/h1")
	if _, ok, err := acquireOne(ctx, s, holder, "node-h/test/h1", name); err != nil || !ok {
		t.Fatalf("acquire %s: %v, %v", name, ok, err)
	}
	got, found, notified, err := s.RequestResign(ctx, name, "node-p", func(store.Row) (time.Duration, error) { return time.Minute, nil })
	if err != nil || !found || !notified || got.Holder != "node-h/test/h1" {
		t.Fatalf("RequestResign = %+v, %v, %v, %v", got, found, notified, err)
	}
	if n, err := s.Release(ctx, holder, []store.Term{{Name: name, Epoch: got.Epoch}}); err != nil || n != 1 {
		t.Fatalf("release: %d, %v", n, err)
	}
	other := newSession(t, s, "node-q/test/q1")
	if terms, err := s.Acquire(ctx, other, "node-q/test/q1", []string{name}); err != nil || len(terms) != 0 {
		t.Fatalf("another process took a lease reserved for node-p: %v, %v", terms, err)
	}
	preferred := newSession(t, s, "node-p/test/p1")
	if terms, err := s.Acquire(ctx, preferred, "node-p/test/p1", []string{name}); err != nil || len(terms) != 1 || terms[0].Epoch != got.Epoch+1 {
		t.Fatalf("the preferred process's acquire = %v, %v; want epoch %d", terms, err, got.Epoch+1)
	}

	if _, err := op.Resign(context.Background(), ea.Key(), bb.Identity().Instance); err != nil {
		t.Fatalf("Resign preferring B's instance: %v", err)
	}
	if got := recvTerm(t, lb.terms, "B"); got != epoch+2 {
		t.Fatalf("B took the lease at epoch %d, want %d", got, epoch+2)
	}
	select {
	case e := <-la.terms:
		t.Fatalf("A took the lease at epoch %d while B was preferred", e)
	default:
	}
}
