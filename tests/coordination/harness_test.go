package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"go.uber.org/zap/zaptest"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/memstore"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgnotify"
)

// wait bounds every wait in these tests. It is generous: it only decides
// how long a broken build takes to fail, never whether a healthy one passes.
const wait = 20 * time.Second

// fastConfig is a config with short timings so tests that need a lease to
// expire by the database clock finish quickly.
func fastConfig() coordination.Config {
	return coordination.Config{
		TTL:             1200 * time.Millisecond,
		RenewInterval:   200 * time.Millisecond,
		RetryInterval:   100 * time.Millisecond,
		Margin:          300 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second,
	}
}

// slowScale is how much wider the time bounds of fastConfig are on a
// target whose statements wait for more than their own server: a
// replicated one (testdb.Target.Replicated), whose commits wait for other
// servers, and a pooled one (testdb.Target.Pooled), whose transactions
// queue for one of the pooler's few server connections
// (testdb.PgBouncerPoolSize), which every process of a case shares.
const slowScale = 2

// fastConfig is the package's fastConfig for the case's target: on a
// replicated or pooled target every interval and the TTL are slowScale
// times as long, so that a statement slowed by a busy machine still fits a
// round and a renewal still fits the trust window, and the processes of a
// case poll half as often. ShutdownTimeout stays.
func (b *bundle) fastConfig() coordination.Config {
	cfg := fastConfig()
	if b.target.Replicated || b.target.Pooled {
		cfg.TTL *= slowScale
		cfg.RenewInterval *= slowScale
		cfg.RetryInterval *= slowScale
		cfg.Margin *= slowScale
	}
	return cfg
}

// steady is cfg with a trust window no busy machine exhausts: a TTL of a
// minute and a margin of 10 s, its intervals unchanged. A case that
// asserts no second holder ever appears takes it, so that a lease lapsing
// under load, after which another process takes it legitimately, cannot
// pass for a second holder; so does a case that only needs its leases to
// stay held while it looks at them.
func steady(cfg coordination.Config) coordination.Config {
	cfg.TTL, cfg.Margin = time.Minute, 10*time.Second
	return cfg
}

// notifying is cfg with PostgreSQL's release notifications (package
// pgnotify), as a service on PostgreSQL sets them, unless the test chose
// its own; other databases ignore the setting.
func notifying(cfg coordination.Config) coordination.Config {
	if cfg.Notifications == nil {
		cfg.Notifications = pgnotify.New()
	}
	return cfg
}

// bundle is what a conformance case gets.
type bundle struct {
	t      *testing.T
	target testdb.Target
	db     *gorm.DB
}

// runCases runs every case once per database target. Targets run in
// parallel; the cases of one target run one after another, each on a
// fresh, empty database.
func runCases(t *testing.T, cases []conformanceCase) {
	t.Helper()
	runCasesOn(t, testdb.Targets(), cases)
}

// runCasesOn is runCases on the given targets.
//
// Of the package's tests on real databases, TestConformance, the longest,
// runs first, beside the unit tests and no other. Every other one calls
// t.Parallel itself, so that they run together once it has ended (at
// most go test -parallel at once), instead of each waiting for the
// slowest target of the one before.
func runCasesOn(t *testing.T, targets []testdb.Target, cases []conformanceCase) {
	t.Helper()
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					if tg.Name == testdb.GaleraTarget.Name {
						tc.fn(t, &bundle{t: t, target: tg, db: openSpread(t)})
						return
					}
					tc.fn(t, &bundle{t: t, target: tg, db: tg.Open(t)})
				})
			}
		})
	}
}

type conformanceCase struct {
	name string
	fn   func(t *testing.T, b *bundle)
}

// testIdentity returns an identity with a readable node name.
func testIdentity(t testing.TB, node string) identity.Identity {
	t.Helper()
	id, err := identity.New(node, "test")
	if err != nil {
		t.Fatalf("identity.New(%q): %v", node, err)
	}
	return id
}

// running is a coordinator started by a test.
type running struct {
	*coordination.Coordinator
	cancel context.CancelFunc
	runErr chan error
}

// Identity returns the identity the coordinator was built with, as its
// holder string ("node/cluster/instance") says.
func (r *running) Identity() identity.Identity { return identityOf(r.Coordinator) }

// identityOf returns the identity c was built with, parsed from its holder
// string.
func identityOf(c *coordination.Coordinator) identity.Identity {
	id, err := identity.ParseHolder(c.Holder())
	if err != nil {
		panic(fmt.Sprintf("the holder %q of a coordinator does not parse: %v", c.Holder(), err))
	}
	return id
}

// spread maps the handle a case gets on a cluster (openSpread) to handles
// on each node of it, which start hands to the processes it starts in
// turn, so that they talk to different nodes.
var spread sync.Map // *gorm.DB -> *spreadNodes

// spreadNodes are the handles on each node of a cluster, and the turn.
// The first process gets the case's own handle, so that a case that
// watches its statements sees the first process's.
type spreadNodes struct {
	synced *gorm.DB
	nodes  []*gorm.DB
	next   atomic.Int64
}

// openSpread gives the case a fresh database on the Galera cluster: a
// handle on node 0 whose reads see every commit of the cluster, for the
// case's own reads and writes, while the processes start gives it run on
// the nodes in turn (the first on the case's handle, the next on node 1,
// then 2, 0, ...), as processes connected to different nodes do.
func openSpread(t *testing.T) *gorm.DB {
	t.Helper()
	synced, nodes := testdb.OpenGalera(t)
	spread.Store(synced, &spreadNodes{synced: synced, nodes: nodes})
	t.Cleanup(func() { spread.Delete(synced) })
	return synced
}

// onNode returns the handle a process started on db uses: on a cluster
// (openSpread), one on the next node in turn; else db itself.
func onNode(db *gorm.DB) *gorm.DB {
	v, ok := spread.Load(db)
	if !ok {
		return db
	}
	sn := v.(*spreadNodes)
	turn := int(sn.next.Add(1) - 1)
	if turn == 0 {
		return sn.synced
	}
	return sn.nodes[turn%len(sn.nodes)]
}

// settle waits, on a cluster (openSpread), until every node has applied
// what the cluster has committed so far, so that a process's next read on
// any node sees it: Galera certifies a commit on every node but applies it
// on each in its own time. Elsewhere it does nothing.
func settle(t testing.TB, db *gorm.DB) {
	t.Helper()
	v, ok := spread.Load(db)
	if !ok {
		return
	}
	for i, node := range v.(*spreadNodes).nodes {
		err := node.Connection(func(conn *gorm.DB) error {
			if err := conn.Exec("SET SESSION wsrep_sync_wait = 1").Error; err != nil {
				return err
			}
			var one int
			if err := conn.Raw("SELECT 1").Scan(&one).Error; err != nil {
				return err
			}
			return conn.Exec("SET SESSION wsrep_sync_wait = 0").Error
		})
		if err != nil {
			t.Fatalf("settle: wait for node %d to apply the cluster's commits: %v", i, err)
		}
	}
}

// start creates and runs a coordinator on db and waits until it is ready.
// On a cluster each coordinator started on the case's handle runs on the
// next node (onNode).
func start(t testing.TB, db *gorm.DB, node string, cfg coordination.Config) *running {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	c, err := coordination.New(onNode(db), testIdentity(t, node), notifying(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return startCoordinator(t, c)
}

// launch runs c until the test ends, without waiting for it to be ready.
func launch(t testing.TB, c *coordination.Coordinator) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Coordinator: c, cancel: cancel, runErr: make(chan error, 1)}
	go func() { r.runErr <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.Done():
		case <-time.After(wait):
			t.Errorf("coordinator %s did not stop within %v", c.Holder(), wait)
		}
	})
	return r
}

// startCoordinator runs c until the test ends and waits until it is ready.
func startCoordinator(t testing.TB, c *coordination.Coordinator) *running {
	t.Helper()
	r := launch(t, c)
	select {
	case <-c.Ready():
	case err := <-r.runErr:
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(wait):
		t.Fatalf("coordinator not ready within %v", wait)
	}
	return r
}

// mustCampaign campaigns and fails the test unless the lease comes within wait.
func mustCampaign(t testing.TB, e *coordination.Election) *coordination.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	l, err := e.Campaign(ctx)
	if err != nil {
		t.Fatalf("Campaign(%s): %v", e.Key(), err)
	}
	return l
}

func election(t testing.TB, c *coordination.Coordinator, scope coordination.Scope, name string) *coordination.Election {
	t.Helper()
	e, err := c.Election(scope, name)
	if err != nil {
		t.Fatalf("Election(%v, %q): %v", scope, name, err)
	}
	return e
}

func release(t testing.TB, l *coordination.Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release(%s): %v", l.Key(), err)
	}
}

// rawStore opens the store of db for direct checks.
func rawStore(t testing.TB, db *gorm.DB) dbStore {
	t.Helper()
	s, err := store.New(db, store.Options{})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	return newDBStore(s)
}

// row reads one lease row directly.
func row(t testing.TB, db *gorm.DB, name string) store.Row {
	t.Helper()
	rows, err := rawStore(t, db).Get(context.Background(), []string{name})
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	if len(rows) != 1 {
		t.Fatalf("Get(%q): %d rows, want 1", name, len(rows))
	}
	return rows[0]
}

// fencedTx opens a transaction on db whose fencing check locks the row of
// name, as a holder's fenced transaction does. The test ends it; if the
// test fails first, it is rolled back when the test ends.
func fencedTx(t testing.TB, db *gorm.DB, s dbStore, name string) *gorm.DB {
	t.Helper()
	tx := db.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	t.Cleanup(func() { _ = tx.Rollback() }) // after Commit or Rollback, a no-op that fails
	if _, ok, err := s.Fence(tx, name); err != nil || !ok {
		t.Fatalf("Fence(%s) = %v, %v", name, ok, err)
	}
	return tx
}

// expireNow makes a lease expired by the database clock, as if its holder
// had stopped renewing TTL ago: the session holding it expires (and with it
// every other lease of that session). It does not change holder or epoch.
//
// It reads the row back and expires it again while the same term still
// reads live: on a Galera node an applier can abort the update after it
// reported success (a brute-force abort the statement is not told of), and
// the row then stays as it was.
func expireNow(t testing.TB, db *gorm.DB, name string) {
	t.Helper()
	tables := rawStore(t, db).Tables()
	settle(t, db) // the update, on any node, sees the term to expire
	before := row(t, db, name)
	for attempt := 1; ; attempt++ {
		err := db.Exec("UPDATE "+tables.Sessions+" SET expires_at_us = 1 WHERE id IN (SELECT session_id FROM "+
			tables.Leases+" WHERE name = ?)", name).Error
		if err == nil {
			err = db.Exec("UPDATE "+tables.Leases+" SET expires_at_us = 1 WHERE name = ? AND session_id = ''", name).Error
		}
		switch {
		case err != nil && !lostRace(err):
			t.Fatalf("expire %q: %v", name, err)
		case err == nil:
			settle(t, db) // every process's next read, on any node, sees it expired
			after := row(t, db, name)
			if !after.Live() || after.Session != before.Session || after.Epoch != before.Epoch {
				return
			}
			err = fmt.Errorf("the term still reads live after the update: %+v", after)
		}
		if attempt == 5 {
			t.Fatalf("expire %q: still live in the same term after %d updates: %v", name, attempt, err)
		}
		t.Logf("expire %q: attempt %d: %v; expiring it again", name, attempt, err)
	}
}

// lostRace reports whether err is a statement that lost to a conflicting
// one and was rolled back: a MySQL deadlock or, on a Galera cluster, a
// failed certification (both ER_LOCK_DEADLOCK, 1213), as a holder's
// renewal on another node causes.
func lostRace(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}

// newSession starts a session of holder directly in the store, live for a
// minute.
func newSession(t testing.TB, s dbStore, holder string) string {
	t.Helper()
	id := holder + "-" + uuid.NewString()
	if err := s.CreateSession(context.Background(), id, holder, time.Minute); err != nil {
		t.Fatalf("CreateSession(%s): %v", holder, err)
	}
	return id
}

// acquireOne creates the row of name if needed and acquires it for the
// session, directly in the store.
func acquireOne(ctx context.Context, s dbStore, session, holder, name string) (int64, bool, error) {
	if err := s.EnsureRows(ctx, []string{name}); err != nil {
		return 0, false, err
	}
	terms, err := s.Acquire(ctx, session, holder, []string{name})
	if err != nil || len(terms) == 0 {
		return 0, false, err
	}
	return terms[0].Epoch, true, nil
}

// recvEvent waits for the first event matching match.
func recvEvent(t testing.TB, ch <-chan coordination.Event, match func(coordination.Event) bool) coordination.Event {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("event channel closed while waiting")
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no matching event within %v", wait)
		}
	}
}

func kindIs(k coordination.EventKind, lease string) func(coordination.Event) bool {
	return func(ev coordination.Event) bool { return ev.Kind == k && (lease == "" || ev.Key == lease) }
}

// faultStore wraps the real store and fails chosen operations while a
// switch is on; failAll fails every database operation, as for a process
// cut off from the database.
type faultStore struct {
	store.Backend
	failRenew   atomic.Bool
	failAcquire atomic.Bool
	failAll     atomic.Bool
	renewCalls  atomic.Int64
}

var errInjected = errors.New("injected fault")

func (f *faultStore) RenewSession(ctx context.Context, id string, ttl time.Duration) (bool, int64, error) {
	f.renewCalls.Add(1)
	if f.failRenew.Load() || f.failAll.Load() {
		return false, 0, errInjected
	}
	return f.Backend.RenewSession(ctx, id, ttl)
}

func (f *faultStore) CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.Backend.CreateSession(ctx, id, holder, ttl)
}

func (f *faultStore) ReadSession(ctx context.Context, id string) (store.Session, bool, error) {
	if f.failAll.Load() {
		return store.Session{}, false, errInjected
	}
	return f.Backend.ReadSession(ctx, id)
}

func (f *faultStore) EndSession(ctx context.Context, id string, pruneAfter time.Duration) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.Backend.EndSession(ctx, id, pruneAfter)
}

func (f *faultStore) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) ([]string, error) {
	if f.failAcquire.Load() || f.failAll.Load() {
		return names[:min(len(names), store.WriteChunk)], errInjected // the first statement fails
	}
	return f.Backend.AcquireEach(ctx, session, holder, names, took)
}

func (f *faultStore) Get(ctx context.Context, names []string) ([]store.Row, error) {
	if f.failAll.Load() {
		return nil, errInjected
	}
	return f.Backend.Get(ctx, names)
}

func (f *faultStore) Release(ctx context.Context, session string, terms []store.Term) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.Backend.Release(ctx, session, terms)
}

func (f *faultStore) EnsureRows(ctx context.Context, names []string) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.Backend.EnsureRows(ctx, names)
}

func (f *faultStore) List(ctx context.Context, prefix string) ([]store.Row, error) {
	if f.failAll.Load() {
		return nil, errInjected
	}
	return f.Backend.List(ctx, prefix)
}

func (f *faultStore) SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error) {
	if f.failAll.Load() {
		return false, errInjected
	}
	return f.Backend.SetData(ctx, session, t, data, wake)
}

func (f *faultStore) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	if f.failAll.Load() {
		return false, errInjected
	}
	return f.Backend.Publish(ctx, name, from, data)
}

func (f *faultStore) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.Backend.PruneDead(ctx, prefix, grace)
}

func (f *faultStore) EnsureFloored(ctx context.Context, rows []store.Floored) error {
	if f.failAll.Load() {
		return errInjected
	}
	return f.Backend.EnsureFloored(ctx, rows)
}

func (f *faultStore) ReleaseFloored(ctx context.Context, session string, terms []store.FlooredTerm) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.Backend.ReleaseFloored(ctx, session, terms)
}

func (f *faultStore) PruneFloored(ctx context.Context, prefix string, floor func(string) string, grace time.Duration, limit int) (int64, error) {
	if f.failAll.Load() {
		return 0, errInjected
	}
	return f.Backend.PruneFloored(ctx, prefix, floor, grace, limit)
}

// startFaulty runs a coordinator whose store can be made to fail: the
// store of db, opened as coordination.New opens it (storeFor), wrapped in
// a faultStore.
func startFaulty(t testing.TB, db *gorm.DB, node string, cfg coordination.Config) (*running, *faultStore) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	cfg = withDefaults(t, notifying(cfg))
	fs := &faultStore{Backend: storeFor(t, db, cfg)}
	c := newCoordinator(t, fs, testIdentity(t, node), cfg)
	return startCoordinator(t, c), fs
}

// countingLogger counts the statements gorm sends and keeps the last ones.
// A coordinator's statements go through the logger of the handle it is
// given, so a countingLogger on a session of the test's handle
// (db.Session(&gorm.Session{Logger: cl})) sees every one of them.
type countingLogger struct {
	logger.Interface
	mu     sync.Mutex
	count  int
	renews int
	stmts  []string
	// watch, when set, is called after each statement, with the logger
	// unlocked.
	watch atomic.Pointer[func(stmt sentStmt)]
}

// sentStmt is a statement as a countingLogger saw it.
type sentStmt struct {
	n      int    // its number among the statements counted
	renews int    // the statements setting renewed_at_us so far, this one included
	sql    string // with its arguments
	err    error
}

func (l *countingLogger) LogMode(logger.LogLevel) logger.Interface { return l }

func (l *countingLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	sql, _ := fc()
	l.mu.Lock()
	l.count++
	if strings.Contains(sql, "SET renewed_at_us") {
		l.renews++
	}
	entry := fmt.Sprintf("#%d %s", l.count, sql)
	if err != nil {
		entry += fmt.Sprintf(" -- error: %v", err)
	}
	l.stmts = append(l.stmts, entry)
	if len(l.stmts) > 50 {
		l.stmts = l.stmts[1:]
	}
	st := sentStmt{n: l.count, renews: l.renews, sql: sql, err: err}
	l.mu.Unlock()
	if w := l.watch.Load(); w != nil {
		(*w)(st)
	}
}

// isSessionRenewal reports whether sql is the renewal of a session: the
// one statement of a tick of the renewal loop, "UPDATE <sessions> SET
// renewed_at_us = ...".
func isSessionRenewal(sql string) bool {
	return strings.HasPrefix(sql, "UPDATE ") && strings.Contains(sql, "sessions") && strings.Contains(sql, " SET renewed_at_us = ")
}

// campaignRead returns the names of global leases a read of lease rows
// by name names ("SELECT l.name, l.holder, ... WHERE <name in the list>":
// what a campaign round reads), and whether sql is such a read. The
// names of the cases that use it are all "global/<name>".
func campaignRead(sql string) (names int, ok bool) {
	if !strings.HasPrefix(sql, "SELECT l.name, l.holder") {
		return 0, false
	}
	_, where, ok := strings.Cut(sql, " WHERE ")
	if !ok {
		return 0, false // a list of every lease (Admin.Leases), not a read by name
	}
	return strings.Count(where, "global/"), true
}

// since returns the statements, of the last 50 kept, sent after the
// first n, each with its number and its error.
func (l *countingLogger) since(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.count - len(l.stmts) + 1 // the number of l.stmts[0]
	kept := l.stmts[max(0, min(n+1-first, len(l.stmts))):]
	return strings.Join(kept, "\n")
}

func (l *countingLogger) snapshot() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count, strings.Join(l.stmts, "\n")
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// dbStore is the store of a database as a coordinator runs on it: the
// store's statements and its owners, as coordination.New wires them.
type dbStore struct {
	*store.Store
	*store.Sessions
	*store.Schema
	*store.Failover
	*store.LockRows
}

// newDBStore returns st with its owners.
func newDBStore(st *store.Store) dbStore {
	return dbStore{Store: st, Sessions: st.Sessions(), Schema: st.Schema(), Failover: st.Failover(), LockRows: st.LockRows()}
}

// withDefaults returns cfg with its defaults, as coordination.New sets
// them: the Config of a coordinator built with cfg (on an in-process
// database; it does not run).
func withDefaults(t testing.TB, cfg coordination.Config) coordination.Config {
	t.Helper()
	return newCoordinator(t, memstore.New().Conn(), testIdentity(t, "defaults"), cfg).Config()
}

// storeFor opens the store of db as coordination.New opens it for a
// coordinator with cfg (defaults filled in, withDefaults): its table
// prefix, its bound on connections, the failover hold-off of its TTL, and
// the pool member rows as rows whose release wakes nobody.
func storeFor(t testing.TB, db *gorm.DB, cfg coordination.Config) dbStore {
	t.Helper()
	s, err := store.New(db, store.Options{TablePrefix: cfg.TablePrefix, MaxConnections: cfg.MaxConnections,
		FailoverHold: cfg.TTL, Quiet: isPoolMemberRow})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	return newDBStore(s)
}

// isPoolMemberRow reports whether name is the row of a pool member,
// "pool|<key>|member|<member id>" (the package doc's "Names and rows").
func isPoolMemberRow(name string) bool {
	rest, ok := strings.CutPrefix(name, "pool|")
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, "|")
	return ok && strings.HasPrefix(rest, "member|")
}

// backendDialector is a gorm dialector that brings a store of its own
// (store.Embedded), as the in-process database of the test kit does: a
// coordinator given a *gorm.DB on it runs on that store, so a test can
// wrap the store of a database to inject faults or watch calls. Any SQL
// sent through the handle itself fails; the wrapped store sends its own
// on its database.
type backendDialector struct{ st store.Backend }

var _ store.Embedded = backendDialector{}

func (d backendDialector) Backend() store.Backend                       { return d.st }
func (backendDialector) Name() string                                   { return "test-backend" }
func (backendDialector) Initialize(*gorm.DB) error                      { return nil }
func (backendDialector) Migrator(*gorm.DB) gorm.Migrator                { return nil }
func (backendDialector) DataTypeOf(*schema.Field) string                { return "" }
func (backendDialector) DefaultValueOf(*schema.Field) clause.Expression { return clause.Expr{} }
func (backendDialector) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) {
	_ = w.WriteByte('?')
}
func (backendDialector) QuoteTo(w clause.Writer, s string)   { _, _ = w.WriteString(s) }
func (backendDialector) Explain(sql string, _ ...any) string { return sql }

// newCoordinator returns a coordinator for id on st (a wrapped store of a
// database, or the in-process one), built by coordination.New, with its
// checks, on a handle whose dialector brings st (backendDialector).
func newCoordinator(t testing.TB, st store.Backend, id identity.Identity, cfg coordination.Config) *coordination.Coordinator {
	t.Helper()
	db, err := gorm.Open(backendDialector{st}, &gorm.Config{DisableAutomaticPing: true, Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open a handle on the test's store: %v", err)
	}
	c, err := coordination.New(db, id, cfg)
	if err != nil {
		t.Fatalf("new coordinator: %v", err)
	}
	return c
}

// renewalSeen is one attempt of a coordinator's renewal loop, as
// Coordinator.Renewal shows it: a success (err nil), when LastSuccess
// moved, or a failure, when Failures grew.
type renewalSeen struct {
	at   time.Time // LastSuccess for a success; when the failure was seen
	held int       // leases and memberships held and trusted then
	err  error
}

// watchRenewals reports every attempt of c's renewal loop from now on, by
// looking at c.Renewal() every 2ms (the renewal intervals of these tests
// are 100 times that), until the test ends or c stops. A renewal that
// found the session gone is neither: the terms it ends say so. Attempts
// beyond the channel's buffer are dropped; the channel is closed when the
// watch ends.
func watchRenewals(t testing.TB, c *coordination.Coordinator) <-chan renewalSeen {
	ch := make(chan renewalSeen, 1024)
	last := c.Renewal()
	ctx := t.Context()
	go func() {
		defer close(ch)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			case <-c.Done():
				return
			}
			st := c.Renewal()
			var seen []renewalSeen
			// Failures counts those since the last success: a success in
			// between starts it over.
			failedBefore := last.Failures
			if !st.LastSuccess.Equal(last.LastSuccess) {
				seen = append(seen, renewalSeen{at: st.LastSuccess, held: st.Held})
				failedBefore = 0
			}
			for range st.Failures - failedBefore {
				seen = append(seen, renewalSeen{at: time.Now(), held: st.Held, err: st.LastError})
			}
			last = st
			for _, rs := range seen {
				select {
				case ch <- rs:
				default:
				}
			}
		}
	}()
	return ch
}

// poke wakes a loop waiting on ch without blocking.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Errors that wrap a broader sentinel and say in their message which
// case they are.

// isNotInTransaction reports whether err is the refusal of a fencing
// check given a handle outside a transaction.
func isNotInTransaction(err error) bool {
	return errors.Is(err, coordination.ErrInvalidConfig) && strings.Contains(err.Error(), "needs a handle inside a transaction")
}

// isInvalidName reports whether err is the refusal of a bad name or lock
// key.
func isInvalidName(err error) bool {
	return errors.Is(err, coordination.ErrInvalidConfig) && strings.Contains(err.Error(), "invalid name")
}

// isSessionLost reports whether err is an attempt that lost the trust of
// its own session while it took a lease.
func isSessionLost(err error) bool {
	return errors.Is(err, coordination.ErrLeaseLost) && strings.Contains(err.Error(), "this process stopped trusting its session")
}

// isPoolMode reports whether err is the failure of a member whose pool
// live members run in another mode (by index and count, or partitions).
func isPoolMode(err error) bool {
	return errors.Is(err, coordination.ErrInvalidConfig) && strings.Contains(err.Error(), "pool is run in another mode")
}

// isLostInFailover reports whether err is the cause of a term the new
// primary of a failed-over database does not show.
func isLostInFailover(err error) bool {
	return errors.Is(err, coordination.ErrLeaseLost) && strings.Contains(err.Error(), "the database failed over")
}

// isFenced reports whether err is a failed fencing check of what (such as
// `lease "global/x" epoch 3` or `pool "global/x" generation 3`; "" for any)
// that says reason.
func isFenced(err error, what, reason string) bool {
	return errors.Is(err, coordination.ErrFenced) && strings.Contains(err.Error(), what) && strings.Contains(err.Error(), reason)
}

// endOfTerm reports whether err is the cause of a term's end rather than
// a failure of the work: one of the causes a lease's context ends with
// (RunOptions.OnTermEnd lists them), a fencing refusal, or a context's
// own end; never a panic.
func endOfTerm(err error) bool {
	var pe *coordination.PanicError
	if errors.As(err, &pe) {
		return false
	}
	for _, target := range []error{
		context.Canceled, context.DeadlineExceeded, coordination.ErrLeaseLost, coordination.ErrClosed,
		coordination.ErrReleased, coordination.ErrFenced, coordination.ErrResigned, coordination.ErrUnhealthy,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// The limits and bounds package coordination documents, whose constants
// are its own.
const (
	maxNameLen    = 128  // the longest name (validateName)
	maxKeyLen     = 100  // the longest lock key (validateKey)
	maxPartitions = 4096 // the most partitions of a pool (PoolConfig.Partitions)
	maxLimit      = 1000 // the largest semaphore limit (Coordinator.Semaphore)
	// deadMemberGrace is how many TTLs a dead pool member's row outlives
	// its expiry before a live member prunes it ("Dead member rows are
	// pruned after 10 TTLs").
	deadMemberGrace = 10
	// lockFloors is the number of floor rows of a namespace of keyed
	// locks, "lockfloor|<key>|<bucket>".
	lockFloors = 64
)

// rebalanceBound is how soon after a join or a graceful leave every member
// works in the new generation, for a pool's poll interval: poll + poll/4,
// as PoolConfig.PollInterval documents it.
func rebalanceBound(poll time.Duration) time.Duration { return poll + poll/4 }

// crashRebalanceBound is how soon after a member's crash every other
// member works in a generation without it: ttl + poll/4 + 2ms, as
// PoolConfig.PollInterval documents it.
func crashRebalanceBound(ttl, poll time.Duration) time.Duration {
	return ttl + poll/4 + 2*time.Millisecond
}

// Row names, in the formats of package coordination's doc ("Names and
// rows").

// poolGenerationRow is "pool|<key>|generation": the generation of the pool
// with key (Pool.Key).
func poolGenerationRow(key string) string { return "pool|" + key + "|generation" }

// poolRowsPrefix starts every row of the pool with key, and no other row.
func poolRowsPrefix(key string) string { return "pool|" + key + "|" }

// poolMembersPrefix starts every member row of the pool with key.
func poolMembersPrefix(key string) string { return "pool|" + key + "|member|" }

// poolMemberRow is "pool|<key>|member|<member id>".
func poolMemberRow(key, member string) string { return poolMembersPrefix(key) + member }

// lockRowsPrefix starts every row of the keyed locks of the namespace with
// key (Locks.Key): "lock|<key>|<lock key>".
func lockRowsPrefix(key string) string { return "lock|" + key + "|" }

// membershipToken is the fencing token of the membership an assignment was
// given under: the member row of its member, at its Epoch.
func membershipToken(a coordination.Assignment) coordination.Token {
	return coordination.Token{Key: poolMemberRow(a.Key, a.Members[a.Index]), Epoch: a.Epoch}
}

// sessionOf returns the id of the session the lease l rides on, as its row
// shows it.
func sessionOf(t testing.TB, db *gorm.DB, l *coordination.Lease) string {
	t.Helper()
	return row(t, db, l.Key()).Session
}

// heldTokens returns the tokens of the live leases and memberships the
// database shows c holding.
func heldTokens(t testing.TB, c *coordination.Coordinator) []coordination.Token {
	t.Helper()
	infos, err := c.Admin().Leases(context.Background())
	if err != nil {
		t.Fatalf("Leases: %v", err)
	}
	var out []coordination.Token
	for _, info := range infos {
		if info.Live && info.Holder == c.Holder() {
			out = append(out, coordination.Token{Key: info.Key, Epoch: info.Epoch})
		}
	}
	return out
}

// poolRows names the rows of one pool, in the documented formats.
type poolRows struct {
	Prefix     string // every row of the pool starts with it, and no other row does
	Generation string // the generation row
	Members    string // every member row starts with it
	key        string
}

// Member returns the row of the member with the given id.
func (r poolRows) Member(id string) string { return poolMemberRow(r.key, id) }

// poolRowsOf returns the names of the rows of the pool with key.
func poolRowsOf(key string) poolRows {
	return poolRows{Prefix: poolRowsPrefix(key), Generation: poolGenerationRow(key), Members: poolMembersPrefix(key), key: key}
}

// memDB returns a handle on a fresh in-process database (the test kit's,
// internal/memstore): a coordinator given it runs there, and any SQL sent
// through it fails.
func memDB(t testing.TB) *gorm.DB {
	t.Helper()
	db, err := memstore.New().Conn().Open()
	if err != nil {
		t.Fatalf("open the in-process database: %v", err)
	}
	return db
}
