package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// The hazards of a multi-primary Galera cluster (galera.go): a node's reads
// lag the others' commits, and only write-write conflicts on one row are
// caught, at commit. These tests make one node lag on purpose: a
// transaction on it that replicates nothing (wsrep_on off) holds a row
// lock that the next replicated change needs, so the node applies nothing
// more, and commits nothing either, until the lock goes (lagNode).

// galeraWait bounds every wait of these tests; it only decides how long a
// broken build takes to fail.
const galeraWait = 30 * time.Second

// galeraNode is a store on one node of the cluster, with its handle.
type galeraNode struct {
	*store.Store
	db *gorm.DB
}

// openGaleraNode opens a store on the database at dsn and probes it, as a
// coordinator does at start-up; migrate also creates the schema.
func openGaleraNode(t *testing.T, dsn string, migrate bool) galeraNode {
	t.Helper()
	db, err := dbopen.Open(dbopen.MySQL, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	st, err := store.New(db, store.Options{FailoverHold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), galeraWait)
	defer cancel()
	if migrate {
		if _, err := st.Schema().Migrate(ctx, galeraWait); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	if _, err := st.Failover().ProbeFailover(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	return galeraNode{Store: st, db: db}
}

// syncNode waits until the node of dsn has applied every change the
// cluster had committed: a read with wsrep_sync_wait waits for that.
func syncNode(t *testing.T, dsn, table string) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), galeraWait)
	defer cancel()
	if _, err := db.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("sync read of %s: %v", table, err)
	}
}

// lagNode makes the node of lagged stop applying the cluster's changes
// until release is called: a transaction on it that is not replicated
// (wsrep_on off) locks a row of a table of the test's own, and the node
// of other then changes that row. Every change committed elsewhere after
// that waits on the lagged node, and so do the lagged node's own commits,
// which Galera orders after them; its reads show the state before.
func lagNode(t *testing.T, lagged, other string) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), galeraWait)
	defer cancel()
	odb, err := sql.Open("mysql", other)
	if err != nil {
		t.Fatal(err)
	}
	defer odb.Close()
	if _, err := odb.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS lag_blocker (id INT PRIMARY KEY, v INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := odb.ExecContext(ctx, "INSERT INTO lag_blocker VALUES (1, 0) ON DUPLICATE KEY UPDATE v = v"); err != nil {
		t.Fatal(err)
	}
	syncNode(t, lagged, "lag_blocker")
	ldb, err := sql.Open("mysql", lagged)
	if err != nil {
		t.Fatal(err)
	}
	ldb.SetMaxOpenConns(1)
	if _, err := ldb.ExecContext(ctx, "SET SESSION wsrep_on = OFF"); err != nil {
		ldb.Close()
		t.Fatal(err)
	}
	tx, err := ldb.BeginTx(context.Background(), nil)
	if err != nil {
		ldb.Close()
		t.Fatal(err)
	}
	var v int
	if err := tx.QueryRowContext(ctx, "SELECT v FROM lag_blocker WHERE id = 1 FOR UPDATE").Scan(&v); err != nil {
		_ = tx.Rollback()
		ldb.Close()
		t.Fatal(err)
	}
	if _, err := odb.ExecContext(ctx, "UPDATE lag_blocker SET v = v + 1 WHERE id = 1"); err != nil {
		_ = tx.Rollback()
		ldb.Close()
		t.Fatal(err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		_ = tx.Rollback()
		_ = ldb.Close()
	}
	t.Cleanup(release)
	return release
}

// waitSessionDead waits until st's node reads session id as expired.
func waitSessionDead(t *testing.T, st galeraNode, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), galeraWait)
	defer cancel()
	for {
		sess, ok, err := st.Sessions().ReadSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || !sess.Live() {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s still live on this node after %s", id, galeraWait)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestGaleraStaleAcquireConflictsWithRenewal: node B lags and still shows
// the session of A expired, while A has renewed it on node A. An acquire
// on node B judges the session dead from that stale read; it must not
// commit beside the renewal. The acquire changes the dead session's row,
// as the renewal did, so certification fails it: a lost race, which takes
// nothing and is no error.
func TestGaleraStaleAcquireConflictsWithRenewal(t *testing.T) {
	a, b, dsns, ctx := twoGaleraNodes(t)
	names := []string{"x"}
	terms, release := renewedWhileBLags(t, a, b, dsns, ctx, names)

	type result struct {
		terms []store.Term
		err   error
	}
	done := make(chan result, 1)
	go func() {
		got, err := b.Acquire(ctx, "sb", "B", names)
		done <- result{got, err}
	}()
	// An acquire that is not refused at certification waits for node B to
	// commit the changes ordered before it: let it get there, then let
	// node B catch up.
	var res result
	select {
	case res = <-done:
	case <-time.After(3 * time.Second):
		release()
		res = <-done
	}
	release()
	if res.err != nil {
		t.Fatalf("B's acquire on the lagging node: %v; want a lost race, which is no error", res.err)
	}
	if len(res.terms) != 0 {
		t.Fatalf("B's acquire on the lagging node took %v from a session renewed on another node: two holders", res.terms)
	}
	syncNode(t, dsns[0], a.Tables().Leases)
	if ok, _, err := a.Sessions().RenewSession(ctx, "sa", time.Minute); err != nil || !ok {
		t.Fatalf("A's next renewal = %v, %v; want its session live", ok, err)
	}
	rows, err := a.Get(ctx, names)
	if err != nil || len(rows) != 1 || rows[0].Session != "sa" || rows[0].Epoch != terms[0].Epoch || !rows[0].Live() {
		t.Fatalf("lease after the race = %+v, %v; want A's term %v, live", rows, err, terms[0])
	}
}

// TestGaleraFencedCommitConflictsWithTakeover: node A lags, and a
// transaction fenced there while A's term was valid commits after B took
// the lease over on node B. The fencing check changes the lease row, which
// the takeover changed too, so the fenced commit fails certification.
func TestGaleraFencedCommitConflictsWithTakeover(t *testing.T) {
	a, b, dsns, ctx := twoGaleraNodes(t)
	if err := a.db.Exec("CREATE TABLE fenced_writes (id INT PRIMARY KEY)").Error; err != nil {
		t.Fatal(err)
	}
	names := []string{"x"}
	if err := a.EnsureRows(ctx, names); err != nil {
		t.Fatal(err)
	}
	// A's session lives until B ends it (below), however long the set-up
	// takes on a busy machine.
	if err := a.Sessions().CreateSession(ctx, "sa", "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	terms, err := a.Acquire(ctx, "sa", "A", names)
	if err != nil || len(terms) != 1 {
		t.Fatalf("A's acquire = %v, %v; want one term", terms, err)
	}
	if err := b.Sessions().CreateSession(ctx, "sb", "B", time.Minute); err != nil {
		t.Fatal(err)
	}
	syncNode(t, dsns[0], "fenced_writes")
	syncNode(t, dsns[1], "fenced_writes")

	release := lagNode(t, dsns[0], dsns[1])
	tx := a.db.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	defer tx.Rollback()
	row, found, err := a.Fence(tx, "x")
	if err != nil || !found || row.Session != "sa" || row.Epoch != terms[0].Epoch || !row.Live() {
		t.Fatalf("fence = %+v, %v, %v; want A's live term %v", row, found, err, terms[0])
	}
	if err := tx.Exec("INSERT INTO fenced_writes VALUES (1)").Error; err != nil {
		t.Fatal(err)
	}
	// A's session expires, as B's node sees it: a renewal on node B with
	// a TTL of a microsecond stands for the time passing. It changes the
	// session row, which the fenced transaction does not touch, so only
	// the takeover's change of the lease row can conflict with that
	// transaction. B then takes the lease over on its node.
	if ok, _, err := b.Sessions().RenewSession(ctx, "sa", time.Microsecond); err != nil || !ok {
		t.Fatalf("ending A's session on node B = %v, %v; want it renewed to expire", ok, err)
	}
	waitSessionDead(t, b, "sa")
	took, err := b.Acquire(ctx, "sb", "B", names)
	if err != nil || len(took) != 1 || took[0].Epoch != terms[0].Epoch+1 {
		t.Fatalf("B's takeover = %v, %v; want epoch %d", took, err, terms[0].Epoch+1)
	}

	done := make(chan error, 1)
	go func() { done <- tx.Commit().Error }()
	var commitErr error
	select {
	case commitErr = <-done:
	case <-time.After(3 * time.Second):
		release()
		commitErr = <-done
	}
	release()
	if commitErr == nil {
		t.Fatalf("a transaction fenced at epoch %d committed on node A after B took epoch %d on node B", terms[0].Epoch, took[0].Epoch)
	}
	t.Logf("the fenced commit failed as it should: %v", commitErr)
	syncNode(t, dsns[0], "fenced_writes")
	var n int64
	if err := a.db.Raw("SELECT COUNT(*) FROM fenced_writes").Scan(&n).Error; err != nil || n != 0 {
		t.Fatalf("fenced_writes has %d rows, %v; want none", n, err)
	}
}

// TestGaleraGenerationFencedCommitConflictsWithPublish: node A lags, and a
// transaction of a pool's member, fenced there at generation 1, commits
// after another member published generation 2 on node B. The fencing
// check of the generation changes the generation row, which the publish
// changed too, so the fenced commit fails certification.
func TestGaleraGenerationFencedCommitConflictsWithPublish(t *testing.T) {
	a, b, dsns, ctx := twoGaleraNodes(t)
	if err := a.db.Exec("CREATE TABLE generation_writes (id INT PRIMARY KEY)").Error; err != nil {
		t.Fatal(err)
	}
	const gen = "pool|global/orders|generation"
	if err := a.EnsureRows(ctx, []string{gen}); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Publish(ctx, gen, 0, "ma"); err != nil || !ok {
		t.Fatalf("publish of generation 1 = %v, %v; want it published", ok, err)
	}
	syncNode(t, dsns[0], "generation_writes")
	syncNode(t, dsns[1], "generation_writes")

	release := lagNode(t, dsns[0], dsns[1])
	tx := a.db.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	defer tx.Rollback()
	row, found, err := a.FenceGeneration(tx, gen)
	if err != nil || !found || row.Epoch != 1 || row.Data != "ma" {
		t.Fatalf("fence = %+v, %v, %v; want generation 1 of [ma]", row, found, err)
	}
	if err := tx.Exec("INSERT INTO generation_writes VALUES (1)").Error; err != nil {
		t.Fatal(err)
	}
	// A rebalance on node B moves the pool to generation 2.
	if ok, err := b.Publish(ctx, gen, 1, "mb,ma"); err != nil || !ok {
		t.Fatalf("publish of generation 2 on node B = %v, %v; want it published", ok, err)
	}

	done := make(chan error, 1)
	go func() { done <- tx.Commit().Error }()
	var commitErr error
	select {
	case commitErr = <-done:
	case <-time.After(3 * time.Second):
		release()
		commitErr = <-done
	}
	release()
	if commitErr == nil {
		t.Fatal("a transaction fenced at generation 1 committed on node A after generation 2 was published on node B")
	}
	t.Logf("the fenced commit failed as it should: %v", commitErr)
	syncNode(t, dsns[0], "generation_writes")
	var n int64
	if err := a.db.Raw("SELECT COUNT(*) FROM generation_writes").Scan(&n).Error; err != nil || n != 0 {
		t.Fatalf("generation_writes has %d rows, %v; want none", n, err)
	}
	rows, err := a.Get(ctx, []string{gen})
	if err != nil || len(rows) != 1 || rows[0].Epoch != 2 || rows[0].Data != "mb,ma" {
		t.Fatalf("generation row after the race = %+v, %v; want generation 2 of [mb ma]", rows, err)
	}
}

// onStatement calls fn, once, in place of nothing, just before node runs
// the first statement of its own that match accepts (by its SQL and
// arguments), with the connection that statement runs on: the statement
// itself runs after fn returns.
func onStatement(t *testing.T, node galeraNode, match func(sql string, vars []any) bool, fn func(conn gorm.ConnPool)) {
	t.Helper()
	fired := false
	hook := func(db *gorm.DB) {
		if fired || db.Statement == nil || !match(db.Statement.SQL.String(), db.Statement.Vars) {
			return
		}
		fired = true
		fn(db.Statement.ConnPool)
	}
	if err := node.db.Callback().Row().Before("gorm:row").Register("galera_test:row", hook); err != nil {
		t.Fatal(err)
	}
	if err := node.db.Callback().Raw().Before("gorm:raw").Register("galera_test:raw", hook); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = node.db.Callback().Row().Remove("galera_test:row")
		_ = node.db.Callback().Raw().Remove("galera_test:raw")
		if !fired {
			t.Error("the statement the test waited for never ran")
		}
	})
}

// hasArg reports whether vars hold the argument s.
func hasArg(vars []any, s string) bool {
	for _, v := range vars {
		if v == s {
			return true
		}
	}
	return false
}

// abortSilently waits until the node of dsn has applied the cluster's
// changes, which makes its applier abort (brute force) the transaction
// open on conn that holds a lock one of them needs, and then consumes
// the report of that abort with a statement of its own, as the server
// sometimes does with the statement running when the abort lands: the
// transaction is rolled back, and the statements sent on conn after it
// run and commit one by one (autocommit). It fails the test unless conn
// is then outside any transaction.
func abortSilently(t *testing.T, dsn, table string, conn gorm.ConnPool) {
	t.Helper()
	syncNode(t, dsn, table)
	ctx, cancel := context.WithTimeout(context.Background(), galeraWait)
	defer cancel()
	_, err := conn.ExecContext(ctx, "DO 0")
	t.Logf("the statement after the abort: %v", err)
	var inTx int
	if err := conn.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&inTx); err != nil || inTx != 0 {
		t.Fatalf("in_transaction = %d, %v; the test needs the transaction aborted", inTx, err)
	}
}

// cycleLock creates the lock row of fl, takes it under session and
// releases it, on node, and returns the epoch of the term.
func cycleLock(t *testing.T, node galeraNode, session, holder string, fl store.Floored) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), galeraWait)
	defer cancel()
	if err := node.LockRows().EnsureFloored(ctx, []store.Floored{fl}); err != nil {
		t.Fatalf("create %s: %v", fl.Name, err)
	}
	terms, err := node.Acquire(ctx, session, holder, []string{fl.Name})
	if err != nil || len(terms) != 1 {
		t.Fatalf("acquire of %s = %v, %v; want one term", fl.Name, terms, err)
	}
	n, err := node.LockRows().ReleaseFloored(ctx, session, []store.FlooredTerm{{Term: terms[0], Floor: fl.Floor}})
	if err != nil || n != 1 {
		t.Fatalf("release of %v = %d, %v; want it released", terms[0], n, err)
	}
	return terms[0].Epoch
}

// TestGaleraAbortedLockCreateKeepsItsFloor: node B creates a keyed lock's
// row, and has read the row's floor, when a term of the key taken and
// released on node A reaches it. That release raised the floor, which
// B's transaction has locked, so B's applier aborts B's transaction; the
// abort is not reported to the statement running (abortSilently), and
// B's remaining statements commit on their own, after the release. The
// row must not be created at the floor read before: its next term would
// have A's epoch again.
func TestGaleraAbortedLockCreateKeepsItsFloor(t *testing.T) {
	a, b, dsns, ctx := twoGaleraNodes(t)
	fl := store.Floored{Name: "lock|global/accounts|42", Floor: "lockfloor|global/accounts|3"}
	if err := a.Sessions().CreateSession(ctx, "sa", "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Sessions().CreateSession(ctx, "sb", "B", time.Minute); err != nil {
		t.Fatal(err)
	}
	first := cycleLock(t, a, "sa", "A", fl)
	syncNode(t, dsns[1], a.Tables().Leases)

	// B's create has locked and read the floor (at first) and is about
	// to read the lock row: A takes and releases the key meanwhile.
	var second int64
	onStatement(t, b, func(sql string, vars []any) bool {
		return strings.HasPrefix(sql, "SELECT name, epoch FROM") && hasArg(vars, fl.Name)
	}, func(conn gorm.ConnPool) {
		second = cycleLock(t, a, "sa", "A", fl)
		abortSilently(t, dsns[1], a.Tables().Leases, conn)
	})
	if err := b.LockRows().EnsureFloored(ctx, []store.Floored{fl}); err != nil {
		t.Fatalf("B's create: %v", err)
	}
	terms, err := b.Acquire(ctx, "sb", "B", []string{fl.Name})
	if err != nil || len(terms) != 1 {
		t.Fatalf("B's acquire = %v, %v; want one term", terms, err)
	}
	if terms[0].Epoch <= second {
		t.Fatalf("B took epoch %d after A's terms %d and %d on node A: an epoch issued again", terms[0].Epoch, first, second)
	}
}

// TestGaleraAbortedLockReleaseKeepsItsFloor: node B releases a keyed
// lock, and has raised the row's floor, when a release on node A of
// another lock with the same floor reaches it, raising the floor less.
// B's applier aborts B's transaction, silently (abortSilently), and B's
// remaining statements commit on their own. The row must not be deleted
// with its floor below its epoch: the row's next term would repeat one.
func TestGaleraAbortedLockReleaseKeepsItsFloor(t *testing.T) {
	a, b, dsns, ctx := twoGaleraNodes(t)
	const floor = "lockfloor|global/accounts|3"
	kb := store.Floored{Name: "lock|global/accounts|42", Floor: floor}
	ka := store.Floored{Name: "lock|global/accounts|7", Floor: floor}
	if err := a.Sessions().CreateSession(ctx, "sa", "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Sessions().CreateSession(ctx, "sb", "B", time.Minute); err != nil {
		t.Fatal(err)
	}
	// A holds ka at epoch 2, B holds kb at epoch 4 (a holder that takes
	// its key again starts a new term), the floor is at 0.
	take := func(node galeraNode, session, holder string, fl store.Floored, times int) store.Term {
		t.Helper()
		if err := node.LockRows().EnsureFloored(ctx, []store.Floored{fl}); err != nil {
			t.Fatal(err)
		}
		var term store.Term
		for range times {
			terms, err := node.Acquire(ctx, session, holder, []string{fl.Name})
			if err != nil || len(terms) != 1 {
				t.Fatalf("acquire of %s = %v, %v; want one term", fl.Name, terms, err)
			}
			term = terms[0]
		}
		return term
	}
	held := take(b, "sb", "B", kb, 4)
	syncNode(t, dsns[0], a.Tables().Leases)
	other := take(a, "sa", "A", ka, 2)
	syncNode(t, dsns[1], a.Tables().Leases)

	onStatement(t, b, func(sql string, vars []any) bool {
		return strings.HasPrefix(sql, "DELETE") && hasArg(vars, kb.Name)
	}, func(conn gorm.ConnPool) {
		if n, err := a.LockRows().ReleaseFloored(ctx, "sa", []store.FlooredTerm{{Term: other, Floor: floor}}); err != nil || n != 1 {
			t.Fatalf("A's release of %v = %d, %v; want it released", other, n, err)
		}
		abortSilently(t, dsns[1], a.Tables().Leases, conn)
	})
	n, err := b.LockRows().ReleaseFloored(ctx, "sb", []store.FlooredTerm{{Term: held, Floor: floor}})
	if err != nil || n != 1 {
		t.Fatalf("B's release of %v = %d, %v; want it released", held, n, err)
	}
	next := cycleLock(t, b, "sb", "B", kb)
	if next <= held.Epoch {
		t.Fatalf("B took %s at epoch %d after releasing epoch %d: an epoch issued again", kb.Name, next, held.Epoch)
	}
}

// TestGaleraAbortedAcquireTakesNoRenewedLease: node B lags and shows A's
// session expired while A has renewed it on node A. B's acquire locks the
// lease and changes A's session row (sqlMarkDeadSessions); then node B
// catches up, and the renewal's applier, which needs that row, aborts
// the acquire, silently (abortSilently). The acquire's update of the
// lease, sent after, runs alone: it must not take the lease from a
// session that is live.
func TestGaleraAbortedAcquireTakesNoRenewedLease(t *testing.T) {
	a, b, dsns, ctx := twoGaleraNodes(t)
	names := []string{"y"}
	terms, release := renewedWhileBLags(t, a, b, dsns, ctx, names)
	onStatement(t, b, func(sql string, vars []any) bool {
		return strings.HasPrefix(sql, "UPDATE `"+a.Tables().Leases+"` SET") && hasArg(vars, "y")
	}, func(conn gorm.ConnPool) {
		release()
		abortSilently(t, dsns[1], a.Tables().Leases, conn)
	})
	got, err := b.Acquire(ctx, "sb", "B", names)
	t.Logf("B's acquire: %v, %v", got, err)
	if len(got) != 0 {
		t.Fatalf("B's acquire took %v from a session renewed on another node", got)
	}
	syncNode(t, dsns[0], a.Tables().Leases)
	rows, err := a.Get(ctx, names)
	if err != nil || len(rows) != 1 || rows[0].Session != "sa" || rows[0].Epoch != terms[0].Epoch || !rows[0].Live() {
		t.Fatalf("lease after the race = %+v, %v; want A's term %v, live", rows, err, terms[0])
	}
}

// twoGaleraNodes opens node A of the test cluster, with the schema
// migrated, and node B once it has the tables, and a context bounded by
// galeraWait for the test.
func twoGaleraNodes(t *testing.T) (a, b galeraNode, dsns []string, ctx context.Context) {
	t.Helper()
	_, dsns = testdb.GaleraCluster(t)
	a = openGaleraNode(t, dsns[0], true)
	syncNode(t, dsns[1], a.Tables().Leases)
	b = openGaleraNode(t, dsns[1], false)
	ctx, cancel := context.WithTimeout(context.Background(), galeraWait)
	t.Cleanup(cancel)
	return a, b, dsns, ctx
}

// renewedWhileBLags has session sa (holder A, TTL 1 s) take names on node
// A and session sb (holder B) start on node B; then it makes node B lag
// and renews sa on node A, and returns A's terms once node B still shows
// sa expired, a second after it began. release lets node B catch up.
func renewedWhileBLags(t *testing.T, a, b galeraNode, dsns []string, ctx context.Context, names []string) (terms []store.Term, release func()) {
	t.Helper()
	if err := a.EnsureRows(ctx, names); err != nil {
		t.Fatal(err)
	}
	if err := a.Sessions().CreateSession(ctx, "sa", "A", time.Second); err != nil {
		t.Fatal(err)
	}
	terms, err := a.Acquire(ctx, "sa", "A", names)
	if err != nil || len(terms) != len(names) {
		t.Fatalf("A's acquire = %v, %v; want %d terms", terms, err, len(names))
	}
	if err := b.Sessions().CreateSession(ctx, "sb", "B", time.Minute); err != nil {
		t.Fatal(err)
	}
	syncNode(t, dsns[1], a.Tables().Leases)

	release = lagNode(t, dsns[1], dsns[0])
	if ok, _, err := a.Sessions().RenewSession(ctx, "sa", time.Minute); err != nil || !ok {
		t.Fatalf("A's renewal on node A = %v, %v; want it renewed", ok, err)
	}
	waitSessionDead(t, b, "sa")
	return terms, release
}
