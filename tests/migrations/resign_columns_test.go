package migrations_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/migrations"
)

// versionsFrom lists the versions from v to the latest.
func versionsFrom(v int) []int {
	var out []int
	for ; v <= migrations.LatestVersion; v++ {
		out = append(out, v)
	}
	return out
}

// resignColumns are the columns versions 6 (leases) and 7 (sessions) add.
var resignColumns = []struct{ table, column string }{
	{"leasehold_leases", "resign_epoch"},
	{"leasehold_leases", "prefer_holder"},
	{"leasehold_leases", "prefer_until_us"},
	{"leasehold_sessions", "notice"},
}

// dropColumn drops a column, as a database of an earlier version lacks it.
func dropColumn(t *testing.T, db *gorm.DB, table, column string) {
	t.Helper()
	if db.Name() == "sqlserver" {
		// The column's DEFAULT is a constraint of its own, named by the
		// server, which must go first.
		if err := db.Exec("DECLARE @c sysname = (SELECT dc.name FROM sys.default_constraints dc" +
			" JOIN sys.columns c ON c.object_id = dc.parent_object_id AND c.column_id = dc.parent_column_id" +
			" WHERE dc.parent_object_id = OBJECT_ID(N'" + table + "') AND c.name = N'" + column + "');" +
			" IF @c IS NOT NULL EXEC(N'ALTER TABLE [" + table + "] DROP CONSTRAINT [' + @c + N']')").Error; err != nil {
			t.Fatalf("drop the default of %s.%s: %v", table, column, err)
		}
	}
	if err := db.Exec("ALTER TABLE " + table + " DROP COLUMN " + column).Error; err != nil {
		t.Fatalf("drop %s.%s: %v", table, column, err)
	}
}

// caseResignColumnsAdded: a database at version 5, with leases and
// sessions in it, migrated by several processes at once, gets the resign
// columns with their defaults on the existing rows, from exactly one run.
// A run that died after adding the lease columns (MySQL's DDL commits on
// its own) does not fail the next.
func caseResignColumnsAdded(t *testing.T, tg testdb.Target) {
	db := tg.Open(t)
	ctx := context.Background()
	if _, err := migrations.Migrate(ctx, db, migrations.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range resignColumns {
		dropColumn(t, db, c.table, c.column)
	}
	if err := db.Exec("DELETE FROM leasehold_schema_migrations WHERE version >= 6").Error; err != nil {
		t.Fatal(err)
	}
	if v, err := migrations.Version(ctx, db, migrations.Options{}); err != nil || v != 5 {
		t.Fatalf("Version = %d, %v; want 5", v, err)
	}
	if err := db.Exec("INSERT INTO leasehold_sessions (id, holder, created_at_us, renewed_at_us, expires_at_us) VALUES ('s1', 'node-a/test/i1', 1, 2, 3)").Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO leasehold_leases (name, holder, session_id, epoch, acquired_at_us, renewed_at_us, expires_at_us) VALUES ('global/billing', 'node-a/test/i1', 's1', 4, 1, 2, 3)").Error; err != nil {
		t.Fatal(err)
	}

	const runs = 6
	var wg sync.WaitGroup
	results := make([][]int, runs)
	errs := make([]error, runs)
	gate := make(chan struct{})
	for i := range runs {
		wg.Go(func() {
			<-gate
			mctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			results[i], errs[i] = migrations.Migrate(mctx, db, migrations.Options{})
		})
	}
	close(gate)
	wg.Wait()
	appliedBy := 0
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("Migrate run %d: %v", i, errs[i])
		}
		if len(results[i]) > 0 {
			appliedBy++
			if want := versionsFrom(6); !slices.Equal(results[i], want) {
				t.Errorf("Migrate run %d applied %v, want %v", i, results[i], want)
			}
		}
	}
	if appliedBy != 1 {
		t.Fatalf("%d runs applied version 6, want exactly 1", appliedBy)
	}
	var lease struct {
		Holder        string
		Epoch         int64
		ResignEpoch   int64
		PreferHolder  string
		PreferUntilUs int64
	}
	if err := db.Raw("SELECT holder, epoch, resign_epoch, prefer_holder, prefer_until_us FROM leasehold_leases WHERE name = 'global/billing'").
		Row().Scan(&lease.Holder, &lease.Epoch, &lease.ResignEpoch, &lease.PreferHolder, &lease.PreferUntilUs); err != nil {
		t.Fatal(err)
	}
	if lease.Holder != "node-a/test/i1" || lease.Epoch != 4 || lease.ResignEpoch != 0 || lease.PreferHolder != "" || lease.PreferUntilUs != 0 {
		t.Fatalf("lease row after the migration = %+v, want its holder and epoch kept and no resign request", lease)
	}
	var notice, expires int64
	if err := db.Raw("SELECT notice, expires_at_us FROM leasehold_sessions WHERE id = 's1'").Row().Scan(&notice, &expires); err != nil {
		t.Fatal(err)
	}
	if notice != 0 || expires != 3 {
		t.Fatalf("session after the migration: notice %d, expires %d; want 0 and 3", notice, expires)
	}

	// A run that died after version 6's DDL, before recording it.
	dropColumn(t, db, "leasehold_sessions", "notice")
	if err := db.Exec("DELETE FROM leasehold_schema_migrations WHERE version >= 6").Error; err != nil {
		t.Fatal(err)
	}
	applied, err := migrations.Migrate(ctx, db, migrations.Options{})
	if want := versionsFrom(6); err != nil || !slices.Equal(applied, want) {
		t.Fatalf("Migrate after a half-applied version 6 = %v, %v; want %v", applied, err, want)
	}
	if v, err := migrations.Version(ctx, db, migrations.Options{}); err != nil || v != migrations.LatestVersion {
		t.Fatalf("Version = %d, %v; want %d", v, err, migrations.LatestVersion)
	}
}
