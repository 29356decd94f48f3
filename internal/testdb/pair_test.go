package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/dbopen"
	"gorm.io/gorm"
)

// pairTestTimeout bounds each step of the pair tests that waits on a
// server: generous, for a busy two-core machine.
const pairTestTimeout = 90 * time.Second

func pairCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pairTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// openPair opens a gorm handle on the pair's DSN, as the library's users
// would, and creates table pair_rows in the new database name.
func openPair(t *testing.T, p *Pair, name string) *gorm.DB {
	t.Helper()
	ctx := pairCtx(t)
	if err := p.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	db, err := dbopen.Open(p.Driver(), p.DSN(name), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeGorm(t, db) })
	if err := db.WithContext(ctx).Exec("CREATE TABLE pair_rows (id int PRIMARY KEY)").Error; err != nil {
		t.Fatal(err)
	}
	return db
}

// insertRows commits rows from..to, one transaction each.
func insertRows(t *testing.T, db *gorm.DB, from, to int) {
	t.Helper()
	ctx := pairCtx(t)
	for id := from; id <= to; id++ {
		if err := db.WithContext(ctx).Exec("INSERT INTO pair_rows (id) VALUES (?)", id).Error; err != nil {
			t.Fatalf("insert row %d: %v", id, err)
		}
	}
}

// rowIDs reads the ids in rows, retrying while the handle reconnects after
// a failover: the pool's old connections fail once each.
func rowIDs(t *testing.T, db *gorm.DB) []int {
	t.Helper()
	var ids []int
	retry(t, "read the rows", func(ctx context.Context) error {
		ids = nil
		return db.WithContext(ctx).Raw("SELECT id FROM pair_rows ORDER BY id").Scan(&ids).Error
	})
	return ids
}

// incarnation is what identifies a database's history: the cluster's
// system identifier, which a base backup and a promotion keep, and the
// timeline, which a promotion raises by one.
type incarnation struct {
	system   string
	timeline int64
}

func incarnationOf(t *testing.T, db *gorm.DB) incarnation {
	t.Helper()
	var row struct {
		System   string
		Timeline string
	}
	retry(t, "read the incarnation", func(ctx context.Context) error {
		return db.WithContext(ctx).Raw(`SELECT system_identifier::text AS system,
			substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS timeline FROM pg_control_system()`).Scan(&row).Error
	})
	tl, err := strconv.ParseInt(row.Timeline, 16, 64)
	if err != nil || row.System == "" {
		t.Fatalf("incarnation: system %q timeline %q: %v", row.System, row.Timeline, err)
	}
	return incarnation{system: row.System, timeline: tl}
}

// retry calls f until it succeeds, at most pairTestTimeout.
func retry(t *testing.T, what string, f func(context.Context) error) {
	t.Helper()
	ctx := pairCtx(t)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(fctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: still failing after %v: %v", what, pairTestTimeout, err)
		case <-tick.C:
		}
	}
}

func wantRows(t *testing.T, db *gorm.DB, n int) {
	t.Helper()
	ids := rowIDs(t, db)
	if len(ids) != n || (n > 0 && (ids[0] != 1 || ids[n-1] != n)) {
		t.Fatalf("rows = %d ids (%v...), want exactly 1..%d", len(ids), head(ids), n)
	}
}

func head(ids []int) []int { return ids[:min(len(ids), 5)] }

// TestPairSyncFailover: in a sync pair a commit waits for the standby;
// after the primary stops (and, the second time, is killed with SIGKILL)
// and the standby is promoted, every committed row is on the new primary,
// the client reconnects through the unchanged DSN, the timeline is one
// higher and the system identifier the same. Rebuild makes the old
// primary a standby again, and the second failover swaps the roles back.
func TestPairSyncFailover(t *testing.T) {
	t.Parallel()
	p := PostgresPair(t, Sync)
	if p.Mode().String() != "sync" {
		t.Fatalf("mode %q, want sync", p.Mode())
	}
	dsn := p.DSN("app")
	db := openPair(t, p, "app")
	first, second := p.Primary(), p.Standby()

	// A commit with the standby stopped waits for it (wait event SyncRep)
	// and completes once it is back.
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), pairTestTimeout)
		defer cancel()
		done <- db.WithContext(ctx).Exec("INSERT INTO pair_rows (id) VALUES (1)").Error
	}()
	retry(t, "see the insert wait for the standby", func(ctx context.Context) error {
		var n int
		err := rawDB(t, first).QueryRowContext(ctx,
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE 'INSERT INTO pair_rows%'").Scan(&n)
		if err == nil && n != 1 {
			err = fmt.Errorf("%d inserts waiting for the synchronous standby", n)
		}
		return err
	})
	select {
	case err := <-done:
		t.Fatalf("the insert finished with the synchronous standby stopped: %v", err)
	default:
	}
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the insert waiting for the standby: %v", err)
	}

	insertRows(t, db, 2, 50)
	before := incarnationOf(t, db)

	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if p.Primary() != second || p.Standby() != first {
		t.Fatal("after Promote, Primary is not the promoted server")
	}
	wantRows(t, db, 50)
	after := incarnationOf(t, db)
	if after.system != before.system || after.timeline != before.timeline+1 {
		t.Fatalf("incarnation %+v after the promotion, want system %s timeline %d", after, before.system, before.timeline+1)
	}
	insertRows(t, db, 51, 60) // the promoted server commits without a standby

	if err := p.Rebuild(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := p.DSN("app"); got != dsn {
		t.Fatalf("DSN after Rebuild %q, want %q", got, dsn)
	}
	if !first.Running() || p.Standby() != first {
		t.Fatal("after Rebuild the old primary is not the running standby")
	}
	insertRows(t, db, 61, 100)

	if err := second.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if p.Primary() != first {
		t.Fatal("the second failover did not make the first primary the primary again")
	}
	wantRows(t, db, 100)
	again := incarnationOf(t, db)
	if again.system != before.system || again.timeline != before.timeline+2 {
		t.Fatalf("incarnation %+v after the second promotion, want system %s timeline %d", again, before.system, before.timeline+2)
	}
}

// TestPairAsyncLosesWrites makes the lost write of an async failover
// deterministic: rows committed on the primary while the standby is
// stopped are absent on the standby promoted after the primary stops.
func TestPairAsyncLosesWrites(t *testing.T) {
	t.Parallel()
	p := PostgresPair(t, Async)
	if p.Mode().String() != "async" {
		t.Fatalf("mode %q, want async", p.Mode())
	}
	db := openPair(t, p, "app")
	insertRows(t, db, 1, 20)
	if err := p.WaitCaughtUp(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	before := incarnationOf(t, db)
	if err := p.Standby().Stop(); err != nil {
		t.Fatal(err)
	}
	insertRows(t, db, 21, 40) // acknowledged, on the primary only
	wantRows(t, db, 40)
	if err := p.Primary().Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Standby().Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	wantRows(t, db, 20)
	after := incarnationOf(t, db)
	if after.system != before.system || after.timeline != before.timeline+1 {
		t.Fatalf("incarnation %+v after the promotion, want system %s timeline %d", after, before.system, before.timeline+1)
	}
	// The ids the old primary used are free again on the new one: the
	// lost write is invisible, not a conflict.
	insertRows(t, db, 21, 21)
	if err := p.Rebuild(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Switched to Sync, the rebuilt standby is reported synchronous.
	if err := p.SetMode(pairCtx(t), Sync); err != nil {
		t.Fatal(err)
	}
	var state string
	if err := rawDB(t, p.Primary()).QueryRowContext(pairCtx(t), "SELECT sync_state FROM pg_stat_replication").Scan(&state); err != nil || state != "sync" {
		t.Fatalf("sync_state %q after SetMode(Sync): %v", state, err)
	}
	insertRows(t, db, 22, 30)
	if err := p.SetMode(pairCtx(t), Async); err != nil {
		t.Fatal(err)
	}
	retry(t, "see the standby asynchronous", func(ctx context.Context) error {
		err := rawDB(t, p.Primary()).QueryRowContext(ctx, "SELECT sync_state FROM pg_stat_replication").Scan(&state)
		if err == nil && state != "async" {
			err = fmt.Errorf("sync_state %q", state)
		}
		return err
	})
}

// rawDB returns s's admin pool.
func rawDB(t *testing.T, s *Server) *sql.DB {
	t.Helper()
	db, err := s.adminPool()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPairFunctionsForOrdinaryUser records which of the functions that
// tell a database's incarnation an ordinary role (no superuser, no
// pg_monitor) may call, on a primary and on a standby: the library reads
// them from an application's connection.
func TestPairFunctionsForOrdinaryUser(t *testing.T) {
	t.Parallel()
	p := PostgresPair(t, Async)
	ctx := pairCtx(t)
	if err := p.Primary().exec(ctx, "CREATE ROLE app_user LOGIN"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	queries := []struct{ name, query string }{
		{"pg_control_system", "SELECT system_identifier::text FROM pg_control_system()"},
		{"pg_current_wal_lsn", "SELECT pg_current_wal_lsn()::text"},
		{"pg_walfile_name", "SELECT pg_walfile_name('0/1000000'::pg_lsn)"},
		{"timeline", "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)"},
		{"pg_control_checkpoint", "SELECT timeline_id::text FROM pg_control_checkpoint()"},
	}
	// want: the result's error, "" when the call succeeds.
	want := map[string]map[string]string{
		"primary": {},
		"standby": {
			"pg_current_wal_lsn": "recovery is in progress",
			"pg_walfile_name":    "recovery is in progress",
			"timeline":           "recovery is in progress",
		},
	}
	for role, srv := range map[string]*Server{"primary": p.Primary(), "standby": p.Standby()} {
		db, err := sql.Open("pgx", strings.Replace(srv.DSN("postgres"), "user=postgres", "user=app_user", 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			var out string
			err := db.QueryRowContext(ctx, q.query).Scan(&out)
			got := ""
			if err != nil {
				got = err.Error()
			}
			t.Logf("%s as app_user: %s: %q %v", role, q.name, out, err)
			w := want[role][q.name]
			if (w == "") != (err == nil) || (w != "" && !strings.Contains(got, w)) {
				t.Errorf("%s as app_user: %s: error %v, want %q", role, q.name, err, w)
			}
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}
	var isSuper bool
	if err := rawDB(t, p.Primary()).QueryRowContext(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = 'app_user'").Scan(&isSuper); err != nil || isSuper {
		t.Fatalf("app_user superuser %v: %v", isSuper, err)
	}
}
