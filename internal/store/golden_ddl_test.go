package store

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenDDL pins the hand-applied DDL of every dialect from every
// schema version, in testdata/ddl-<dialect>.sql. The migrations tests
// apply it twice on PostgreSQL, MariaDB and SQLite; for SQL Server this
// file is the test. Run with -update to rewrite the files.
func TestGoldenDDL(t *testing.T) {
	for _, name := range Dialects {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			for from := 0; from <= LatestVersion; from++ {
				script, err := Script(name, "", from)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "-- ======== from version %d ========\n%s\n", from, script)
			}
			checkGolden(t, filepath.Join("testdata", "ddl-"+name+".sql"), "TestGoldenDDL", b.String())
		})
	}
}

func TestDDLFromRejectsVersions(t *testing.T) {
	for _, from := range []int{-1, LatestVersion + 1} {
		_, err := DDLFrom(Postgres, "", from)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), fmt.Sprint(from)) || !strings.Contains(err.Error(), "From") {
			t.Errorf("DDLFrom(%d): err = %v, want ErrInvalidConfig naming From and the value", from, err)
		}
	}
}

// checkGolden compares got with the golden file at path, or writes it there
// with -update. test names the test that writes it.
func checkGolden(t *testing.T, path, test, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/store/ -run %s -update to create it)", err, test)
	}
	if got != string(want) {
		t.Errorf("%s: the statements differ from %s; review the change and rerun with -update.\n--- got:\n%s", test, path, got)
	}
}
