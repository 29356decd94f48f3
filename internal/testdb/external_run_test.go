package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// externalSlice is the part of the coordination tests
// TestExternalRunLeavesNothingBehind runs against the private servers as
// if they were the user's: a few conformance cases on each server
// dialect, and the test that connects as a role of its own.
var externalSlice = struct {
	run  string
	want []string // tests that must pass, not skip
}{
	run: "^(TestConformance|TestFailoverDetectionUnavailable)$/^(postgres|mysql)$/^(AcquireRenewRelease|FenceInUserTransaction|CustomTablePrefix)$",
	want: []string{
		"TestFailoverDetectionUnavailable",
		"TestConformance/postgres/AcquireRenewRelease",
		"TestConformance/postgres/FenceInUserTransaction",
		"TestConformance/postgres/CustomTablePrefix",
		"TestConformance/mysql/AcquireRenewRelease",
		"TestConformance/mysql/FenceInUserTransaction",
		"TestConformance/mysql/CustomTablePrefix",
	},
}

// TestExternalRunLeavesNothingBehind runs a slice of the coordination
// tests in a test binary of their own, with LEASEHOLD_TEST_POSTGRES_DSN
// and LEASEHOLD_TEST_MYSQL_DSN naming this binary's private servers, as a
// user names a server of theirs, once with a key=value and once with a
// URL PostgreSQL DSN. docs/operations.md promises such a run changes
// nothing there but the databases it creates and drops: afterwards the
// servers have the same roles, users and databases as before.
func TestExternalRunLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a slice of the coordination tests")
	}
	for _, d := range []string{"postgres", "mysql"} {
		if External(d) {
			t.Skipf("LOUD: testdb: SKIPPING: this test runs the coordination tests against the private %s server as if it were "+
				"the user's, and reads what they leave there, but %s points the tests at another server", d, dialectOf(d).env)
		}
	}
	pg := Target{Name: "postgres", Dialect: "postgres"}.sharedServer(t)
	my := Target{Name: "mysql", Dialect: "mysql"}.sharedServer(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("LOUD: testdb: SKIPPING: no go command on PATH to build the coordination tests with: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "coordination.test")
	build := []string{"test", "-c", "-o", bin}
	if raceEnabled {
		build = append(build, "-race")
	}
	// The coordination tests that need a database live in the tests
	// module (tests/coordination), two directories up from here.
	buildCmd := exec.CommandContext(ctx, goBin, append(build, "./coordination")...)
	buildCmd.Dir = filepath.Join("..", "..", "tests")
	if out, err := buildCmd.CombinedOutput(); err != nil {
		t.Fatalf("build the coordination tests: %v\n%s", err, out)
	}

	// The database the DSNs name, as a user's DSN names one: only the
	// run's admin pools connect to it, so its session count shows that
	// the run used this server and not private servers of its own.
	home := uniqueName(t)
	if err := pg.CreateDatabase(ctx, home); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.DropDatabase(context.Background(), home) }()

	pgAdmin, err := pg.adminPool()
	if err != nil {
		t.Fatal(err)
	}
	myAdmin, err := my.adminPool()
	if err != nil {
		t.Fatal(err)
	}
	before := serverObjects(t, ctx, pgAdmin, myAdmin)
	createdBefore := mysqlCreates(t, ctx, myAdmin)

	for _, form := range []struct{ name, dsn string }{
		{"keyvalue", pg.DSN(home)},
		{"url", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port(), home)},
	} {
		cmd := exec.CommandContext(ctx, bin, "-test.count=1", "-test.v", "-test.timeout=4m", "-test.run", externalSlice.run)
		cmd.Dir = filepath.Join("..", "..", "coordination")
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "LEASEHOLD_TEST_")
		}), PostgresDSNEnv+"="+form.dsn, MySQLDSNEnv+"="+my.DSN(""))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: the coordination tests against the servers as external ones: %v; the end of their output:\n%s",
				form.name, err, tail(out))
		}
		for _, name := range externalSlice.want {
			if !strings.Contains(string(out), "--- PASS: "+name+" ") {
				t.Errorf("%s: %s did not pass (skipped, or not run)", form.name, name)
			}
		}
	}

	// A session's statistics reach the server as its backend exits,
	// which may come a moment after the run's process has.
	sessions := postgresSessions(t, ctx, pgAdmin, home)
	for deadline := time.Now().Add(30 * time.Second); sessions == 0 && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
		sessions = postgresSessions(t, ctx, pgAdmin, home)
	}
	if sessions == 0 {
		t.Errorf("no session connected to the database %s the PostgreSQL DSN names: the run did not use this server", home)
	}
	if n := mysqlCreates(t, ctx, myAdmin) - createdBefore; n < 2*3 {
		t.Errorf("the run created %d databases on the MariaDB server, want at least %d: it did not use this server", n, 2*3)
	}
	after := serverObjects(t, ctx, pgAdmin, myAdmin)
	for kind, names := range after {
		for _, n := range names {
			if !slices.Contains(before[kind], n) {
				t.Errorf("the run left the %s %q behind", kind, n)
			}
		}
	}
}

// serverObjects lists what the servers hold beyond any one database: the
// roles and databases of PostgreSQL and the users and databases of
// MariaDB, by kind.
func serverObjects(t *testing.T, ctx context.Context, pg, my *sql.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, q := range []struct{ kind, query string }{
		{"PostgreSQL role", "SELECT rolname FROM pg_roles"},
		{"PostgreSQL database", "SELECT datname FROM pg_database"},
	} {
		out[q.kind] = queryStrings(t, ctx, pg, q.query)
	}
	for _, q := range []struct{ kind, query string }{
		{"MariaDB user", "SELECT CONCAT(User, '@', Host) FROM mysql.user"},
		{"MariaDB database", "SHOW DATABASES"},
	} {
		out[q.kind] = queryStrings(t, ctx, my, q.query)
	}
	return out
}

func queryStrings(t *testing.T, ctx context.Context, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// postgresSessions returns how many sessions the server's statistics
// count for database name.
func postgresSessions(t *testing.T, ctx context.Context, db *sql.DB, name string) int64 {
	t.Helper()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatalf("sessions of %s: %v", name, err)
	}
	return n
}

// mysqlCreates returns how many CREATE DATABASE statements the MariaDB
// server has run since it started.
func mysqlCreates(t *testing.T, ctx context.Context, db *sql.DB) int64 {
	t.Helper()
	var name string
	var n int64
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_create_db'").Scan(&name, &n); err != nil {
		t.Fatalf("Com_create_db: %v", err)
	}
	return n
}

// tail returns the last lines of a test binary's output, at most 8 KB.
func tail(out []byte) string {
	const most = 8 << 10
	if len(out) <= most {
		return string(out)
	}
	s := string(out[len(out)-most:])
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}
