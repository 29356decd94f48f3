package store_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in internal/store/testdata")

// goldenDir holds the golden files, beside the statements they pin.
var goldenDir = filepath.Join("..", "..", "internal", "store", "testdata")

// dryRun opens a gorm handle that renders statements without a server.
func dryRun(t *testing.T, name string) *gorm.DB {
	t.Helper()
	var d gorm.Dialector
	switch name {
	case store.Postgres:
		d = postgres.New(postgres.Config{DSN: "host=127.0.0.1 user=x dbname=x sslmode=disable"})
	case store.MySQL:
		d = mysql.New(mysql.Config{DSN: "x:y@tcp(127.0.0.1:1)/x", SkipInitializeWithVersion: true})
	case store.SQLite:
		d = sqlite.Open("file::memory:")
	case store.SQLServer:
		d = sqlserver.Open("sqlserver://x:y@127.0.0.1:1?database=x")
	}
	db, err := gorm.Open(d, &gorm.Config{DryRun: true, DisableAutomaticPing: true, SkipDefaultTransaction: true, Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open %s in dry-run mode: %v", name, err)
	}
	// The handle opens a pool it never connects with; close it, so the
	// package's goroutine check (testdb.Main) finds nothing left.
	if sqlDB, err := db.DB(); err == nil {
		t.Cleanup(func() { _ = sqlDB.Close() })
	}
	return db
}

// render returns the SQL exactly as the dialector of db sends it, with the
// bound values listed after it.
func render(db *gorm.DB) func(q string, args ...any) string {
	return func(q string, args ...any) string {
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
}

// TestGoldenSQL pins every statement leasehold sends, per dialect, in
// internal/store/testdata/<dialect>.sql, rendered by the dialect's own
// gorm dialector (store.Catalogue lists them). SQL Server cannot run on
// the test machines, so for it these files are the test: each statement
// was checked by hand against the T-SQL reference, and any change shows
// up here for review. Run with -update to rewrite the files after an
// intended change.
func TestGoldenSQL(t *testing.T) {
	for _, name := range store.Dialects {
		t.Run(name, func(t *testing.T) {
			got, err := store.Catalogue(name, render(dryRun(t, name)))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(goldenDir, name+".sql"), got)
		})
	}
}

// checkGolden compares got with the golden file at path, or writes it
// there with -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./store/ -run TestGoldenSQL -update in tests/ to create it)", err)
	}
	if got != string(want) {
		t.Errorf("the statements differ from %s; review the change and rerun with -update.\n--- got:\n%s", path, got)
	}
}
