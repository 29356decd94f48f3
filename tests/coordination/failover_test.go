package coordination_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestFailoverRollback puts the database, in one transaction, in the state
// a failover to an asynchronous standby leaves it in: the incarnation row
// and the sessions name an older incarnation, and the last writes of the
// old primary are undone. The real failover, with a promoted standby, is
// TestFailoverOfAReplicatedPair; this test pins each rule on its own. It
// runs on the dialects that tell incarnations apart: PostgreSQL and
// MariaDB.
func TestFailoverRollback(t *testing.T) {
	t.Parallel() // see runCasesOn
	for _, tg := range []testdb.Target{{Name: "postgres", Dialect: "postgres"}, {Name: "mysql", Dialect: "mysql"}} {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			failoverRollback(t, tg)
		})
	}
}

func failoverRollback(t *testing.T, tg testdb.Target) {
	for _, tc := range []conformanceCase{
		{"LostAcquireIsDroppedAndHeldOff", caseRollbackLostAcquire},
		{"KeptTermSurvives", caseRollbackKeptTerm},
		{"LostReleaseIsReleased", caseRollbackLostRelease},
		{"PoolRepublishesAboveTheFloor", caseRollbackPool},
		{"LockWaitsOutTheHoldOff", caseRollbackLock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has a database of its own
			tc.fn(t, &bundle{t: t, target: tg, db: tg.Open(t)})
		})
	}
}

// oldIncarnation is what the rolled-back rows name as their incarnation.
const oldIncarnation = "old-primary"

// rollBack runs undo and marks the incarnation row and every session as of
// the old incarnation, all in one transaction: what a promoted standby
// shows when the old primary's last writes did not reach it.
func rollBack(t *testing.T, db *gorm.DB, undo ...string) {
	t.Helper()
	tables, _ := store.TablesFor("")
	err := db.Transaction(func(tx *gorm.DB) error {
		for _, q := range append(undo,
			"UPDATE "+tables.Incarnation+" SET incarnation = '"+oldIncarnation+"'",
			"UPDATE "+tables.Sessions+" SET incarnation = '"+oldIncarnation+"'") {
			if err := tx.Exec(q).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("roll the database back: %v", err)
	}
}

// incarnationRow reads the incarnation row.
func incarnationRow(db *gorm.DB) (incarnation string, holdUntilUS, floor int64, err error) {
	tables, _ := store.TablesFor("")
	r := db.Raw("SELECT incarnation, hold_until_us, epoch_floor FROM " + tables.Incarnation + " WHERE id = 1").Row()
	err = r.Scan(&incarnation, &holdUntilUS, &floor)
	return incarnation, holdUntilUS, floor, err
}

// waitAdopted waits until a process has recorded an incarnation other
// than before and returns the row. A read that fails (a connection
// to a server that has gone) is tried again.
func waitAdopted(t *testing.T, db *gorm.DB, before string) (holdUntilUS, floor int64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		inc, hold, floor, err := incarnationRow(db)
		if err == nil && inc != before {
			return hold, floor
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process recorded the new incarnation within %v (last read: %q, %v)", wait, inc, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// currentIncarnation reads the incarnation the row names now.
func currentIncarnation(t *testing.T, db *gorm.DB) string {
	t.Helper()
	inc, _, _, err := incarnationRow(db)
	if err != nil {
		t.Fatalf("read the incarnation row: %v", err)
	}
	return inc
}

// campaignFor campaigns in the background, for at most twice wait.
func campaignFor(t *testing.T, e *coordination.Election) <-chan campaignResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return campaignAsync(ctx, e)
}

// recvLease waits for a background campaign's lease.
func recvLease(t *testing.T, ch <-chan campaignResult, what string) *coordination.Lease {
	t.Helper()
	res := <-ch // bounded by campaignFor's context
	if res.err != nil {
		t.Fatalf("%s: campaign: %v", what, res.err)
	}
	return res.l
}

// twoCoordinators starts A and B on the case's database, or skips the
// case where the dialect does not tell incarnations apart.
func twoCoordinators(t *testing.T, b *bundle) (a, bb *running) {
	t.Helper()
	if !rawStore(t, b.db).DetectsFailover() {
		t.Skipf("%s does not tell database incarnations apart", b.target.Name)
	}
	return start(t, b.db, "node-a", b.fastConfig()), start(t, b.db, "node-b", b.fastConfig())
}

// acquiredAfterHold fails the test if the lease's current term began,
// by the database clock, before the hold-off ended at holdUS.
func acquiredAfterHold(t *testing.T, db *gorm.DB, name string, holdUS int64) {
	t.Helper()
	if got := row(t, db, name); got.AcquiredAt.UnixMicro() < holdUS {
		t.Fatalf("%s was acquired at %d µs by the database clock, before the hold-off ended at %d µs", name, got.AcquiredAt.UnixMicro(), holdUS)
	}
}

// caseRollbackLostAcquire: the old primary granted A a term that the new
// primary never saw. A drops it at its first renewal, B waits out the
// hold-off, which starts when the new incarnation is recorded, and takes a
// new epoch above the floor, so A's epoch is never issued twice.
func caseRollbackLostAcquire(t *testing.T, b *bundle) {
	a, bb := twoCoordinators(t, b)
	events := a.Subscribe(t.Context(), 64)
	ea := election(t, a.Coordinator, coordination.GlobalScope, "job")
	for range 3 {
		release(t, mustCampaign(t, ea))
	}
	la := mustCampaign(t, ea)
	won := campaignFor(t, election(t, bb.Coordinator, coordination.GlobalScope, "job"))

	tables, _ := store.TablesFor("")
	rollBack(t, b.db, "UPDATE "+tables.Leases+" SET holder = '', session_id = '', epoch = epoch - 1 WHERE name = 'global/job'")

	ev := recvEvent(t, events, kindIs(coordination.EventLost, "global/job"))
	if !errors.Is(ev.Err, coordination.ErrLeaseLost) || ev.Epoch != la.Epoch() {
		t.Fatalf("A's loss: %+v; want ErrLeaseLost for epoch %d", ev, la.Epoch())
	}
	hold, floor := waitAdopted(t, b.db, oldIncarnation)
	lb := recvLease(t, won, "B")
	if la.Context().Err() == nil {
		t.Fatalf("B holds epoch %d while A still trusts epoch %d", lb.Epoch(), la.Epoch())
	}
	if lb.Epoch() <= floor || floor < la.Epoch() {
		t.Fatalf("B's epoch %d, floor %d: want the floor above A's lost epoch %d and B's epoch above the floor", lb.Epoch(), floor, la.Epoch())
	}
	acquiredAfterHold(t, b.db, "global/job", hold)
}

// caseRollbackKeptTerm: the new primary has A's term (a synchronous
// standby, or a term older than the lost writes). A checks it at its next
// renewal and keeps it without a pause; its epoch stays valid.
func caseRollbackKeptTerm(t *testing.T, b *bundle) {
	a, bb := twoCoordinators(t, b)
	la := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "job"))
	won := campaignFor(t, election(t, bb.Coordinator, coordination.GlobalScope, "job"))
	renewals := renewSignal(t, a)

	rollBack(t, b.db)
	hold, floor := waitAdopted(t, b.db, oldIncarnation)
	// Wait out the hold-off by the database clock, then two renewals of A.
	for {
		now := databaseNowUS(t, b.db)
		if now > hold {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 2 {
		select {
		case <-renewals:
		case <-time.After(wait):
			t.Fatalf("A did not renew within %v after the failover", wait)
		}
	}
	if err := la.Context().Err(); err != nil {
		t.Fatalf("A lost a term the new primary has: %v", context.Cause(la.Context()))
	}
	if err := fenceOK(b, la); err != nil {
		t.Fatalf("A's fence after the failover: %v", err)
	}
	select {
	case res := <-won:
		t.Fatalf("B's campaign ended while A holds the lease: %v, %v", res.l, res.err)
	default:
	}
	release(t, la)
	lb := recvLease(t, won, "B")
	if lb.Epoch() <= floor {
		t.Fatalf("B's epoch %d is not above the floor %d", lb.Epoch(), floor)
	}
}

// caseRollbackLock: during the hold-off after a failover (recorded by
// the renewal of A, which holds another key), the Lock of a free key,
// which the caller attempts itself before it campaigns, takes the key
// only once the hold-off has passed by the database clock, and above the
// floor.
func caseRollbackLock(t *testing.T, b *bundle) {
	a, _ := twoCoordinators(t, b)
	ns := locks(t, a.Coordinator, coordination.GlobalScope, "acct")
	keep := mustLock(t, ns, "keep")
	defer func() { _ = keep.Release(context.Background()) }()
	rollBack(t, b.db)
	hold, floor := waitAdopted(t, b.db, oldIncarnation)
	if now := databaseNowUS(t, b.db); now >= hold {
		t.Logf("the hold-off ended (%d µs) before the Lock (%d µs): the machine is slow", hold, now)
	}
	l := mustLock(t, ns, "k")
	acquiredAfterHold(t, b.db, l.Key(), hold)
	if l.Epoch() <= floor {
		t.Fatalf("the lock's epoch %d is not above the floor %d", l.Epoch(), floor)
	}
	release(t, l)
}

// databaseNowUS reads the database clock, in µs since the Unix epoch.
func databaseNowUS(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	q := "SELECT CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)"
	if db.Name() == "mysql" {
		q = "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
	}
	var now int64
	if err := db.Raw(q).Row().Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// fenceOK runs a fenced transaction for l.
func fenceOK(b *bundle, l *coordination.Lease) error {
	return b.db.Transaction(func(tx *gorm.DB) error { return l.Fence(tx) })
}

// caseRollbackLostRelease: A released a lease, but the new primary still
// shows A's session holding it. A releases it when it checks its terms, and
// B takes it once the hold-off has passed.
func caseRollbackLostRelease(t *testing.T, b *bundle) {
	a, bb := twoCoordinators(t, b)
	keep := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "keep"))
	gone := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "gone"))
	session, epoch := sessionOf(t, b.db, keep), gone.Epoch()
	release(t, gone)
	tables, _ := store.TablesFor("")
	rollBack(t, b.db, "UPDATE "+tables.Leases+" SET holder = '"+a.Holder()+"', session_id = '"+session+"', epoch = "+
		strconv.FormatInt(epoch, 10)+" WHERE name = 'global/gone'")
	won := campaignFor(t, election(t, bb.Coordinator, coordination.GlobalScope, "gone"))
	hold, _ := waitAdopted(t, b.db, oldIncarnation)
	lb := recvLease(t, won, "B")
	acquiredAfterHold(t, b.db, "global/gone", hold)
	if lb.Epoch() <= epoch {
		t.Fatalf("B's epoch %d is not above A's %d", lb.Epoch(), epoch)
	}
	if keep.Context().Err() != nil {
		t.Fatalf("A lost the lease it kept: %v", context.Cause(keep.Context()))
	}
}

// caseRollbackPool: after a failover a pool publishes nothing until the
// hold-off has passed, then republishes its members above the floor, and
// every member works in that generation.
func caseRollbackPool(t *testing.T, b *bundle) {
	a, bb := twoCoordinators(t, b)
	got := make(chan coordination.Assignment, 16)
	work := func(ctx context.Context, as coordination.Assignment) error {
		got <- as
		<-ctx.Done()
		return nil
	}
	runPool := func(c *running) {
		p, err := c.Pool(coordination.GlobalScope, "batch", coordination.PoolConfig{PollInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx, work, nil) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	runPool(a)
	runPool(bb)
	// Both members working in one generation of two.
	var gen int64
	seen := map[int]bool{}
	for len(seen) < 2 {
		select {
		case as := <-got:
			if as.Count == 2 {
				if as.Generation != gen {
					gen, seen = as.Generation, map[int]bool{}
				}
				seen[as.Index] = true
			}
		case <-time.After(wait):
			t.Fatalf("the pool of two did not settle within %v", wait)
		}
	}
	rollBack(t, b.db)
	hold, floor := waitAdopted(t, b.db, oldIncarnation)
	seen = map[int]bool{}
	for len(seen) < 2 {
		select {
		case as := <-got:
			if as.Generation <= floor {
				t.Fatalf("assignment %+v after the failover: want a generation above the floor %d", as, floor)
			}
			seen[as.Index] = true
		case <-time.After(wait):
			t.Fatalf("the pool did not republish above the floor within %v", wait)
		}
	}
	tables, _ := store.TablesFor("")
	var published int64
	if err := b.db.Raw("SELECT renewed_at_us FROM " + tables.Leases + " WHERE name = 'pool|global/batch|generation'").Row().Scan(&published); err != nil {
		t.Fatal(err)
	}
	if published < hold {
		t.Fatalf("the generation was published at %d µs by the database clock, before the hold-off ended at %d µs", published, hold)
	}
}

// TestFailoverOfAReplicatedPair fails over a real replicated pair the
// test starts, while coordinators hold and campaign through the pair's
// DSN, which follows the primary: a PostgreSQL primary and its streaming
// standby (postgres-pair), and a MariaDB primary and its GTID replica,
// semi-synchronous in the Sync case (mariadb-pair). The old primary is
// stopped first, as a failover tool does.
func TestFailoverOfAReplicatedPair(t *testing.T) {
	// Each case starts a pair of its own; the PostgreSQL and the MariaDB
	// cases run beside each other, the cases of one database one after
	// the other.
	t.Parallel()
	for _, pt := range []struct {
		name  string
		start func(testing.TB, testdb.ReplicationMode) *testdb.Pair
	}{
		{"postgres-pair", testdb.PostgresPair},
		{"mariadb-pair", testdb.MariaDBPair},
	} {
		t.Run(pt.name, func(t *testing.T) {
			t.Parallel()
			t.Run("Sync", func(t *testing.T) { caseFailoverSync(t, pt.start(t, testdb.Sync)) })
			t.Run("AsyncLostAcquire", func(t *testing.T) { caseFailoverAsyncLostAcquire(t, pt.start(t, testdb.Async)) })
		})
	}
}

// pairConfig rides out a promotion: a renewal retried through the outage
// still fits the trust window.
func pairConfig() coordination.Config {
	return coordination.Config{
		TTL:             6 * time.Second,
		RenewInterval:   500 * time.Millisecond,
		RetryInterval:   200 * time.Millisecond,
		Margin:          time.Second,
		ShutdownTimeout: 5 * time.Second,
	}
}

// openPairDB creates a database on the pair and opens it through the
// pair's DSN, and checks that the store detects failovers there.
func openPairDB(t *testing.T, p *testdb.Pair) *gorm.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.CreateDatabase(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	db := outageOpen(t, p.Driver(), p.DSN("app"))
	st := rawStore(t, db)
	if unsupported, err := st.ProbeFailover(ctx); err != nil || unsupported != nil || !st.DetectsFailover() {
		t.Fatalf("the store does not detect failovers of the %s pair (probe: %v, %v)", p.Driver(), unsupported, err)
	}
	return db
}

// promote stops (or kills) the primary, optionally after stopping the
// standby and restarting it, and promotes the standby.
func promote(t *testing.T, p *testdb.Pair, kill bool) {
	t.Helper()
	stop := p.Primary().Stop
	if kill {
		stop = p.Primary().Kill
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Standby().Running() {
		if err := p.Standby().Start(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Promote(ctx); err != nil {
		t.Fatal(err)
	}
}

// lostInFailover reports whether ev ended a term because the new primary
// did not show it.
func lostInFailover(ev coordination.Event) bool {
	return ev.Kind == coordination.EventLost && isLostInFailover(ev.Err)
}

// caseFailoverSync: nothing acknowledged is lost. The holder's term is on
// the new primary: it is never dropped as lost in the failover, and it
// fences there. The follower takes the lease only after it is released,
// and above the floor.
func caseFailoverSync(t *testing.T, p *testdb.Pair) {
	db := openPairDB(t, p)
	a := start(t, db, "node-a", pairConfig())
	bb := start(t, db, "node-b", pairConfig())
	events := a.Subscribe(t.Context(), 256)
	la := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "job"))
	won := campaignFor(t, election(t, bb.Coordinator, coordination.GlobalScope, "job"))

	before := currentIncarnation(t, db)
	promote(t, p, true)
	_, floor := waitAdopted(t, db, before)

	if la.Context().Err() == nil {
		if err := fenceOK(&bundle{db: db}, la); err != nil {
			t.Fatalf("A's fence on the new primary: %v", err)
		}
		release(t, la)
	}
	lb := recvLease(t, won, "B")
	if la.Context().Err() == nil {
		t.Fatalf("B holds epoch %d while A still trusts epoch %d", lb.Epoch(), la.Epoch())
	}
	if lb.Epoch() <= floor {
		t.Fatalf("B's epoch %d is not above the floor %d", lb.Epoch(), floor)
	}
	for {
		select {
		case ev := <-events:
			if lostInFailover(ev) {
				t.Fatalf("a synchronous failover dropped a term the new primary has: %+v", ev)
			}
			continue
		default:
		}
		break
	}
}

// caseFailoverAsyncLostAcquire: the standby is stopped, so B's acquire
// reaches only the old primary, which is then killed. B drops the lost
// term at its first renewal on the new primary and keeps the one the new
// primary has; C takes the lease only after B stopped trusting it and the
// hold-off passed, at an epoch above everything B was given.
func caseFailoverAsyncLostAcquire(t *testing.T, p *testdb.Pair) {
	db := openPairDB(t, p)
	bb := start(t, db, "node-b", pairConfig())
	cc := start(t, db, "node-c", pairConfig())
	events := bb.Subscribe(t.Context(), 256)
	kept := mustCampaign(t, election(t, bb.Coordinator, coordination.GlobalScope, "kept"))
	eb := election(t, bb.Coordinator, coordination.GlobalScope, "job")
	release(t, mustCampaign(t, eb))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Standby().Stop(); err != nil {
		t.Fatal(err)
	}
	lost := mustCampaign(t, eb) // on the old primary only
	won := campaignFor(t, election(t, cc.Coordinator, coordination.GlobalScope, "job"))

	before := currentIncarnation(t, db)
	promote(t, p, true)

	ev := recvEvent(t, events, func(ev coordination.Event) bool { return ev.Kind == coordination.EventLost && ev.Key == "global/job" })
	if ev.Epoch != lost.Epoch() || !errors.Is(ev.Err, coordination.ErrLeaseLost) {
		t.Fatalf("B's loss: %+v; want ErrLeaseLost for epoch %d", ev, lost.Epoch())
	}
	hold, floor := waitAdopted(t, db, before)
	lc := recvLease(t, won, "C")
	if lost.Context().Err() == nil {
		t.Fatalf("C holds epoch %d while B still trusts the lost epoch %d", lc.Epoch(), lost.Epoch())
	}
	if floor < lost.Epoch() || lc.Epoch() <= floor {
		t.Fatalf("C's epoch %d, floor %d: want the floor at or above B's lost epoch %d and C's epoch above it", lc.Epoch(), floor, lost.Epoch())
	}
	acquiredAfterHold(t, db, "global/job", hold)
	if kept.Context().Err() != nil && lostInFailoverCause(kept) {
		t.Fatalf("B dropped a term the new primary has: %v", context.Cause(kept.Context()))
	}
}

// lostInFailoverCause reports whether l ended because the new primary did
// not show it.
func lostInFailoverCause(l *coordination.Lease) bool {
	return isLostInFailover(context.Cause(l.Context()))
}

// TestFailoverDetectionUnavailable runs a coordinator as a role that may
// not call pg_control_system(), as on a PostgreSQL-compatible service
// without it: the coordinator says once that failovers are not detected,
// and leases are taken, renewed and released as on a database without
// detection.
//
// It runs as safely on a server of the user's (LEASEHOLD_TEST_POSTGRES_DSN)
// as on the private one: the role is the test's own and is dropped when
// it ends, and the revoke changes only the test's own database (each
// database has its own pg_catalog).
func TestFailoverDetectionUnavailable(t *testing.T) {
	tg := testdb.Target{Name: "postgres", Dialect: "postgres"}
	role := tg.Role(t) // before the database, so that it is dropped after it
	driver, dsn := tg.OpenDSN(t)
	admin := outageOpen(t, driver, dsn)
	var mayRevoke bool
	if err := admin.Raw("SELECT pg_has_role(current_user, proowner, 'USAGE') FROM pg_proc " +
		"WHERE oid = 'pg_catalog.pg_control_system()'::regprocedure").Scan(&mayRevoke).Error; err != nil {
		t.Fatal(err)
	}
	if !mayRevoke {
		t.Skip("LOUD: coordination: SKIPPING TestFailoverDetectionUnavailable: revoking pg_control_system() in its own database " +
			"takes the rights of the function's owner, a superuser, which the DSN's user lacks")
	}
	for _, q := range []string{
		"REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC",
		`GRANT ALL ON SCHEMA public TO "` + role.Name + `"`,
	} {
		if err := admin.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	roleDSN, err := role.DSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := outageOpen(t, driver, roleDSN)
	var user string
	if err := db.Raw("SELECT current_user").Scan(&user).Error; err != nil || user != role.Name {
		t.Fatalf("connected as %q (%v), want the role %s", user, err, role.Name)
	}
	core, logs := zapobserver.New(zap.WarnLevel)
	cfg := fastConfig()
	cfg.Logger = zap.New(core)
	cfg = withDefaults(t, notifying(cfg))
	// The coordinator runs on a store the test keeps, opened as New opens
	// it, so that the test can ask it whether it detects failovers.
	st := storeFor(t, db, cfg)
	a := startCoordinator(t, newCoordinator(t, st, testIdentity(t, "node-a"), cfg))
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "job"))
	renewals := renewSignal(t, a)
	select {
	case <-renewals:
	case <-time.After(wait):
		t.Fatalf("no renewal within %v", wait)
	}
	release(t, l)
	if n := logs.FilterMessageSnippet("cannot say which incarnation").Len(); n != 1 {
		t.Fatalf("%d warnings that failovers are not detected, want 1: %v", n, logs.All())
	}
	if st.DetectsFailover() {
		t.Fatal("the store still detects failovers")
	}
	// A coordinator that never runs, as the leasehold command uses for
	// status, reads as well: its first read probes.
	c, err := coordination.New(db, testIdentity(t, "operator"), coordination.Config{DisableAutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().Leases(context.Background()); err != nil {
		t.Fatalf("read the leases as an operator: %v", err)
	}
}
