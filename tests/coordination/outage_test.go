package coordination_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestDatabaseOutage stops and restarts the database under running
// coordinators. Each dialect gets a private server of its own, not the
// package's shared one, since these cases stop it; the cases of one dialect
// run one after another on that server, each on a fresh database. Subtest
// names are <dialect>/<Case>.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel() // see runCasesOn
	for _, kind := range []string{testdb.KindPostgres, testdb.KindMySQL} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := dedicatedServer(t, kind)
			for _, tc := range outageCases {
				t.Run(tc.name, func(t *testing.T) {
					t.Cleanup(func() {
						// A failed case may leave the server down; the
						// next case needs it up.
						if !srv.Running() {
							if err := srv.Start(); err != nil {
								t.Errorf("start the %s server again: %v", kind, err)
							}
						}
					})
					tc.fn(t, &outageEnv{srv: srv})
				})
			}
		})
	}
}

var outageCases = []struct {
	name string
	fn   func(t *testing.T, o *outageEnv)
}{
	{"DatabaseDownAtStart", caseDatabaseDownAtStart},
	{"DatabaseRestartUnderHolder", caseDatabaseRestartUnderHolder},
	{"DatabaseDownLongerThanTrust", caseDatabaseDownLongerThanTrust},
}

// outageEnv is what an outage case gets: its own server.
type outageEnv struct {
	srv *testdb.Server
}

// dedicatedServer starts a private server of the given kind (testdb.KindPostgres
// or testdb.KindMySQL, which are also the dialect names) for this test
// alone, and closes it when the test ends. It skips the test when the
// binaries are missing, or fails it when REQUIRE_DIALECTS names the dialect.
//
// When the dialect's tests run against an external server
// (testdb.External), it skips the test: they run on that server alone.
func dedicatedServer(t *testing.T, kind string) *testdb.Server {
	t.Helper()
	testdb.SkipExternal(t, kind)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var srv *testdb.Server
	var err error
	if kind == testdb.KindPostgres {
		srv, err = testdb.StartPostgres(ctx)
	} else {
		srv, err = testdb.StartMariaDB(ctx)
	}
	if errors.Is(err, testdb.ErrBinariesMissing) {
		if testdb.Required(kind) {
			t.Fatalf("testdb: %s requires the %s dialect, but it cannot be tested here: %v", testdb.RequireEnv, kind, err)
		}
		t.Skipf("LOUD: testdb: SKIPPING %s TEST: %v (set %s=%s to make this a failure)", kind, err, testdb.RequireEnv, kind)
	}
	if err != nil {
		t.Fatalf("start a dedicated %s server: %v", kind, err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close the dedicated %s server: %v", kind, err)
		}
	})
	return srv
}

// database creates a fresh database on the server, which must be running,
// and returns a driver name for dbopen and a DSN for it.
func (o *outageEnv) database(t *testing.T, name string) (driver, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := o.srv.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	if o.srv.Kind() == testdb.KindMySQL {
		return dbopen.MySQL, o.srv.DSN(name) + "?parseTime=true&loc=UTC"
	}
	return dbopen.Postgres, o.srv.DSN(name)
}

// outageOpen opens a gorm handle with dbopen, closed when the test ends.
// dbopen never connects on open, so this works while the server is down.
func outageOpen(t *testing.T, driver, dsn string) *gorm.DB {
	t.Helper()
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatalf("open %s database: %v", driver, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	return db
}

func stopServer(t *testing.T, srv *testdb.Server) {
	t.Helper()
	if err := srv.Stop(); err != nil {
		t.Fatalf("stop the %s server: %v", srv.Kind(), err)
	}
}

func startServer(t *testing.T, srv *testdb.Server) {
	t.Helper()
	if err := srv.Start(); err != nil {
		t.Fatalf("start the %s server: %v", srv.Kind(), err)
	}
}

// stillRunning fails the test if Run has returned.
func stillRunning(t *testing.T, r *running) {
	t.Helper()
	select {
	case err := <-r.runErr:
		r.runErr <- err // for stop and cleanup
		t.Fatalf("Run returned during or after the outage: %v", err)
	case <-r.Done():
		t.Fatalf("Run has stopped")
	default:
	}
}

// campaignResult is what a Campaign started in a goroutine returned.
type campaignResult struct {
	l   *coordination.Lease
	err error
}

func campaignAsync(ctx context.Context, e *coordination.Election) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		l, err := e.Campaign(ctx)
		ch <- campaignResult{l, err}
	}()
	return ch
}

func caseDatabaseDownAtStart(t *testing.T, o *outageEnv) {
	driver, dsn := o.database(t, "outage_down_at_start")
	stopServer(t, o.srv)
	db := outageOpen(t, driver, dsn)
	cfg := fastConfig()
	cfg.Logger = zaptest.NewLogger(t)
	c, err := coordination.New(db, testIdentity(t, "node-a"), notifying(cfg))
	if err != nil {
		t.Fatalf("New with the database down: %v", err)
	}
	events := c.Subscribe(t.Context(), 256)
	r := launch(t, c)
	e := election(t, c, coordination.GlobalScope, "down-at-start")
	campCtx, campCancel := context.WithTimeout(context.Background(), 2*wait)
	defer campCancel()
	got := campaignAsync(campCtx, e)

	// Run keeps retrying and says so.
	ev := recvEvent(t, events, kindIs(coordination.EventError, ""))
	t.Logf("error reported while the database is down: %v", ev.Err)
	select {
	case <-c.Ready():
		t.Fatalf("ready with the database down")
	default:
	}
	stillRunning(t, r)

	startServer(t, o.srv)
	upAt := time.Now()
	select {
	case <-c.Ready():
	case err := <-r.runErr:
		t.Fatalf("Run returned instead of becoming ready: %v", err)
	case <-time.After(wait):
		t.Fatalf("not ready within %v of the database coming up", wait)
	}
	readyAfter := time.Since(upAt)
	var res campaignResult
	select {
	case res = <-got:
	case <-time.After(wait):
		t.Fatalf("campaign did not acquire within %v of the database coming up", wait)
	}
	if res.err != nil {
		t.Fatalf("Campaign: %v", res.err)
	}
	l := res.l
	t.Logf("ready %v and leader %v after the database came up", readyAfter, time.Since(upAt))
	if l.Epoch() != 1 || !l.Valid() {
		t.Fatalf("lease %s valid=%v, want a valid first term", l.Token(), l.Valid())
	}
	if got := row(t, db, l.Key()); got.Holder != c.Holder() || got.Epoch != 1 || !got.Live() {
		t.Fatalf("row = %+v, want live, held by %s at epoch 1", got, c.Holder())
	}
	stillRunning(t, r)
	release(t, l)
	r.cancel()
	select {
	case err := <-r.runErr:
		if err != nil {
			t.Fatalf("Run = %v, want nil after cancellation", err)
		}
	case <-time.After(wait):
		t.Fatalf("Run did not return within %v of cancellation", wait)
	}
}

// pollSignalStore reports every successful campaign read.
type pollSignalStore struct {
	dbStore
	polls chan struct{}
}

func (p *pollSignalStore) Get(ctx context.Context, names []string) ([]store.Row, error) {
	rows, err := p.dbStore.Get(ctx, names)
	if err == nil {
		select {
		case p.polls <- struct{}{}:
		default:
		}
	}
	return rows, err
}

// waitPolls waits for n successful campaign reads that began after the call.
func waitPolls(t *testing.T, polls chan struct{}, n int) {
	t.Helper()
	waitPollsOrCampaign(t, polls, n, nil)
}

// waitPollsOrCampaign is waitPolls for a follower that may also win:
// it returns early, with took set, if the campaign returns first. A nil
// campaign never does.
func waitPollsOrCampaign(t *testing.T, polls chan struct{}, n int, campaign <-chan campaignResult) (res campaignResult, took bool) {
	t.Helper()
	for len(polls) > 0 { // reads from before
		<-polls
	}
	for range n + 1 { // one may have been under way already
		select {
		case <-polls:
		case res = <-campaign:
			return res, true
		case <-time.After(wait):
			if campaign == nil {
				t.Fatalf("follower did not read the lease within %v", wait)
			}
			t.Fatalf("follower neither read the lease nor took it within %v", wait)
		}
	}
	select {
	case res = <-campaign:
		return res, true
	default:
		return campaignResult{}, false
	}
}

// renewResult is one renewal attempt, as Coordinator.Renewal shows it
// (watchRenewals): when it succeeded, or when its failure was seen.
type renewResult struct {
	at  time.Time
	err error
}

// renewResults reports every renewal attempt of r's renewal loop from now
// on.
func renewResults(t testing.TB, r *running) <-chan renewResult {
	ch := make(chan renewResult, 256)
	renewals := watchRenewals(t, r.Coordinator)
	go func() {
		for rs := range renewals {
			select {
			case ch <- renewResult{at: rs.at, err: rs.err}:
			default:
			}
		}
	}()
	return ch
}

// recvRenew waits for the first renewal attempt that matches.
func recvRenew(t *testing.T, ch <-chan renewResult, what string, match func(renewResult) bool) renewResult {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case rr := <-ch:
			if match(rr) {
				return rr
			}
		case <-deadline:
			t.Fatalf("no %s within %v", what, wait)
		}
	}
}

func caseDatabaseRestartUnderHolder(t *testing.T, o *outageEnv) {
	cfg := coordination.Config{
		TTL:             6 * time.Second,
		RenewInterval:   time.Second,
		RetryInterval:   200 * time.Millisecond,
		Margin:          time.Second,
		ShutdownTimeout: 5 * time.Second,
	}
	// The holder keeps the term if its first successful renewal after the
	// restart starts before its trust deadline. Its last successful one
	// before the outage started at most RenewInterval before the server
	// went down. After the restart, an attempt begun while the server was
	// starting may hang until its timeout (at most RenewInterval), and a
	// pooled connection from before the restart may fail once more; each
	// failure is retried within the backoff, at most RetryInterval. So the
	// term is kept for any outage shorter than this:
	trustSlack := cfg.TTL - cfg.Margin - 2*cfg.RenewInterval - 2*cfg.RetryInterval

	driver, dsn := o.database(t, "outage_restart_under_holder")
	db := outageOpen(t, driver, dsn)
	a := start(t, db, "node-a", cfg)
	bcfg := cfg
	bcfg.Logger = zaptest.NewLogger(t)
	bcfg = withDefaults(t, notifying(bcfg))
	ps := &pollSignalStore{dbStore: storeFor(t, db, bcfg), polls: make(chan struct{}, 64)}
	b := startCoordinator(t, newCoordinator(t, ps, testIdentity(t, "node-b"), bcfg))

	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "restart"))
	events := a.Subscribe(t.Context(), 256)
	renews := renewResults(t, a)
	bctx, bcancel := context.WithCancel(context.Background())
	defer bcancel()
	bgot := campaignAsync(bctx, election(t, b.Coordinator, coordination.GlobalScope, "restart"))
	waitPolls(t, ps.polls, 1) // the follower is campaigning and sees the holder
	recvRenew(t, renews, "successful renewal", func(rr renewResult) bool { return rr.err == nil })

	stopAt := time.Now()
	stopServer(t, o.srv)
	downAt := time.Now() // the server process has exited
	// Renewal attempts run one after another, so the first success after
	// a failure that ended while the server was gone ran on the restarted
	// server (maybe a little before Start returned: the server accepts
	// connections before Start's readiness probe sees it).
	failed := recvRenew(t, renews, "failed renewal while the server is down", func(rr renewResult) bool {
		return rr.err != nil && rr.at.After(downAt)
	})
	t.Logf("renewal during the outage failed: %v", failed.err)
	startServer(t, o.srv)
	upAt := time.Now()
	outage := upAt.Sub(stopAt)
	var ok renewResult
	deadline := time.After(wait)
await:
	for {
		select {
		case rr := <-renews:
			if rr.err == nil {
				ok = rr
				break await
			}
		case <-l.Context().Done():
			if outage < trustSlack {
				t.Fatalf("holder lost the term over a %v restart (it keeps it for restarts under %v): %v",
					outage, trustSlack, context.Cause(l.Context()))
			}
			break await
		case <-deadline:
			t.Fatalf("no successful renewal within %v of the restart", wait)
		}
	}
	if !ok.at.IsZero() {
		t.Logf("outage %v (stop, a failed renewal, start); first successful renewal %v after the server was up",
			outage.Round(time.Millisecond), ok.at.Sub(upAt).Round(time.Millisecond))
	}
	if outage >= trustSlack {
		t.Logf("LOUD: the outage (%v) was not shorter than TTL - Margin - 2*RenewInterval - 2*RetryInterval (%v): "+
			"keeping the term is not guaranteed, so only safety is checked (term valid=%v)", outage, trustSlack, l.Valid())
		// The holder's term may have ended, so the follower may take the
		// lease and stop reading it: wait for its looks or its term.
		if res, took := waitPollsOrCampaign(t, ps.polls, 3, bgot); took && res.err == nil {
			if l.Valid() || res.l.Epoch() <= l.Epoch() {
				t.Fatalf("follower took %s while the holder's %s is valid=%v", res.l.Token(), l.Token(), l.Valid())
			}
			release(t, res.l)
		}
		stillRunning(t, a)
		stillRunning(t, b)
		release(t, l)
		return
	}
	// Give the follower some looks at the lease after the restart.
	waitPolls(t, ps.polls, 3)
	stillRunning(t, a)
	stillRunning(t, b)

	if !l.Valid() || l.Context().Err() != nil {
		t.Fatalf("holder lost the term over a %v restart: valid=%v cause=%v",
			outage, l.Valid(), context.Cause(l.Context()))
	}
	got := row(t, db, l.Key())
	if got.Holder != a.Holder() || got.Epoch != l.Epoch() || !got.Live() {
		t.Fatalf("row after the restart = %+v, want live, held by %s at the same epoch %d", got, a.Holder(), l.Epoch())
	}
	select {
	case res := <-bgot:
		t.Fatalf("follower acquired across the restart: %v %v", res.l, res.err)
	default:
	}
	sawError := false
	for drained := false; !drained; {
		select {
		case ev := <-events:
			switch ev.Kind {
			case coordination.EventLost:
				t.Fatalf("holder reported the term lost over a %v restart: %v", outage, ev.Err)
			case coordination.EventError:
				sawError = true
			}
		default:
			drained = true
		}
	}
	if !sawError {
		t.Fatalf("no EventError from the failed renewals")
	}
	bcancel()
	select {
	case res := <-bgot:
		if res.err == nil {
			t.Fatalf("follower acquired %s", res.l.Token())
		}
	case <-time.After(wait):
		t.Fatalf("follower's Campaign did not return within %v of cancellation", wait)
	}
	release(t, l)
}

func caseDatabaseDownLongerThanTrust(t *testing.T, o *outageEnv) {
	cfg := fastConfig()
	driver, dsn := o.database(t, "outage_down_longer_than_trust")
	db := outageOpen(t, driver, dsn)
	a := start(t, db, "node-a", cfg)
	events := a.Subscribe(t.Context(), 256)
	e := election(t, a.Coordinator, coordination.GlobalScope, "long-outage")

	terms := make(chan *coordination.Lease, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	go func() {
		runDone <- e.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
			terms <- l
			<-ctx.Done()
			return nil
		}, nil)
	}()
	recvLease := func(what string) *coordination.Lease {
		t.Helper()
		select {
		case l := <-terms:
			return l
		case err := <-runDone:
			t.Fatalf("Election.Run returned: %v", err)
		case <-time.After(wait):
			t.Fatalf("no %s within %v", what, wait)
		}
		return nil
	}
	l1 := recvLease("first term")

	stopServer(t, o.srv)
	stoppedAt := time.Now()
	select {
	case <-l1.Context().Done():
	case <-time.After(wait):
		t.Fatalf("the term did not end within %v of the database going down", wait)
	}
	if cause := context.Cause(l1.Context()); !errors.Is(cause, coordination.ErrLeaseLost) {
		t.Fatalf("cause = %v, want ErrLeaseLost", cause)
	}
	ev := recvEvent(t, events, kindIs(coordination.EventLost, l1.Key()))
	if ev.Epoch != l1.Epoch() || !errors.Is(ev.Err, coordination.ErrLeaseLost) {
		t.Fatalf("lost event %+v, want epoch %d with ErrLeaseLost", ev, l1.Epoch())
	}
	if l1.Valid() {
		t.Fatalf("lost term still valid")
	}
	if err := l1.Check(); !errors.Is(err, coordination.ErrLeaseLost) {
		t.Fatalf("Check = %v, want ErrLeaseLost", err)
	}
	t.Logf("term ended %v after the server was down (trust window TTL - Margin = %v): %v",
		ev.Time.Sub(stoppedAt).Round(time.Millisecond), cfg.TTL-cfg.Margin, ev.Err)
	// Still down: the coordinator keeps campaigning and reports the failures.
	recvEvent(t, events, kindIs(coordination.EventError, ""))
	stillRunning(t, a)

	startServer(t, o.srv)
	upAt := time.Now()
	l2 := recvLease("term after the database came back")
	t.Logf("leader again %v after the database came back, down for %v in all", time.Since(upAt).Round(time.Millisecond),
		upAt.Sub(stoppedAt).Round(time.Millisecond))
	if l2.Epoch() <= l1.Epoch() {
		t.Fatalf("new term epoch %d, want above the lost %d", l2.Epoch(), l1.Epoch())
	}
	if got := row(t, db, l2.Key()); got.Holder != a.Holder() || got.Epoch != l2.Epoch() || !got.Live() {
		t.Fatalf("row = %+v, want live, held by %s at epoch %d", got, a.Holder(), l2.Epoch())
	}
	if !l2.Valid() {
		t.Fatalf("new term not valid: %v", l2.Check())
	}
	stillRunning(t, a)
	cancel()
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("Election.Run = %v, want nil after cancellation", err)
		}
	case <-time.After(wait):
		t.Fatalf("Election.Run did not return within %v of cancellation", wait)
	}
	if got := row(t, db, l2.Key()); got.Holder != "" {
		t.Fatalf("the term was not released after Election.Run returned: %+v", got)
	}
}
