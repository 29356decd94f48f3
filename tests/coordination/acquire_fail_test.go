package coordination_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// failAcquireTrigger returns the statements that make every acquire of
// name fail as late as the database allows, and the statements that
// remove that again: on PostgreSQL a deferred constraint trigger that
// raises at COMMIT, after the acquire's rows have reached the client; on
// MariaDB and SQLite a trigger that raises in the UPDATE that moves the
// epoch.
func failAcquireTrigger(dialect, table, name string) (install, remove []string) {
	switch dialect {
	case "postgres":
		return []string{
				`CREATE FUNCTION leasehold_test_fail() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'injected failure at commit'; END $f$`,
				`CREATE CONSTRAINT TRIGGER leasehold_test_fail AFTER UPDATE ON ` + table +
					` DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.name = '` + name + `' AND NEW.epoch <> OLD.epoch)` +
					` EXECUTE FUNCTION leasehold_test_fail()`,
			}, []string{
				`DROP TRIGGER leasehold_test_fail ON ` + table,
				`DROP FUNCTION leasehold_test_fail()`,
			}
	case "mysql":
		return []string{
				`CREATE TRIGGER leasehold_test_fail BEFORE UPDATE ON ` + table + ` FOR EACH ROW BEGIN` +
					` IF NEW.name = '` + name + `' AND NEW.epoch <> OLD.epoch THEN` +
					` SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure'; END IF; END`,
			}, []string{
				`DROP TRIGGER leasehold_test_fail`,
			}
	default: // sqlite
		return []string{
				`CREATE TRIGGER leasehold_test_fail BEFORE UPDATE OF epoch ON ` + table +
					` WHEN NEW.name = '` + name + `' AND NEW.epoch <> OLD.epoch BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
			}, []string{
				`DROP TRIGGER leasehold_test_fail`,
			}
	}
}

// testDDL runs a schema change of the test's own. On the MariaDB pair it
// stays out of the binary log: its private servers run without grant
// tables, so a trigger's definer is the empty user, which the replica
// refuses, and it stops applying the primary's changes.
func testDDL(b *bundle, q string) error {
	if b.target.Name != testdb.MariaDBPairTarget.Name {
		return b.db.Exec(q).Error
	}
	return b.db.Connection(func(conn *gorm.DB) error {
		if err := conn.Exec("SET SESSION sql_log_bin = 0").Error; err != nil {
			return err
		}
		defer conn.Exec("SET SESSION sql_log_bin = 1")
		return conn.Exec(q).Error
	})
}

// caseFailedAcquireGrantsNothing: an acquire whose change the database
// takes back returns no term, even where its rows had already reached the
// client (PostgreSQL, failing at COMMIT), and the row keeps its epoch.
// Once the failure is gone the same session takes the lease with the next
// epoch.
func caseFailedAcquireGrantsNothing(t *testing.T, b *bundle) {
	if b.target.Dialect == "sqlserver" {
		// Any enabled trigger makes SQL Server refuse the acquire's
		// UPDATE ... OUTPUT outright (error 334), whichever row it
		// touches, so no trigger can fail just the one acquire.
		t.Skip("SQL Server: a trigger on the lease table fails every acquire, not one")
	}
	ctx := context.Background()
	s := rawStore(t, b.db)
	if _, err := s.Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	const name, other = "global/fails-at-commit", "global/beside-it"
	if err := s.EnsureRows(ctx, []string{name, other}); err != nil {
		t.Fatal(err)
	}
	install, remove := failAcquireTrigger(b.target.Dialect, s.Tables().Leases, name)
	for _, q := range install {
		if err := testDDL(b, q); err != nil {
			t.Fatalf("install the failing trigger: %v\n%s", err, q)
		}
	}
	sess := newSession(t, s, "holder-a")
	terms, err := s.Acquire(ctx, sess, "holder-a", []string{name, other})
	if err == nil {
		t.Fatalf("Acquire with a failing trigger succeeded: %+v", terms)
	}
	if len(terms) != 0 {
		t.Fatalf("Acquire failed (%v) but returned terms %+v: they were rolled back", err, terms)
	}
	for _, n := range []string{name, other} {
		if r := row(t, b.db, n); r.Epoch != 0 || r.Holder != "" {
			t.Fatalf("after a failed acquire %s reads epoch %d held by %q, want epoch 0, free", n, r.Epoch, r.Holder)
		}
	}
	for _, q := range remove {
		if err := testDDL(b, q); err != nil {
			t.Fatalf("remove the failing trigger: %v\n%s", err, q)
		}
	}
	terms, err = s.Acquire(ctx, sess, "holder-a", []string{name})
	if err != nil || len(terms) != 1 || terms[0].Epoch != 1 {
		t.Fatalf("Acquire after the failure = %+v, %v; want epoch 1", terms, err)
	}
}

// ambiguousAcquireStore commits every acquire but reports it failed while
// its switch is on, as a connection lost after COMMIT would.
type ambiguousAcquireStore struct {
	dbStore
	on   chan struct{} // closed to turn the fault off
	pass atomic.Bool   // set to let acquires through for a while
	seen chan []store.Term
	top  atomic.Int64 // the highest epoch committed but reported failed
}

func (a *ambiguousAcquireStore) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) ([]string, error) {
	select {
	case <-a.on:
		return a.dbStore.AcquireEach(ctx, session, holder, names, took)
	default:
	}
	if a.pass.Load() {
		return a.dbStore.AcquireEach(ctx, session, holder, names, took)
	}
	var terms []store.Term
	_, err := a.dbStore.AcquireEach(ctx, session, holder, names, func(got []store.Term) { terms = append(terms, got...) })
	if err == nil && len(terms) > 0 {
		for _, t := range terms {
			if t.Epoch > a.top.Load() {
				a.top.Store(t.Epoch)
			}
		}
		select {
		case a.seen <- terms:
		default:
		}
	}
	return names, errors.Join(err, errors.New("injected: connection lost after COMMIT"))
}

// startAmbiguous starts a process, node-a, whose every acquire commits
// but is reported failed, until as.on is closed.
func startAmbiguous(t *testing.T, b *bundle) (*running, *ambiguousAcquireStore) {
	cfg := withDefaults(t, notifying(b.fastConfig()))
	cfg.Logger = zaptest.NewLogger(t)
	as := &ambiguousAcquireStore{dbStore: storeFor(t, b.db, cfg), on: make(chan struct{}), seen: make(chan []store.Term, 1)}
	return startCoordinator(t, newCoordinator(t, as, testIdentity(t, "node-a"), cfg)), as
}

// caseAmbiguousAcquire: an acquire that committed but was reported failed
// starts no term; the campaign takes the lease again, under a new epoch,
// once acquires succeed, and the epoch taken without a term is never run.
func caseAmbiguousAcquire(t *testing.T, b *bundle) {
	r, as := startAmbiguous(t, b)
	e := election(t, r.Coordinator, coordination.GlobalScope, "ambiguous")
	ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
	defer cancel()
	got := make(chan *coordination.Lease, 1)
	errs := make(chan error, 1)
	go func() {
		l, err := e.Campaign(ctx)
		if err != nil {
			errs <- err
			return
		}
		got <- l
	}()
	var taken []store.Term
	select {
	case taken = <-as.seen:
	case l := <-got:
		t.Fatalf("campaign returned epoch %d while every acquire reported failure", l.Epoch())
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(wait):
		t.Fatalf("no acquire committed within %v", wait)
	}
	// Another round may have committed a later epoch since.
	if got := row(t, b.db, e.Key()); got.Epoch < taken[0].Epoch || got.Holder != r.Holder() {
		t.Fatalf("row %+v, want held by %s at epoch %d or later, as the ambiguous acquires committed", got, r.Holder(), taken[0].Epoch)
	}
	select {
	case l := <-got:
		t.Fatalf("campaign returned epoch %d while every acquire reported failure", l.Epoch())
	default:
	}
	close(as.on)
	var l *coordination.Lease
	select {
	case l = <-got:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(wait):
		t.Fatalf("campaign did not take the lease within %v of acquires succeeding", wait)
	}
	defer release(t, l)
	if top := as.top.Load(); l.Epoch() <= top {
		t.Fatalf("term runs under epoch %d, want one above %d, which was taken without a term", l.Epoch(), top)
	}
	if err := l.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got := row(t, b.db, e.Key()); got.Epoch != l.Epoch() || got.Holder != r.Holder() {
		t.Fatalf("row %+v, want the term's epoch %d", got, l.Epoch())
	}
}

// caseAmbiguousAcquireGivenBack: a TryAcquire that committed but was
// reported failed does not leave the lease held, renewed with the other
// leases of the process's session, by no term: the process gives the row
// back under the epoch it took, and another process takes the lease.
func caseAmbiguousAcquireGivenBack(t *testing.T, b *bundle) {
	a, as := startAmbiguous(t, b)
	c := start(t, b.db, "node-c", b.fastConfig())
	// A lease of its own keeps the process's session renewed, and with
	// it every row the session holds.
	as.pass.Store(true)
	defer release(t, mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "keeps-the-session")))
	as.pass.Store(false)
	const name = "given-back"
	// On a busy machine an attempt can also fail before its acquire
	// commits (a statement out of time); then it is made again, until one
	// has committed and been reported failed.
	var taken []store.Term
	for deadline := time.Now().Add(wait); taken == nil; {
		if l, err := tryAcquire(election(t, a.Coordinator, coordination.GlobalScope, name)); err == nil {
			release(t, l)
			t.Fatalf("TryAcquire succeeded while the store reports every acquire failed")
		}
		select {
		case taken = <-as.seen:
		default:
			if time.Now().After(deadline) {
				t.Fatalf("no failed TryAcquire committed anything within %v", wait)
			}
		}
	}
	key := taken[0].Name
	waitRow(t, b.db, key, "given back", func(r store.Row) bool { return !r.Live() })
	settle(t, b.db)
	// An attempt whose statement ran out of time (a busy machine) is made
	// again; one that finds the lease held fails the test.
	var l *coordination.Lease
	for deadline := time.Now().Add(wait); ; {
		var err error
		l, err = tryAcquire(election(t, c.Coordinator, coordination.GlobalScope, name))
		if err == nil {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			t.Fatalf("TryAcquire of the lease given back: %v", err)
		}
	}
	defer release(t, l)
	if l.Epoch() <= taken[0].Epoch {
		t.Fatalf("the next holder took epoch %d, want one above %d", l.Epoch(), taken[0].Epoch)
	}
}

// caseAmbiguousJoinGivenBack: a pool join that committed but was
// reported failed leaves no member row in the pool that no member of the
// process runs: the process gives it back and joins again, under a new
// member id, and the pool settles with one member per process.
func caseAmbiguousJoinGivenBack(t *testing.T, b *bundle) {
	a, as := startAmbiguous(t, b)
	c := start(t, b.db, "node-c", b.fastConfig())
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	defer func() {
		cancel()
		runs.Wait()
	}()
	for _, r := range []*running{a, c} {
		p, err := r.Pool(coordination.GlobalScope, "ambiguous-join", coordination.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		runs.Go(func() { _ = p.Run(ctx, rec.fn(r.Identity().Instance), nil) })
	}
	select {
	case taken := <-as.seen:
		t.Logf("the join of %s committed epoch %d but was reported failed", taken[0].Name, taken[0].Epoch)
	case <-time.After(wait):
		t.Fatalf("no join committed within %v", wait)
	}
	close(as.on)
	rec.waitSettled(t, 2, 2*wait)
	rec.check(t)
}

// waitRow waits until the row of name satisfies ok, read on db.
func waitRow(t testing.TB, db *gorm.DB, name, what string, ok func(store.Row) bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		r := row(t, db, name)
		if ok(r) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("row %s not %s within %v: %+v", name, what, wait, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
