package store

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// dryRun opens a gorm handle that renders statements without a server.
func dryRun(t *testing.T, name string) *gorm.DB {
	t.Helper()
	var d gorm.Dialector
	switch name {
	case Postgres:
		d = postgres.New(postgres.Config{DSN: "host=127.0.0.1 user=x dbname=x sslmode=disable"})
	case MySQL:
		d = mysql.New(mysql.Config{DSN: "x:y@tcp(127.0.0.1:1)/x", SkipInitializeWithVersion: true})
	case SQLite:
		d = sqlite.Open("file::memory:")
	case SQLServer:
		d = sqlserver.Open("sqlserver://x:y@127.0.0.1:1?database=x")
	}
	db, err := gorm.Open(d, &gorm.Config{DryRun: true, DisableAutomaticPing: true, SkipDefaultTransaction: true, Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open %s in dry-run mode: %v", name, err)
	}
	return db
}

// render returns the SQL exactly as the dialector sends it, with the
// bound values listed after it.
func render(db *gorm.DB, q string, args ...any) string {
	stmt := db.Exec(q, args...).Statement
	out := stmt.SQL.String()
	if len(stmt.Vars) > 0 {
		vars := make([]string, len(stmt.Vars))
		for i, v := range stmt.Vars {
			vars[i] = fmt.Sprintf("%#v", v)
		}
		out += "\n-- args: " + strings.Join(vars, ", ")
	}
	return out
}

// TestGoldenSQL pins every statement leasehold sends, per dialect, in
// testdata/<dialect>.sql. SQL Server cannot run on the test machines, so
// for it these files are the test: each statement was checked by hand
// against the T-SQL reference, and any change shows up here for review.
// Run with -update to rewrite the files after an intended change.
func TestGoldenSQL(t *testing.T) {
	for _, name := range Dialects {
		t.Run(name, func(t *testing.T) {
			db := dryRun(t, name)
			d := dialects[name]
			tables, _ := TablesFor("")
			leases := d.quote(tables.Leases)
			ttl := (15 * time.Second).Microseconds()
			one := []Term{{Name: "cluster/eu-1/reports", Epoch: 7}}
			three := []Term{{Name: "cluster/eu-1/reports", Epoch: 7}, {Name: "global/billing", Epoch: 3}, {Name: "global/outbox", Epoch: 12}}
			holder := "node-a/eu-1/0123456789abcdef0123456789abcdef"

			var b strings.Builder
			section := func(title, sql string) { fmt.Fprintf(&b, "-- %s\n%s;\n\n", title, sql) }
			ins, n := d.sqlInsertIfAbsent(leases)
			insArgs := []any{"global/billing"}
			if n == 2 {
				insArgs = append(insArgs, "global/billing")
			}
			section("insert the lease row if absent", render(db, ins, insArgs...))
			section("acquire (new epoch in the same statement)", render(db, d.sqlAcquire(leases, ttl), holder, "global/billing", holder))
			if d.acquireResult == resultReadBack {
				section("read the acquired epoch back (in the acquire's transaction)", render(db, d.sqlAcquiredEpoch(leases), "global/billing"))
			}
			q, args := d.sqlRenew(leases, ttl, holder, one)
			section("renew one lease", render(db, q, args...))
			q, args = d.sqlRenew(leases, ttl, holder, three)
			section("renew three leases in one statement", render(db, q, args...))
			q, args = d.sqlRelease(leases, holder, one)
			section("release one lease", render(db, q, args...))
			q, args = d.sqlRelease(leases, holder, three)
			section("release three leases", render(db, q, args...))
			q, args = d.sqlSetData(leases, holder, one[0], "42")
			section("set a term's data (a member's acknowledged generation)", render(db, q, args...))
			section("publish a pool's next generation (compare-and-set)", render(db, d.sqlPublish(leases, 41), "a1b2,c3d4", "pool|global/orders|generation"))
			lo, hi, _ := prefixRange("pool|global/orders|member|")
			section("prune dead pool members", render(db, d.sqlPruneDead(leases, ttl*10), lo, hi))
			section("read leases", render(db, d.sqlSelect(leases, 2), "global/billing", "global/outbox"))
			section("list all leases", render(db, d.sqlList(leases, false)))
			lo, hi, _ = prefixRange("pool|global/orders|")
			section("list leases by prefix", render(db, d.sqlList(leases, true), lo, hi))
			section("database clock", render(db, d.sqlNow()))
			section("fencing check inside the caller's transaction", render(db, d.sqlFence(leases), "global/billing"))
			section("create the version table", d.createMigrationsTable(tables))
			for _, m := range migrations {
				for _, s := range m.statements(d, tables) {
					section(fmt.Sprintf("migration %d: %s", m.Version, m.Description), s)
				}
				section(fmt.Sprintf("record migration %d", m.Version), render(db, d.sqlRecordVersion(tables, m.Version), m.Description))
			}
			section("current schema version", render(db, d.sqlCurrentVersion(tables)))
			lockName := migrationLockKey(tables)
			if name == MySQL {
				lockName = mysqlLockName("app", lockName) // "app" stands for DATABASE()
			}
			lockArgs := []any{lockName, int64(60)}
			for _, s := range migrationLockSQL(d, tables, time.Minute) {
				section("migration lock", render(db, s, lockArgs[:strings.Count(s, "?")]...))
			}

			path := filepath.Join("testdata", name+".sql")
			got := b.String()
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/store/ -run TestGoldenSQL -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("SQL for %s differs from %s; review the change and rerun with -update.\n--- got:\n%s", name, path, got)
			}
		})
	}
}
