package coordination_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	zapobserver "go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgnotify"
)

// TestWakeups runs the release-notification cases on every database:
// PostgreSQL's NOTIFY (package pgnotify), the sockets of SQLite, the peer
// wake-ups of the others (and PostgreSQL's without pgnotify), and
// PostgreSQL behind PgBouncer in transaction mode, where LISTEN cannot
// work: there the cases that need notifications skip, and the others
// check that polling alone still works. (Wake-ups dropped on arrival and
// wake-ups for nothing, which need the coordinator's insides, are package
// coordination's TestWakeups/*/LostWakeupOnlyDelays, on SQLite and the
// in-process database.)
func TestWakeups(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCasesOn(t, testdb.PoolerTargets(), []conformanceCase{
		{"FallbackBehindTransactionPooler", caseFallbackBehindTransactionPooler},
		{"ReleaseWakesFollower", caseReleaseWakesFollower},
		{"LostWakeupOnlyDelays", caseLostWakeupOnlyDelays},
		{"FallbackWhenListenFails", caseFallbackWhenListenFails},
		{"PoolRebalancesOnWakeup", casePoolRebalancesOnWakeup},
		{"NoListeningOnAOneConnectionPool", caseNoListeningOnAOneConnectionPool},
		{"PostgresWithAndWithoutPGNotify", casePostgresWithAndWithoutPGNotify},
		{"ListeningConnectionBreaks", caseListeningConnectionBreaks},
		{"PostgresPeerWakeupsByDefault", casePostgresPeerWakeupsByDefault},
	})
}

// slowPollConfig polls far less often than any wait of these tests: a
// follower that acts within a test's bound was woken.
func slowPollConfig() coordination.Config {
	return coordination.Config{
		TTL:             10 * time.Minute,
		RenewInterval:   time.Second,
		RetryInterval:   10 * time.Minute,
		ShutdownTimeout: 5 * time.Second,
	}
}

// hasWakeups reports whether the target's database has release
// notifications by default: every one but PostgreSQL behind a transaction
// pooler, where LISTEN cannot work.
func hasWakeups(b *bundle) bool { return !b.target.Pooled }

// listening reports whether wake-ups arrive at c (RenewalState.Listening).
func listening(c *running) bool { return c.Renewal().Listening }

// waitListening waits until every coordinator listens for wake-ups.
func waitListening(t testing.TB, cs ...*running) {
	t.Helper()
	for _, c := range cs {
		waitListenState(t, c, func() bool { return listening(c) }, "listening for wake-ups")
	}
}

// waitListenState waits, at most wait, until ok holds, looking again every
// 5ms (ok looks at c's Renewal, or at its logs).
func waitListenState(t testing.TB, c *running, ok func() bool, what string) {
	t.Helper()
	waitListenStateFor(t, c, ok, what, wait)
}

// waitListenStateFor is waitListenState with a bound of its own.
func waitListenStateFor(t testing.TB, c *running, ok func() bool, what string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s within %v", c.Holder(), what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// campaignAfterRound starts a Campaign of e on c and waits until c has run
// a round for it, which found the lease held: c's EventLeaderChanged for
// the lease, naming a live holder. The lease arrives on the returned
// channel (nil on failure).
func campaignAfterRound(t *testing.T, c *running, e *coordination.Election, limit time.Duration) <-chan *coordination.Lease {
	t.Helper()
	events := c.Subscribe(t.Context(), 64)
	rounds := make(chan struct{}, 1)
	go func() {
		for ev := range events {
			if ev.Kind == coordination.EventLeaderChanged && ev.Key == e.Key() && ev.Holder != "" && ev.Holder != c.Holder() {
				select {
				case rounds <- struct{}{}:
				default:
				}
			}
		}
	}()
	got := make(chan *coordination.Lease, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Errorf("follower Campaign: %v", err)
		}
		got <- l
	}()
	select {
	case <-rounds:
	case <-time.After(wait):
		t.Fatalf("no campaign round within %v", wait)
	}
	return got
}

// caseReleaseWakesFollower: with a poll of ten minutes, a follower takes a
// released lease within the test's bound, so the release woke it.
func caseReleaseWakesFollower(t *testing.T, b *bundle) {
	if !hasWakeups(b) {
		t.Skipf("%s has no release notifications; followers poll (docs/operations.md)", b.target.Name)
	}
	a := start(t, b.db, "node-a", slowPollConfig())
	f := start(t, b.db, "node-f", slowPollConfig())
	waitListening(t, a, f)
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "wake"))
	got := campaignAfterRound(t, f, election(t, f.Coordinator, coordination.GlobalScope, "wake"), wait)
	releasedAt := time.Now()
	release(t, l)
	if l2 := successor(t, got, l, "follower"); l2 != nil {
		t.Logf("LOUD: %s: release to follower's acquire: %v (poll %v)", b.target.Name, time.Since(releasedAt).Round(time.Microsecond), f.Config().RetryInterval)
		release(t, l2)
	}
}

// successor waits, at most wait, for the lease the follower's Campaign
// got after l was released, and checks that it is the next term. It
// returns nil when the Campaign failed (reported already).
func successor(t *testing.T, got <-chan *coordination.Lease, l *coordination.Lease, who string) *coordination.Lease {
	t.Helper()
	select {
	case l2 := <-got:
		if l2 != nil && l2.Epoch() != l.Epoch()+1 {
			t.Fatalf("%s epoch %d, want %d", who, l2.Epoch(), l.Epoch()+1)
		}
		return l2
	case <-time.After(wait):
		t.Fatalf("%s did not take the released lease within %v", who, wait)
		return nil
	}
}

// caseLostWakeupOnlyDelays: a follower that gets no wake-up still takes a
// released lease at its next poll, with the next epoch. On the databases of
// peer wake-ups (MySQL, MariaDB, SQL Server) it listens but advertises an
// address that reaches nothing (a closed port of the loopback), so the
// wake-up the release sends it is lost on the way; elsewhere it does not
// listen (DisableNotifications), and the release's notification reaches
// it not. Its rounds are its reads of the lease, which a counting logger on
// its handle sees. Package coordination's TestWakeups/*/LostWakeupOnlyDelays
// also drops wake-ups on arrival and delivers some for nothing.
func caseLostWakeupOnlyDelays(t *testing.T, b *bundle) {
	cfg := slowPollConfig()
	cfg.RetryInterval = 2 * time.Second
	a := start(t, b.db, "node-a", cfg)
	fcfg := cfg
	peer := b.target.Dialect == "mysql" || b.target.Dialect == "sqlserver"
	if peer {
		fcfg.WakeAdvertise = []string{"127.0.0.1:9"} // discard: no process of the test listens there
	} else {
		fcfg.DisableNotifications = true
	}
	cl := &countingLogger{}
	rounds := make(chan time.Time, 64)
	watch := func(st sentStmt) {
		if names, ok := campaignRead(st.sql); ok && names > 0 && strings.Contains(st.sql, "global/lost") && st.err == nil {
			select {
			case rounds <- time.Now():
			default:
			}
		}
	}
	cl.watch.Store(&watch)
	f := start(t, b.db.Session(&gorm.Session{Logger: cl}), "node-f", fcfg)
	if hasWakeups(b) {
		waitListening(t, a)
		if peer {
			waitListening(t, f) // it listens; what is sent to it does not arrive
		}
	}
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "lost"))
	got := make(chan *coordination.Lease, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		l2, err := election(t, f.Coordinator, coordination.GlobalScope, "lost").Campaign(ctx)
		if err != nil {
			t.Errorf("follower Campaign: %v", err)
		}
		got <- l2
	}()
	var lastRound time.Time
	select {
	case lastRound = <-rounds: // the campaign's first round: it found the lease held
	case <-time.After(wait):
		t.Fatalf("the follower ran no round within %v", wait)
	}
	select {
	case l2 := <-got:
		t.Fatalf("follower acquired epoch %v while the leader holds epoch %d", l2, l.Epoch())
	default:
	}
	release(t, l)
	if l2 := successor(t, got, l, "follower without wake-ups"); l2 != nil {
		// Its next poll comes at least RetryInterval after its last round;
		// a slow machine only makes it later.
		if took := time.Since(lastRound); took < cfg.RetryInterval/2 {
			t.Fatalf("follower took the lease %v after its last round, before its poll (%v): a lost wake-up woke it", took, cfg.RetryInterval)
		}
		release(t, l2)
	}
}

// caseFallbackWhenListenFails: when the database refuses what listening
// needs, or the peer wake-ups cannot bind their address, the coordinator
// says so in one warning, keeps retrying quietly, and its followers poll.
func caseFallbackWhenListenFails(t *testing.T, b *bundle) {
	if !hasWakeups(b) {
		t.Skipf("%s has no release notifications to fall back from", b.target.Name)
	}
	refuse := func(db *gorm.DB) {
		q := db.Statement.SQL.String()
		if strings.HasPrefix(q, "LISTEN") || strings.Contains(q, "pragma_database_list") {
			_ = db.AddError(errors.New("refused by the test"))
		}
	}
	if err := b.db.Callback().Raw().Before("gorm:raw").Register("test:refuse-listen", refuse); err != nil {
		t.Fatal(err)
	}
	if err := b.db.Callback().Row().Before("gorm:row").Register("test:refuse-listen", refuse); err != nil {
		t.Fatal(err)
	}
	core, logs := zapobserver.New(zapcore.DebugLevel)
	cfg := slowPollConfig()
	cfg.RetryInterval = 300 * time.Millisecond
	cfg.Logger = zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core()))
	cfg.WakeAddress = "192.0.2.1:0" // TEST-NET-1: no interface of this host has it
	f := start(t, b.db, "node-f", cfg)
	a := start(t, b.db, "node-a", slowPollConfig())

	unavailable := func() int {
		return logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("release notifications unavailable").Len()
	}
	waitListenState(t, f, func() bool { return unavailable() > 0 }, "warning that notifications are unavailable")
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "fallback"))
	got := campaignAfterRound(t, f, election(t, f.Coordinator, coordination.GlobalScope, "fallback"), wait)
	release(t, l)
	select {
	case l2 := <-got:
		if l2 != nil {
			release(t, l2)
		}
	case <-time.After(wait):
		t.Fatalf("follower without notifications did not take the released lease within %v (poll %v)", wait, cfg.RetryInterval)
	}
	if listening(f) {
		t.Fatal("the coordinator reports listening though it cannot")
	}
	if n := unavailable(); n != 1 {
		t.Fatalf("%d warnings that notifications are unavailable, want 1 however often it retries", n)
	}
}

// listenProbeBound bounds the wait for a coordinator to give up listening
// behind a transaction pooler: pgnotify waits 30 s for its probe
// notification, plus the test's usual bound.
const listenProbeBound = 30*time.Second + wait

// caseFallbackBehindTransactionPooler: behind PgBouncer in transaction
// mode, LISTEN holds only for the transaction it ran in, and a
// notification to the listening connection never reaches it. The
// coordinator must notice (pgnotify's probe from another connection does
// not arrive), say so in one warning, never report listening, and its
// follower must take a released lease at its poll.
func caseFallbackBehindTransactionPooler(t *testing.T, b *bundle) {
	if !b.target.Pooled {
		t.Skipf("%s is not behind a transaction pooler", b.target.Name)
	}
	core, logs := zapobserver.New(zapcore.DebugLevel)
	cfg := slowPollConfig()
	cfg.RetryInterval = 300 * time.Millisecond
	cfg.Logger = zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core()))
	f := start(t, b.db, "node-f", cfg)
	a := start(t, b.db, "node-a", slowPollConfig())

	unavailable := func() int {
		return logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("release notifications unavailable").Len()
	}
	deadline := time.Now().Add(listenProbeBound)
	for unavailable() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no warning that notifications are unavailable within %v", listenProbeBound)
		}
		if listening(f) {
			t.Fatal("the coordinator reports listening behind a transaction pooler")
		}
		time.Sleep(5 * time.Millisecond)
	}
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "fallback"))
	got := campaignAfterRound(t, f, election(t, f.Coordinator, coordination.GlobalScope, "fallback"), wait)
	release(t, l)
	select {
	case l2 := <-got:
		if l2 != nil {
			release(t, l2)
		}
	case <-time.After(wait):
		t.Fatalf("follower behind the pooler did not take the released lease within %v (poll %v)", wait, cfg.RetryInterval)
	}
	if listening(f) {
		t.Fatal("the coordinator reports listening behind a transaction pooler")
	}
	if n := unavailable(); n != 1 {
		t.Fatalf("%d warnings that notifications are unavailable, want 1 however often it retries", n)
	}
}

// casePoolRebalancesOnWakeup: with a pool poll of ten minutes, a join and a
// graceful leave rebalance the pool within the test's bound, and no index
// is held twice at once. A third member's join and leave go through the
// collector: the acknowledgement of the member that neither published nor
// collects wakes only the first member of the list, which wakes the
// others once it has every acknowledgement.
func casePoolRebalancesOnWakeup(t *testing.T, b *bundle) {
	if !hasWakeups(b) {
		t.Skipf("%s has no release notifications; members poll", b.target.Name)
	}
	rec := newRecorder()
	pcfg := coordination.PoolConfig{PollInterval: 10 * time.Minute}
	run := func(node string) (*running, context.CancelFunc, chan struct{}) {
		r := start(t, b.db, node, slowPollConfig())
		waitListening(t, r)
		p, err := r.Pool(coordination.GlobalScope, "wake", pcfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, leave := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.Run(ctx, rec.fn(r.Identity().Instance), nil)
		}()
		t.Cleanup(func() {
			leave()
			select {
			case <-done:
			case <-time.After(wait):
				t.Errorf("Pool.Run of %s did not return", node)
			}
		})
		return r, leave, done
	}
	run("node-a")
	rec.waitSettled(t, 1, wait)

	start := time.Now()
	_, leaveB, doneB := run("node-b")
	rec.waitSettled(t, 2, wait)
	join := time.Since(start)

	start = time.Now()
	_, leaveC, doneC := run("node-c")
	rec.waitSettled(t, 3, wait)
	join3 := time.Since(start)
	start = time.Now()
	leaveC()
	<-doneC
	rec.waitSettled(t, 2, wait)
	leave3 := time.Since(start)

	start = time.Now()
	leaveB()
	<-doneB
	rec.waitSettled(t, 1, wait)
	leave := time.Since(start)

	rec.check(t)
	t.Logf("LOUD: %s: pool rebalance with a 10m poll: join %v, graceful leave %v; of a third member: join %v, leave %v",
		b.target.Name, join.Round(time.Millisecond), leave.Round(time.Millisecond),
		join3.Round(time.Millisecond), leave3.Round(time.Millisecond))
}

// caseNoListeningOnAOneConnectionPool: a pool capped at one open
// connection is never taken by listening; the leases are renewed as
// without notifications.
func caseNoListeningOnAOneConnectionPool(t *testing.T, b *bundle) {
	if b.target.Dialect != "postgres" {
		t.Skip("only PostgreSQL listens on a connection of the pool")
	}
	sqlDB, err := b.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1)
	cfg := b.fastConfig()
	cfg.TTL, cfg.Margin = 10*time.Second, 2*time.Second
	r := start(t, b.db, "node-a", cfg)
	renews := renewSignal(t, r)
	l := mustCampaign(t, election(t, r.Coordinator, coordination.GlobalScope, "one-conn"))
	for range 3 {
		select {
		case <-renews:
		case <-time.After(wait):
			t.Fatalf("no renewal within %v on a pool of one connection", wait)
		}
	}
	if !l.Valid() || listening(r) {
		t.Fatalf("lease valid %v, listening %v; want valid and not listening", l.Valid(), listening(r))
	}
	release(t, l)
}

// casePostgresWithAndWithoutPGNotify: on PostgreSQL a process without
// pgnotify (peer wake-ups) and one with it (LISTEN) wake each other: with
// a poll of ten minutes, each takes the lease the other released within
// the test's bound, and neither warns about its wake-ups.
func casePostgresWithAndWithoutPGNotify(t *testing.T, b *bundle) {
	if b.target.Dialect != "postgres" || b.target.Pooled {
		t.Skip("only PostgreSQL has two transports, and LISTEN does not work behind a transaction pooler")
	}
	core, logs := zapobserver.New(zapcore.WarnLevel)
	cfg := slowPollConfig()
	cfg.Logger = zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core()))
	p := startWithoutPGNotify(t, b.db, "node-p", cfg)
	cfg.Notifications = pgnotify.New()
	n := start(t, b.db, "node-n", cfg)
	waitListening(t, p, n)

	handOff := func(from, to *running, who string) {
		t.Helper()
		l := mustCampaign(t, election(t, from.Coordinator, coordination.GlobalScope, "mixed"))
		got := campaignAfterRound(t, to, election(t, to.Coordinator, coordination.GlobalScope, "mixed"), wait)
		release(t, l)
		if l2 := successor(t, got, l, who); l2 != nil {
			release(t, l2)
		}
	}
	handOff(p, n, "the follower with pgnotify, woken by a release without it")
	handOff(n, p, "the follower without pgnotify, woken by a release with it")
	if lines := logs.All(); len(lines) != 0 {
		t.Fatalf("%d warnings or errors, want none; the first: %s", len(lines), lines[0].Message)
	}
}

// startWithoutPGNotify is start with cfg as given: on PostgreSQL, peer
// wake-ups, where start sets pgnotify as a service on PostgreSQL would.
func startWithoutPGNotify(t *testing.T, db *gorm.DB, node string, cfg coordination.Config) *running {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	c, err := coordination.New(db, testIdentity(t, node), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return startCoordinator(t, c)
}

// caseListeningConnectionBreaks: a statement that gives up mid-query on
// the listening connection, which also carries the coordinator's reads,
// makes the driver close it. Only that statement fails: the one queued
// behind it runs on the pool, and listening starts again.
func caseListeningConnectionBreaks(t *testing.T, b *bundle) {
	if b.target.Dialect != "postgres" || b.target.Pooled {
		t.Skip("only PostgreSQL listens on a connection of the pool, and not behind a transaction pooler")
	}
	cfg := slowPollConfig()
	cfg.RetryInterval = 500 * time.Millisecond
	r := start(t, b.db, "node-a", cfg)
	waitListening(t, r)
	// The coordinator's reads, its Admin's included, go through its store,
	// and so through the listening connection (Coordinator.Admin shares
	// the coordinator's connections).
	tables := rawStore(t, b.db).Tables()
	read := func(ctx context.Context) error {
		_, err := r.Admin().Leases(ctx)
		return err
	}

	// Hold a lock that every read of the lease table waits for.
	lock := b.db.Begin()
	t.Cleanup(func() { lock.Rollback() })
	if err := lock.Exec("LOCK TABLE " + tables.Leases + " IN ACCESS EXCLUSIVE MODE").Error; err != nil {
		t.Fatalf("lock the lease table: %v", err)
	}
	// The first read gives up once it waits for the lock and the second
	// is queued behind it: its context is cancelled then, not at a
	// deadline that a busy machine could reach before the read waits.
	giveUp, cancelFirst := context.WithCancel(context.Background())
	defer cancelFirst()
	first := make(chan error, 1)
	go func() { first <- read(giveUp) }()
	waitLockWaiters(t, b.db, 1)
	second := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		second <- read(ctx)
	}()
	time.Sleep(200 * time.Millisecond) // lets the second read queue; it passes either way
	cancelFirst()
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the read that gave up: %v, want a context canceled", err)
		}
	case <-time.After(wait):
		t.Fatalf("the read whose context was cancelled did not return within %v", wait)
	}
	waitListenState(t, r, func() bool { return !listening(r) }, "no longer listening on the broken connection")
	if err := lock.Commit().Error; err != nil {
		t.Fatalf("unlock: %v", err)
	}
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("the read queued behind the one that gave up failed: %v", err)
		}
	case <-time.After(wait):
		t.Fatalf("the read queued behind the one that gave up did not return within %v", wait)
	}
	waitListening(t, r)
}

// waitLockWaiters waits, at most wait, until n backends of the database
// wait for a lock.
func waitLockWaiters(t *testing.T, db *gorm.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var waiting int
		if err := db.Raw("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&waiting).Error; err != nil {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends wait for a lock after %v, want %d", waiting, wait, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// casePostgresPeerWakeupsByDefault: on PostgreSQL without pgnotify, also
// behind a transaction pooler, the processes wake each other over UDP:
// with a poll of ten minutes, a follower takes a released lease within
// the test's bound.
func casePostgresPeerWakeupsByDefault(t *testing.T, b *bundle) {
	if b.target.Dialect != "postgres" {
		t.Skip("the other databases without a file have only the peer wake-ups")
	}
	cfg := slowPollConfig()
	a := startWithoutPGNotify(t, b.db, "node-a", cfg)
	f := startWithoutPGNotify(t, b.db, "node-f", cfg)
	waitListening(t, a, f)
	// Only the peer transport (wake.Peer) advertises where its process
	// receives, in a session row of its own (wake_addrs, wake_key).
	tables := rawStore(t, b.db).Tables()
	var adverts int64
	if err := b.db.Raw("SELECT count(*) FROM "+tables.Sessions+" WHERE holder = ? AND wake_addrs <> '' AND wake_key <> ''", f.Holder()).
		Scan(&adverts).Error; err != nil {
		t.Fatal(err)
	}
	if adverts == 0 {
		t.Fatalf("the follower without pgnotify advertises no peer wake-ups in a session row: its transport is not wake.Peer")
	}
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "peer"))
	got := campaignAfterRound(t, f, election(t, f.Coordinator, coordination.GlobalScope, "peer"), wait)
	release(t, l)
	if l2 := successor(t, got, l, "follower woken over UDP"); l2 != nil {
		release(t, l2)
	}
}
