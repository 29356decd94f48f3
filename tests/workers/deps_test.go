package workers_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestPGXOnlyByChoice lists the packages that programs on each database
// link (go list -deps): a program on MySQL or SQLite that imports
// coordination and workers does not link pgx, which only the PostgreSQL
// notifications (package pgnotify) import. The program on PostgreSQL that
// chooses them shows that the check sees pgx where it is.
func TestPGXOnlyByChoice(t *testing.T) {
	linkedOnlyBy(t, "github.com/jackc/pgx", "only package pgnotify may import it", map[string]bool{
		"mysql": false, "sqlite": false, "postgres": true,
	})
}

// TestMySQLDriverOnlyOnMySQL: a program on PostgreSQL or SQLite that
// imports coordination and workers does not link the MySQL driver
// (github.com/go-sql-driver/mysql), nor registers it with database/sql;
// the store reads the driver's errors without importing it
// (internal/store/mysql.go, mysqlErrorNumber). The program on MySQL, whose
// gorm driver imports it, shows that the check sees it where it is.
func TestMySQLDriverOnlyOnMySQL(t *testing.T) {
	linkedOnlyBy(t, "github.com/go-sql-driver/mysql", "only gorm's MySQL driver may import it", map[string]bool{
		"postgres": false, "sqlite": false, "mysql": true,
	})
}

// linkedOnlyBy checks, for each program of ./testdata/deps, that it links
// a package under prefix if and only if links says so; why says who may
// import it.
func linkedOnlyBy(t *testing.T, prefix, why string, links map[string]bool) {
	t.Parallel()
	for program, want := range links {
		t.Run(program, func(t *testing.T) {
			t.Parallel()
			got := linked(t, program, prefix)
			switch {
			case want && len(got) == 0:
				t.Fatalf("the program on %s links no package of %s: the check cannot see it", program, prefix)
			case !want && len(got) > 0:
				t.Fatalf("the program on %s links %s (%s): %s", program, prefix, why, strings.Join(got, ", "))
			}
		})
	}
}

// linked returns the packages under prefix that the program in
// ./testdata/deps/<program> links, as go list -deps lists them.
func linked(t *testing.T, program, prefix string) []string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list the programs' packages: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-deps", "./testdata/deps/"+program).Output()
	if err != nil {
		msg := ""
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps ./testdata/deps/%s: %v\n%s", program, err, msg)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}
