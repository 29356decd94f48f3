package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestConformance runs the same lease cases on every database target,
// the Galera cluster and the replicated pairs (through the DSN that
// follows the primary) and PgBouncer in transaction mode
// (testdb.PgBouncerTarget) included. Subtest names are <target>/<Case>.
func TestConformance(t *testing.T) {
	targets := append(testdb.PoolerTargets(), testdb.GaleraTarget)
	runCasesOn(t, append(targets, testdb.PairTargets()...), conformanceCases)
}

var conformanceCases = []conformanceCase{
	{"AcquireRenewRelease", caseAcquireRenewRelease},
	{"EpochNeverReused", caseEpochNeverReused},
	{"ExactlyOneWinner", caseExactlyOneWinner},
	{"FailoverAfterRelease", caseFailoverAfterRelease},
	{"StaleHolderCannotRenewOrRelease", caseStaleHolder},
	{"OneStatementPerRenewTick", caseOneStatementPerRenewTick},
	{"FenceInUserTransaction", caseFence},
	{"FenceNeedsTransaction", caseFenceNeedsTransaction},
	{"FencedTransactionsKeepTerm", caseFencedTransactionsKeepTerm},
	{"RolledBackFenceExtendsNothing", caseRolledBackFenceExtendsNothing},
	{"ScopesDoNotCollide", caseScopes},
	{"LeaderAndList", caseLeaderAndList},
	{"CutOffHolderStopsBeforeTakeover", caseCutOff},
	{"TransientRenewErrorsRiddenOut", caseTransientErrors},
	{"ShutdownReleasesAfterWorkReturns", caseShutdownOrder},
	{"ShutdownTimeoutDoesNotRelease", caseShutdownOverrun},
	{"LeaderChangedEvents", caseLeaderChanged},
	{"AutoMigrateDisabled", caseAutoMigrateDisabled},
	{"CustomTablePrefix", caseTablePrefix},
	{"Contention20", caseContention},
	{"ReadReplicaNeverUsed", caseReadReplica},
	{"UserCallbacksSeeAcquire", caseUserCallbacksSeeAcquire},
	{"AbandonedAcquireTakesNoTerm", caseAbandonedAcquire},
	{"FailedAcquireGrantsNothing", caseFailedAcquireGrantsNothing},
	{"AmbiguousAcquireStartsNoTerm", caseAmbiguousAcquire},
	{"AmbiguousAcquireGivenBack", caseAmbiguousAcquireGivenBack},
	{"AmbiguousJoinGivenBack", caseAmbiguousJoinGivenBack},
	{"AcquireWaitingOnOneRowCannotTakeANewerTerm", caseAcquireWaitingTakesNewerTerm},
	{"PruneWaitingOnOneRowCannotDeleteANewTerm", casePruneWaitingDeletesNewTerm},
	{"SamePoolTwiceInOneProcess", caseSamePoolTwice},
	{"MemberTokenNeverReusedAfterPrune", caseMemberEpochAfterPrune},
	{"TryAcquireFree", caseTryAcquireFree},
	{"TryAcquireHeld", caseTryAcquireHeld},
	{"TryAcquireAfterExpiry", caseTryAcquireAfterExpiry},
	{"Observe", caseObserve},
	{"ObserveCostsNoStatementPerName", caseObserveCostsNoStatementPerName},
	{"MetricsAcquireRenewRelease", caseMetricsAcquireRenewRelease},
	{"MetricsTryAcquire", caseMetricsTryAcquire},
	{"MetricsLossAndHandoff", caseMetricsLossAndHandoff},
	{"MetricsPool", caseMetricsPool},
	{"TracesTerm", caseTracesTerm},
	{"TracesLockAndLoss", caseTracesLockAndLoss},
	{"TracesRebalance", caseTracesRebalance},
	{"ResignHandsOver", caseResignHandsOver},
	{"ResignIsFencedByEpoch", caseResignIsFencedByEpoch},
	{"ResignUnknownAndFree", caseResignUnknownAndFree},
	{"ResignPreferredHolder", caseResignPreferredHolder},
	{"StepDownHandsOver", caseStepDownHandsOver},
	{"LeaseData", caseLeaseData},
}

// renewSignal reports every successful renewal of r's renewal loop from
// now on, with the number of leases and memberships r holds then
// (watchRenewals).
func renewSignal(t testing.TB, r *running) <-chan int {
	ch := make(chan int, 64)
	renewals := watchRenewals(t, r.Coordinator)
	go func() {
		for rs := range renewals {
			if rs.err == nil {
				select {
				case ch <- rs.held:
				default:
				}
			}
		}
	}()
	return ch
}

func recvInt(t testing.TB, ch <-chan int) int {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("no signal within %v", wait)
	}
	return 0
}

func caseAcquireRenewRelease(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", b.fastConfig())
	renewed := renewSignal(t, r)
	e := election(t, r.Coordinator, coordination.ClusterScope, "jobs")
	l := mustCampaign(t, e)
	if l.Epoch() != 1 || l.Key() != "cluster/test/jobs" {
		t.Fatalf("lease = %s, want cluster/test/jobs@1", l.Token())
	}
	if !l.Valid() || !e.IsLeader() || l.Check() != nil {
		t.Fatalf("fresh lease not valid: %v", l.Check())
	}
	// Several renewals span more than the TTL: the term must survive them.
	deadline0 := l.TrustDeadline()
	for range 8 {
		recvInt(t, renewed)
	}
	if !l.Valid() || !l.TrustDeadline().After(deadline0) {
		t.Fatalf("renewals did not keep the term alive (valid=%v)", l.Valid())
	}
	if got := row(t, b.db, l.Key()); got.Holder != r.Holder() || got.Epoch != 1 || !got.Live() {
		t.Fatalf("row = %+v, want live, held by %s at epoch 1", got, r.Holder())
	}
	release(t, l)
	release(t, l) // idempotent
	if l.Valid() || e.IsLeader() {
		t.Fatalf("lease still valid after Release")
	}
	if !errors.Is(context.Cause(l.Context()), coordination.ErrReleased) || !errors.Is(l.Check(), coordination.ErrReleased) {
		t.Fatalf("cause = %v, want ErrReleased", context.Cause(l.Context()))
	}
	info, err := e.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Holder != "" || info.Live || info.Epoch != 1 {
		t.Fatalf("after release: %+v, want free at epoch 1", info)
	}
}

func caseEpochNeverReused(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", b.fastConfig())
	c := start(t, b.db, "node-c", b.fastConfig())
	ea := election(t, a.Coordinator, coordination.GlobalScope, "epochs")
	ec := election(t, c.Coordinator, coordination.GlobalScope, "epochs")
	var epochs []int64
	l := mustCampaign(t, ea)
	epochs = append(epochs, l.Epoch())
	release(t, l)
	l = mustCampaign(t, ea) // same process again: a new term, a new epoch
	epochs = append(epochs, l.Epoch())
	release(t, l)
	l = mustCampaign(t, ec)
	epochs = append(epochs, l.Epoch())
	// Taken over after expiry, without a release.
	expireNow(t, b.db, l.Key())
	l2 := mustCampaign(t, ea)
	epochs = append(epochs, l2.Epoch())
	select {
	case <-l.Context().Done():
	case <-time.After(wait):
		t.Fatalf("the expired term was not ended")
	}
	if !errors.Is(context.Cause(l.Context()), coordination.ErrLeaseLost) {
		t.Fatalf("cause = %v, want ErrLeaseLost", context.Cause(l.Context()))
	}
	release(t, l)
	release(t, l2)
	for i := 1; i < len(epochs); i++ {
		if epochs[i] != epochs[i-1]+1 {
			t.Fatalf("epochs = %v, want consecutive increasing", epochs)
		}
	}
}

func caseExactlyOneWinner(t *testing.T, b *bundle) {
	const n = 5
	type result struct {
		i int
		l *coordination.Lease
	}
	results := make(chan result, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs []*running
	// A trust window no busy machine exhausts (steady): a winner whose
	// lease lapsed under load would stop renewing, and another process
	// would win after it, legitimately.
	cfg := steady(b.fastConfig())
	for i := range n {
		r := start(t, b.db, "node-"+string(rune('a'+i)), cfg)
		runs = append(runs, r)
		e := election(t, r.Coordinator, coordination.ClusterScope, "singleton")
		go func() {
			l, err := e.Campaign(ctx)
			if err == nil {
				results <- result{i, l}
			}
		}()
	}
	var winner result
	select {
	case winner = <-results:
	case <-time.After(wait):
		t.Fatalf("nobody won within %v", wait)
	}
	// Let the winner renew a few times while the others keep trying.
	renewed := renewSignal(t, runs[winner.i])
	for range 5 {
		recvInt(t, renewed)
	}
	select {
	case other := <-results:
		t.Fatalf("two winners: %s and %s", winner.l.Token(), other.l.Token())
	default:
	}
	if got := row(t, b.db, winner.l.Key()); got.Holder != runs[winner.i].Holder() {
		t.Fatalf("database holder %q, winner %q", got.Holder, runs[winner.i].Holder())
	}
	cancel()
	release(t, winner.l)
}

func caseFailoverAfterRelease(t *testing.T, b *bundle) {
	// Quick retries, but a trust window and a round bound no busy machine
	// exhausts: an acquire that runs out of its round's time may have
	// committed, so its term is given back and taken again at the next
	// epoch, and the follower's epoch is what this case checks.
	cfg := steady(b.fastConfig())
	cfg.RenewInterval = 2 * time.Second
	a := start(t, b.db, "node-a", cfg)
	c := start(t, b.db, "node-c", cfg)
	l := mustCampaign(t, election(t, a.Coordinator, coordination.ClusterScope, "handoff"))
	got := make(chan *coordination.Lease, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		l2, err := election(t, c.Coordinator, coordination.ClusterScope, "handoff").Campaign(ctx)
		if err != nil {
			t.Errorf("follower Campaign: %v", err)
		}
		got <- l2
	}()
	releasedAt := time.Now()
	release(t, l)
	l2 := <-got
	if l2 == nil {
		return
	}
	if l2.Epoch() != l.Epoch()+1 {
		t.Fatalf("follower epoch %d, want %d", l2.Epoch(), l.Epoch()+1)
	}
	t.Logf("handoff after release took %v", time.Since(releasedAt))
	release(t, l2)
}

func caseStaleHolder(t *testing.T, b *bundle) {
	ctx := context.Background()
	s := rawStore(t, b.db)
	if _, err := s.Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	const name = "global/stale"
	sa, sb := newSession(t, s, "A"), newSession(t, s, "B")
	e1, ok, err := acquireOne(ctx, s, sa, "A", name)
	if err != nil || !ok || e1 != 1 {
		t.Fatalf("A acquire = %d, %v, %v", e1, ok, err)
	}
	if _, ok, err := acquireOne(ctx, s, sb, "B", name); err != nil || ok {
		t.Fatalf("B took a live lease: ok=%v err=%v", ok, err)
	}
	expireNow(t, b.db, name) // A's session expires
	e2, ok, err := acquireOne(ctx, s, sb, "B", name)
	if err != nil || !ok || e2 != 2 {
		t.Fatalf("B acquire after expiry = %d, %v, %v", e2, ok, err)
	}
	before := row(t, b.db, name)
	// A's stale session can neither come back to life nor release B's
	// newer term, nor take anything new.
	if ok, _, err := s.RenewSession(ctx, sa, time.Hour); err != nil || ok {
		t.Fatalf("stale session renewed: ok=%v err=%v, want the session reported gone", ok, err)
	}
	if n, err := s.Release(ctx, sa, []store.Term{{Name: name, Epoch: e1}}); err != nil || n != 0 {
		t.Fatalf("stale release touched %d rows (err %v)", n, err)
	}
	if terms, err := s.Acquire(ctx, sa, "A", []string{name, "global/fresh"}); err != nil || len(terms) != 0 {
		t.Fatalf("an expired session acquired %v (err %v)", terms, err)
	}
	// Even B with A's old epoch matches nothing.
	if n, err := s.Release(ctx, sb, []store.Term{{Name: name, Epoch: e1}}); err != nil || n != 0 {
		t.Fatalf("release with an old epoch touched %d rows (err %v)", n, err)
	}
	after := row(t, b.db, name)
	if after.Holder != "B" || after.Session != sb || after.Epoch != 2 || !after.ExpiresAt.Equal(before.ExpiresAt) {
		t.Fatalf("B's term changed: before %+v after %+v", before, after)
	}
	// B's own session renews, and a release of several terms at once
	// touches only those that are B's at their epochs.
	if ok, _, err := s.RenewSession(ctx, sb, time.Minute); err != nil || !ok {
		t.Fatalf("B's renewal: ok=%v err=%v", ok, err)
	}
	eo, ok, err := acquireOne(ctx, s, sb, "B", "global/other")
	if err != nil || !ok {
		t.Fatalf("B acquire other = %d, %v, %v", eo, ok, err)
	}
	n, err := s.Release(ctx, sb, []store.Term{{Name: name, Epoch: e2}, {Name: "global/other", Epoch: eo + 7}})
	if err != nil || n != 1 {
		t.Fatalf("mixed release touched %d rows (err %v), want only %s", n, err, name)
	}
	if r := row(t, b.db, "global/other"); r.Holder != "B" || !r.Live() {
		t.Fatalf("the term released with a wrong epoch changed: %+v", r)
	}
}

// tick is one renewal of the session as the counting logger saw it: its
// sequence number among all renewal statements, and the logger's counts
// right after it (its own number among all statements, and the
// statements setting renewed_at_us so far). A failed renewal statement
// takes a number but is no tick.
type tick struct {
	seq            int
	stmts, renewal int
}

// tickSignal reports every renewal statement the coordinator running on
// cl's handle sent that did not fail, with the logger's counts taken as
// it returned, so a reader that falls behind still compares the right
// ticks.
func tickSignal(cl *countingLogger) <-chan tick {
	ch := make(chan tick, 1024)
	var mu sync.Mutex
	seq := 0
	watch := func(st sentStmt) {
		if !isSessionRenewal(st.sql) {
			return
		}
		mu.Lock()
		seq++
		n := seq
		mu.Unlock()
		if st.err != nil {
			return
		}
		select {
		case ch <- tick{seq: n, stmts: st.n, renewal: st.renews}:
		default:
		}
	}
	cl.watch.Store(&watch)
	return ch
}

// twoTicks waits for two consecutive renewals, both sent after the call,
// while r holds held terms (all of them taken before the call), and
// returns them.
func twoTicks(t *testing.T, r *running, cl *countingLogger, ticks <-chan tick, held int) (tick, tick) {
	t.Helper()
	if got := r.Renewal().Held; got != held {
		t.Fatalf("the process holds %d terms, want %d", got, held)
	}
	from, _ := cl.snapshot()
	var prev tick
	for {
		var cur tick
		select {
		case cur = <-ticks:
		case <-time.After(wait):
			t.Fatalf("no renewal of %d terms within %v", held, wait)
		}
		if prev.stmts > from && cur.seq == prev.seq+1 {
			if got := r.Renewal().Held; got != held {
				t.Fatalf("the process holds %d terms after the renewals, want %d", got, held)
			}
			return prev, cur
		}
		prev = cur
	}
}

func caseOneStatementPerRenewTick(t *testing.T, b *bundle) {
	cl := &countingLogger{}
	db := b.db.Session(&gorm.Session{Logger: cl})
	// Short ticks, but a trust window and a round bound no busy machine
	// exhausts: the case counts statements, and a lease lost to a slow
	// tick would only stall it. An acquire that runs out of its round's
	// time (roundTimeout, which scales with RetryInterval) may have
	// committed, so its names are read again on every round for a TTL
	// (giveback.go): statements that are not the renewal's and would be
	// counted between two ticks.
	cfg := steady(b.fastConfig())
	cfg.RetryInterval = max(cfg.RetryInterval, time.Second)
	// Behind a transaction pooler listening fails and is retried, with
	// statements of its own: a program there sets DisableNotifications.
	cfg.DisableNotifications = b.target.Pooled
	r := start(t, db, "node-a", cfg)
	if !cfg.DisableNotifications {
		waitListening(t, r) // listening sends its own statements once, at the start
	}
	ticks := tickSignal(cl)
	measure := func(held int) int {
		first, second := twoTicks(t, r, cl, ticks, held)
		if n := second.stmts - first.stmts; n != 1 {
			t.Logf("%d statements between ticks %d and %d (statement #%d); since the first:\n%s",
				n, first.seq, second.seq, second.stmts, cl.since(first.stmts))
		}
		return second.stmts - first.stmts
	}
	var leases []*coordination.Lease
	leases = append(leases, mustCampaign(t, election(t, r.Coordinator, coordination.ClusterScope, "one")))
	one := measure(1)
	for _, n := range names("many", 99) {
		leases = append(leases, mustCampaign(t, election(t, r.Coordinator, coordination.ClusterScope, n)))
	}
	hundred := measure(100)
	t.Logf("LOUD: %s: renew statements per tick: 1 lease -> %d, 100 leases -> %d", b.target.Name, one, hundred)
	if one != 1 || hundred != 1 {
		t.Fatalf("statements per renew tick: 1 lease -> %d, 100 leases -> %d; want 1 and 1", one, hundred)
	}

	// Pool memberships ride the same statement. Pools also read their
	// rows every poll, so count only renewals here.
	ctx, cancel := context.WithCancel(context.Background())
	var pools sync.WaitGroup
	joined := make(chan struct{}, 3)
	for _, n := range []string{"p1", "p2", "p3"} {
		p, err := r.Pool(coordination.GlobalScope, n, coordination.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		pools.Go(func() {
			_ = p.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
				joined <- struct{}{}
				<-ctx.Done()
				return nil
			}, nil)
		})
	}
	for range 3 {
		select {
		case <-joined:
		case <-time.After(wait):
			t.Fatalf("pools did not assign")
		}
	}
	first, second := twoTicks(t, r, cl, ticks, 103)
	if got := second.renewal - first.renewal; got != 1 {
		t.Logf("statements between ticks %d and %d (statement #%d); since the first:\n%s",
			first.seq, second.seq, second.stmts, cl.since(first.stmts))
		t.Fatalf("renew statements per tick with 100 leases and 3 pool memberships = %d, want 1", got)
	}
	t.Logf("LOUD: %s: renew statements per tick: 100 leases + 3 pool memberships -> 1", b.target.Name)
	cancel()
	pools.Wait()
	for _, l := range leases {
		release(t, l)
	}
}

// fencedWrite is a user table guarded by the fencing check.
type fencedWrite struct {
	ID    int `gorm:"primaryKey;autoIncrement:false"`
	Epoch int64
}

func caseFence(t *testing.T, b *bundle) {
	if err := b.db.AutoMigrate(&fencedWrite{}); err != nil {
		t.Fatal(err)
	}
	a := start(t, b.db, "node-a", b.fastConfig())
	c := start(t, b.db, "node-c", b.fastConfig())
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "fence"))
	write := func(id int, check func(tx *gorm.DB) error) error {
		return b.db.Transaction(func(tx *gorm.DB) error {
			if err := check(tx); err != nil {
				return err
			}
			return tx.Create(&fencedWrite{ID: id, Epoch: l.Epoch()}).Error
		})
	}
	if err := write(1, l.Fence); err != nil {
		t.Fatalf("fenced write by the holder failed: %v", err)
	}
	// Another process takes over after expiry.
	expireNow(t, b.db, l.Key())
	l2 := mustCampaign(t, election(t, c.Coordinator, coordination.GlobalScope, "fence"))
	// The database check alone (as a paused process would run it before
	// its own timers fire) refuses the stale epoch.
	err := write(2, func(tx *gorm.DB) error { return a.CheckFence(tx, l.Token()) })
	if !isFenced(err, fmt.Sprintf("lease %q epoch %d", l.Key(), l.Epoch()), "held by") {
		t.Fatalf("stale fenced write: err = %v, want ErrFenced naming the new holder", err)
	}
	// A claimed epoch that is not the current one is refused even for the
	// real holder.
	err = write(3, func(tx *gorm.DB) error {
		return c.CheckFence(tx, coordination.Token{Key: l2.Key(), Epoch: l2.Epoch() - 1})
	})
	if !errors.Is(err, coordination.ErrFenced) {
		t.Fatalf("write with an old epoch: err = %v, want ErrFenced", err)
	}
	// The new holder writes fine.
	if err := b.db.Transaction(func(tx *gorm.DB) error {
		if err := l2.Fence(tx); err != nil {
			return err
		}
		return tx.Create(&fencedWrite{ID: 4, Epoch: l2.Epoch()}).Error
	}); err != nil {
		t.Fatalf("new holder's fenced write: %v", err)
	}
	var ids []int
	if err := b.db.Model(&fencedWrite{}).Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 4 {
		t.Fatalf("committed writes = %v, want [1 4]: a fenced-off write was committed", ids)
	}
	// The stale lease object refuses locally too, once its term ended.
	select {
	case <-l.Context().Done():
	case <-time.After(wait):
		t.Fatalf("stale term not ended")
	}
	if err := write(5, l.Fence); !errors.Is(err, coordination.ErrFenced) {
		t.Fatalf("Lease.Fence after loss: %v, want ErrFenced", err)
	}
	release(t, l)
	release(t, l2)
}

// caseFenceNeedsTransaction checks that every fencing check refuses a
// handle outside a transaction, where its row lock would end with its own
// statement, and accepts the same handle's transactions.
func caseFenceNeedsTransaction(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", b.fastConfig())
	l := mustCampaign(t, election(t, r.Coordinator, coordination.GlobalScope, "fence-tx"))
	defer release(t, l)

	// The pool: one member, so its first assignment comes at once.
	p, err := r.Pool(coordination.GlobalScope, "fence-tx", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	assigned := make(chan coordination.Assignment, 1)
	pctx, leave := context.WithCancel(context.Background())
	poolDone := make(chan struct{})
	go func() {
		defer close(poolDone)
		_ = p.Run(pctx, func(ctx context.Context, a coordination.Assignment) error {
			assigned <- a
			<-ctx.Done()
			return nil
		}, nil)
	}()
	defer func() {
		leave()
		<-poolDone
	}()
	var a coordination.Assignment
	select {
	case a = <-assigned:
	case <-time.After(wait):
		t.Fatalf("no pool assignment within %v", wait)
	}

	checks := []struct {
		name  string
		fence func(tx *gorm.DB) error
		names string // what the refusal must name
	}{
		{"Lease.Fence", l.Fence, fmt.Sprintf("lease %q epoch %d", l.Key(), l.Epoch())},
		{"Coordinator.CheckFence", func(tx *gorm.DB) error { return r.CheckFence(tx, l.Token()) },
			fmt.Sprintf("lease %q epoch %d", l.Key(), l.Epoch())},
		{"Assignment.Fence", a.Fence, fmt.Sprintf("pool %q generation %d", a.Key, a.Generation)},
	}
	for _, c := range checks {
		refused := map[string]*gorm.DB{
			"nil":              nil,
			"the plain handle": b.db,
			"a context handle": b.db.WithContext(context.Background()),
			"a session handle": b.db.Session(&gorm.Session{}),
			"a zero gorm.DB":   {},
		}
		for what, tx := range refused {
			err := c.fence(tx)
			if !isNotInTransaction(err) || errors.Is(err, coordination.ErrFenced) {
				t.Errorf("%s with %s = %v, want ErrInvalidConfig for a handle outside a transaction", c.name, what, err)
				continue
			}
			if !strings.Contains(err.Error(), c.names) {
				t.Errorf("%s with %s: error %q does not name %s", c.name, what, err, c.names)
			}
		}
		if err := b.db.Connection(func(conn *gorm.DB) error { return c.fence(conn) }); !isNotInTransaction(err) {
			t.Errorf("%s on a dedicated connection outside a transaction = %v, want ErrInvalidConfig for a handle outside a transaction", c.name, err)
		}
		// Inside a transaction, however it was begun, the check passes.
		if err := b.db.Transaction(func(tx *gorm.DB) error { return c.fence(tx) }); err != nil {
			t.Errorf("%s inside db.Transaction: %v", c.name, err)
		}
		tx := b.db.Begin()
		if tx.Error != nil {
			t.Fatal(tx.Error)
		}
		if err := c.fence(tx.WithContext(context.Background())); err != nil {
			t.Errorf("%s inside db.Begin: %v", c.name, err)
		}
		if err := tx.Rollback().Error; err != nil {
			t.Fatal(err)
		}
	}

	// A pool check that fails names the generation, not an epoch.
	stale := a
	stale.Generation = a.Generation - 1
	err = b.db.Transaction(stale.Fence)
	if !isFenced(err, fmt.Sprintf("pool %q generation %d: the pool is at generation %d", a.Key, stale.Generation, a.Generation), "") {
		t.Errorf("fence of a superseded generation = %v, want ErrFenced naming the pool and generation %d", err, stale.Generation)
	}
}

func caseScopes(t *testing.T, b *bundle) {
	idA, err := identity.New("node-a", "east")
	if err != nil {
		t.Fatal(err)
	}
	idB, err := identity.New("node-b", "west")
	if err != nil {
		t.Fatal(err)
	}
	// Quick retries, but a trust window no busy machine exhausts: the
	// second global campaign must find the first leader's lease live
	// throughout, so that its win could only be a second leader.
	cfg := steady(notifying(b.fastConfig()))
	cfg.RenewInterval = 2 * time.Second
	ca, err := coordination.New(b.db, idA, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := coordination.New(b.db, idB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := startCoordinator(t, ca), startCoordinator(t, cb)
	// One cluster leader per cluster: both win.
	la := mustCampaign(t, election(t, ra.Coordinator, coordination.ClusterScope, "report"))
	lb := mustCampaign(t, election(t, rb.Coordinator, coordination.ClusterScope, "report"))
	if la.Key() == lb.Key() {
		t.Fatalf("cluster-scoped leases collide: %s", la.Key())
	}
	// One global leader: only the first wins.
	g := mustCampaign(t, election(t, ra.Coordinator, coordination.GlobalScope, "report"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*b.fastConfig().TTL)
	defer cancel()
	if l, err := election(t, rb.Coordinator, coordination.GlobalScope, "report").Campaign(ctx); err == nil {
		t.Fatalf("second global leader: %s", l.Token())
	}
	for _, l := range []*coordination.Lease{la, lb, g} {
		release(t, l)
	}
}

func caseLeaderAndList(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	a := start(t, b.db, "node-a", cfg)
	e := election(t, a.Coordinator, coordination.ClusterScope, "who")
	info, err := e.Leader(context.Background())
	if err != nil || info.Key != "cluster/test/who" || info.Live {
		t.Fatalf("before any campaign: %+v, %v", info, err)
	}
	l := mustCampaign(t, e)
	info, err = e.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !info.Live || info.Holder != a.Holder() || info.Epoch != l.Epoch() {
		t.Fatalf("leader = %+v, want live, mine, epoch %d", info, l.Epoch())
	}
	// Times come from the database clock: expiry lies within one TTL of
	// the database's now, and the term started no later than now.
	if left := info.ExpiresAt.Sub(info.DatabaseTime); left <= 0 || left > cfg.TTL {
		t.Fatalf("ExpiresAt - DatabaseTime = %v, want in (0, %v]", left, cfg.TTL)
	}
	if info.AcquiredAt.After(info.DatabaseTime) {
		t.Fatalf("AcquiredAt %v after DatabaseTime %v", info.AcquiredAt, info.DatabaseTime)
	}
	all, err := a.Admin().Leases(context.Background())
	if err != nil || len(all) != 1 || all[0].Key != l.Key() {
		t.Fatalf("Leases = %+v, %v", all, err)
	}
	if held, st := heldTokens(t, a.Coordinator), a.Renewal(); len(held) != 1 || held[0] != l.Token() || st.Held != 1 {
		t.Fatalf("held = %v (Renewal().Held %d), want [%s]", held, st.Held, l.Token())
	}
	release(t, l)
}

func caseCutOff(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	a, fa := startFaulty(t, b.db, "node-a", cfg)
	c := start(t, b.db, "node-c", cfg)
	l := mustCampaign(t, election(t, a.Coordinator, coordination.ClusterScope, "cut"))
	events := a.Subscribe(t.Context(), 16)
	var mu sync.Mutex
	var stoppedAt time.Time
	context.AfterFunc(l.Context(), func() {
		mu.Lock()
		stoppedAt = time.Now()
		mu.Unlock()
	})
	cutAt := time.Now()
	fa.failAll.Store(true) // the holder can no longer reach the database
	l2 := mustCampaign(t, election(t, c.Coordinator, coordination.ClusterScope, "cut"))
	takenAt := time.Now()
	ev := recvEvent(t, events, kindIs(coordination.EventLost, l.Key()))
	if !errors.Is(ev.Err, coordination.ErrLeaseLost) {
		t.Fatalf("lost event cause = %v", ev.Err)
	}
	mu.Lock()
	stopped := stoppedAt
	mu.Unlock()
	if stopped.IsZero() || !stopped.Before(takenAt) {
		t.Fatalf("cut-off holder stopped at %v, successor took over at %v: overlap", stopped.Sub(cutAt), takenAt.Sub(cutAt))
	}
	if l.Valid() {
		t.Fatalf("cut-off lease still valid")
	}
	t.Logf("cut-off holder stopped %v after the cut; successor took over %v after the cut (TTL %v)",
		stopped.Sub(cutAt), takenAt.Sub(cutAt), cfg.TTL)
	if l2.Epoch() <= l.Epoch() {
		t.Fatalf("successor epoch %d not above %d", l2.Epoch(), l.Epoch())
	}
	fa.failAll.Store(false)
	release(t, l) // must not touch the successor's term
	if got := row(t, b.db, l2.Key()); got.Holder != c.Holder() || got.Epoch != l2.Epoch() || !got.Live() {
		t.Fatalf("successor row after stale release: %+v", got)
	}
	release(t, l2)
}

func caseTransientErrors(t *testing.T, b *bundle) {
	// Quick renewals, but a trust window no busy machine exhausts
	// (steady): the case is about failures that end no term, and two
	// failed renewals and a slow one could outlast fastConfig's.
	cfg := steady(b.fastConfig())
	a, fa := startFaulty(t, b.db, "node-a", cfg)
	l := mustCampaign(t, election(t, a.Coordinator, coordination.ClusterScope, "flaky"))
	events := a.Subscribe(t.Context(), 64)
	failures := make(chan struct{}, 16)
	successes := make(chan struct{}, 16)
	renewals := watchRenewals(t, a.Coordinator)
	go func() {
		for rs := range renewals {
			ch := successes
			if rs.err != nil {
				ch = failures
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	fa.failRenew.Store(true)
	for range 2 {
		select {
		case <-failures:
		case <-time.After(wait):
			t.Fatalf("no failed renewal within %v", wait)
		}
	}
	fa.failRenew.Store(false)
	select {
	case <-successes:
	case <-time.After(wait):
		t.Fatalf("no successful renewal after the fault cleared")
	}
	if !l.Valid() {
		t.Fatalf("two failed renewals lost the lease: %v", l.Check())
	}
	for {
		select {
		case ev := <-events:
			if ev.Kind == coordination.EventLost {
				t.Fatalf("lease reported lost after transient errors: %v", ev.Err)
			}
			continue
		default:
		}
		break
	}
	if got := row(t, b.db, l.Key()); got.Epoch != l.Epoch() || !got.Live() {
		t.Fatalf("row after transient errors: %+v", got)
	}
	release(t, l)
}

func caseShutdownOrder(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", b.fastConfig())
	c := start(t, b.db, "node-c", b.fastConfig())
	e := election(t, a.Coordinator, coordination.ClusterScope, "drain")
	started := make(chan *coordination.Lease, 1)
	cancelled := make(chan struct{})
	finish := make(chan struct{})
	runDone := make(chan error, 1)
	go func() {
		runDone <- e.Run(context.Background(), func(ctx context.Context, l *coordination.Lease) error {
			started <- l
			<-ctx.Done()
			close(cancelled)
			<-finish // still cleaning up after cancellation
			return nil
		}, nil)
	}()
	var l *coordination.Lease
	select {
	case l = <-started:
	case <-time.After(wait):
		t.Fatalf("leader work did not start")
	}
	a.cancel() // shut the coordinator down
	select {
	case <-cancelled:
	case <-time.After(wait):
		t.Fatalf("leader work not cancelled on shutdown")
	}
	if !errors.Is(context.Cause(l.Context()), coordination.ErrClosed) {
		t.Fatalf("cause = %v, want ErrClosed", context.Cause(l.Context()))
	}
	// The work has not returned: the lease must still be held in the
	// database, renewed by the draining coordinator.
	renewed := renewSignal(t, a)
	recvInt(t, renewed)
	if got := row(t, b.db, l.Key()); got.Holder != a.Holder() || !got.Live() {
		t.Fatalf("lease released while leader work still ran: %+v", got)
	}
	close(finish)
	select {
	case <-a.Done():
	case <-time.After(wait):
		t.Fatalf("coordinator did not stop after the work returned")
	}
	if got := row(t, b.db, l.Key()); got.Holder != "" {
		t.Fatalf("lease not released after the work returned: %+v", got)
	}
	select {
	case err := <-runDone:
		if err != nil && !errors.Is(err, coordination.ErrClosed) {
			t.Fatalf("Election.Run = %v", err)
		}
	case <-time.After(wait):
		t.Fatalf("Election.Run did not return")
	}
	// A follower takes over on its next attempt.
	l2 := mustCampaign(t, election(t, c.Coordinator, coordination.ClusterScope, "drain"))
	release(t, l2)
}

func caseShutdownOverrun(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	cfg.ShutdownTimeout = 300 * time.Millisecond
	a := start(t, b.db, "node-a", cfg)
	events := a.Subscribe(t.Context(), 16)
	e := election(t, a.Coordinator, coordination.ClusterScope, "stubborn")
	started := make(chan *coordination.Lease, 1)
	finish := make(chan struct{})
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = e.Run(context.Background(), func(ctx context.Context, l *coordination.Lease) error {
			started <- l
			<-finish // ignores ctx
			return nil
		}, nil)
	}()
	var l *coordination.Lease
	select {
	case l = <-started:
	case <-time.After(wait):
		t.Fatalf("leader work did not start")
	}
	a.cancel()
	ev := recvEvent(t, events, kindIs(coordination.EventLost, l.Key()))
	if !errors.Is(ev.Err, coordination.ErrClosed) || !strings.Contains(ev.Err.Error(), "ShutdownTimeout") {
		t.Fatalf("overrun event: %v", ev.Err)
	}
	select {
	case <-a.Done():
	case <-time.After(wait):
		t.Fatalf("Run did not return after ShutdownTimeout")
	}
	// Not released while the work still runs.
	if got := row(t, b.db, l.Key()); got.Holder != a.Holder() {
		t.Fatalf("lease released while stubborn work still runs: %+v", got)
	}
	close(finish)
	<-runDone
}

func caseLeaderChanged(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", b.fastConfig())
	c := start(t, b.db, "node-c", b.fastConfig())
	l := mustCampaign(t, election(t, a.Coordinator, coordination.ClusterScope, "watch"))
	settle(t, b.db) // C's first read on its node sees A's lease
	events := c.Subscribe(t.Context(), 16)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan *coordination.Lease, 1)
	go func() {
		l2, _ := election(t, c.Coordinator, coordination.ClusterScope, "watch").Campaign(ctx)
		got <- l2
	}()
	ev := recvEvent(t, events, kindIs(coordination.EventLeaderChanged, l.Key()))
	if ev.Holder != a.Holder() || ev.Epoch != l.Epoch() {
		t.Fatalf("leader-changed = %+v, want holder %s epoch %d", ev, a.Holder(), l.Epoch())
	}
	release(t, l)
	elected := recvEvent(t, events, kindIs(coordination.EventElected, l.Key()))
	if elected.Epoch != l.Epoch()+1 {
		t.Fatalf("elected epoch %d", elected.Epoch)
	}
	cancel()
	if l2 := <-got; l2 != nil {
		release(t, l2)
	}
}

func caseAutoMigrateDisabled(t *testing.T, b *bundle) {
	cfg := notifying(b.fastConfig())
	cfg.DisableAutoMigrate = true
	c, err := coordination.New(b.db, testIdentity(t, "node-a"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = c.Run(ctx)
	if !errors.Is(err, coordination.ErrSchemaMissing) || !strings.Contains(err.Error(), "migrations.Migrate") {
		t.Fatalf("Run without schema = %v, want ErrSchemaMissing saying how to migrate", err)
	}
	if _, err := election(t, c, coordination.ClusterScope, "x").Campaign(ctx); !errors.Is(err, coordination.ErrClosed) {
		t.Fatalf("Campaign after failed Run = %v, want ErrClosed", err)
	}
	// Once migrated, the same setting starts fine.
	if _, err := rawStore(t, b.db).Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	r := start(t, b.db, "node-b", cfg)
	release(t, mustCampaign(t, election(t, r.Coordinator, coordination.ClusterScope, "x")))
}

func caseTablePrefix(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	cfg.TablePrefix = "custom_"
	a := start(t, b.db, "node-a", cfg)
	l := mustCampaign(t, election(t, a.Coordinator, coordination.ClusterScope, "p"))
	if !b.db.Migrator().HasTable("custom_leases") || b.db.Migrator().HasTable("leasehold_leases") {
		t.Fatalf("tables do not follow TablePrefix")
	}
	release(t, l)
}
