package migrations_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/redact"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/migrations"
)

const wait = 60 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv("LEASEHOLD_MIGRATE_HELPER") == "1" {
		os.Exit(migrateHelper())
	}
	testdb.Main(m)
}

// TestMigrations runs the migration cases on every database target.
func TestMigrations(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, tg testdb.Target)
	}{
		{"Idempotent", caseIdempotent},
		{"ConcurrentProcesses", caseConcurrentProcesses},
		{"HandAppliedDDL", caseHandAppliedDDL},
		{"DDLFromEveryVersionTwice", caseDDLFromTwice},
		{"DDLFromAboveTheRealVersionKeepsRows", caseDDLFromAboveRealVersion},
		{"ScriptFromThroughClientTwice", caseScriptThroughClient},
		{"PrefixesAreIndependent", casePrefixes},
		{"PoolRowsRenamed", casePoolRowsRenamed},
		{"ResignColumnsAdded", caseResignColumnsAdded},
	}
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, tg) })
			}
		})
	}
}

func caseIdempotent(t *testing.T, tg testdb.Target) {
	db := tg.Open(t)
	ctx := context.Background()
	if v, err := migrations.Version(ctx, db, migrations.Options{}); err != nil || v != 0 {
		t.Fatalf("Version on an empty database = %d, %v; want 0", v, err)
	}
	applied, err := migrations.Migrate(ctx, db, migrations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != migrations.LatestVersion {
		t.Fatalf("first Migrate applied %v, want versions 1..%d", applied, migrations.LatestVersion)
	}
	for range 2 {
		applied, err = migrations.Migrate(ctx, db, migrations.Options{})
		if err != nil || len(applied) != 0 {
			t.Fatalf("repeated Migrate applied %v, %v; want nothing", applied, err)
		}
	}
	if v, err := migrations.Version(ctx, db, migrations.Options{}); err != nil || v != migrations.LatestVersion {
		t.Fatalf("Version = %d, %v; want %d", v, err, migrations.LatestVersion)
	}
	var rows int64
	if err := db.Table("leasehold_schema_migrations").Count(&rows).Error; err != nil || rows != int64(migrations.LatestVersion) {
		t.Fatalf("version rows = %d, %v", rows, err)
	}
}

// caseConcurrentProcesses starts ten OS processes that migrate the same
// empty database at the same moment: all must succeed, exactly one applies
// the steps, and the schema exists once.
func caseConcurrentProcesses(t *testing.T, tg testdb.Target) {
	const procs = 10
	driver, dsn := tg.OpenDSN(t)
	if tg.Dialect == "sqlite" {
		// The file is created, and switched to WAL, before the helpers
		// open it: of ten first opens at once, one failed with
		// SQLITE_BUSY while another switched the new file to WAL. The
		// schema is still empty; migrating it at once is what this case
		// is about.
		db, err := dbopen.Open(driver, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Exec("SELECT 1").Error; err != nil {
			t.Fatal(err)
		}
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	var ps []proc
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "LEASEHOLD_MIGRATE_HELPER=1", "HELPER_DRIVER="+driver, "HELPER_DSN="+dsn)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		ps = append(ps, proc{cmd, stdin, bufio.NewScanner(stdout)})
	}
	// Barrier: every process has connected before any starts migrating.
	for i, p := range ps {
		if !scanWithin(p.out, wait) || p.out.Text() != "ready" {
			t.Fatalf("helper %d did not get ready: %q", i, p.out.Text())
		}
	}
	for _, p := range ps {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var appliedBy []int
	for i, p := range ps {
		if !scanWithin(p.out, wait) {
			t.Fatalf("helper %d gave no result", i)
		}
		res := p.out.Text()
		if !strings.HasPrefix(res, "applied ") {
			t.Fatalf("helper %d failed: %s", i, res)
		}
		if res != "applied []" {
			appliedBy = append(appliedBy, i)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("helper %d exited with %v", i, err)
		}
	}
	if len(appliedBy) != 1 {
		t.Fatalf("%d processes applied migrations (%v), want exactly 1", len(appliedBy), appliedBy)
	}
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB(db)
	if v, err := migrations.Version(context.Background(), db, migrations.Options{}); err != nil || v != migrations.LatestVersion {
		t.Fatalf("Version after concurrent migration = %d, %v", v, err)
	}
}

// scanWithin reads one line, failing after d.
func scanWithin(s *bufio.Scanner, d time.Duration) bool {
	got := make(chan bool, 1)
	go func() { got <- s.Scan() }()
	select {
	case ok := <-got:
		return ok
	case <-time.After(d):
		return false
	}
}

// migrateHelper is the body of a helper process.
func migrateHelper() int {
	db, err := dbopen.Open(os.Getenv("HELPER_DRIVER"), os.Getenv("HELPER_DSN"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer closeDB(db)
	if err := db.Exec("SELECT 1").Error; err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready")
	if line, _ := bufio.NewReader(os.Stdin).ReadString('\n'); line != "go\n" {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	applied, err := migrations.Migrate(ctx, db, migrations.Options{})
	if err != nil {
		fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	fmt.Printf("applied %v\n", applied)
	return 0
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// caseHandAppliedDDL applies the printed DDL by hand, as a DBA would, and
// checks the result is a current schema that Migrate leaves alone.
func caseHandAppliedDDL(t *testing.T, tg testdb.Target) {
	db := tg.Open(t)
	ddl, err := migrations.DDL(db.Name(), migrations.Options{TablePrefix: "dba_"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ddl.Statements {
		if err := db.Exec(s).Error; err != nil {
			t.Fatalf("hand-applied statement failed: %v\n%s", err, s)
		}
	}
	ctx := context.Background()
	opts := migrations.Options{TablePrefix: "dba_"}
	if v, err := migrations.Version(ctx, db, opts); err != nil || v != migrations.LatestVersion {
		t.Fatalf("Version after hand-applied DDL = %d, %v", v, err)
	}
	if applied, err := migrations.Migrate(ctx, db, opts); err != nil || len(applied) != 0 {
		t.Fatalf("Migrate after hand-applied DDL applied %v, %v; want nothing", applied, err)
	}
}

func casePrefixes(t *testing.T, tg testdb.Target) {
	db := tg.Open(t)
	ctx := context.Background()
	for _, p := range []string{"a_", "b_"} {
		if _, err := migrations.Migrate(ctx, db, migrations.Options{TablePrefix: p}); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []string{"a_leases", "b_leases", "a_schema_migrations", "b_schema_migrations"} {
		if !db.Migrator().HasTable(table) {
			t.Fatalf("table %s missing", table)
		}
	}
	if db.Migrator().HasTable("leasehold_leases") {
		t.Fatalf("default-prefix table created though a prefix was given")
	}
}

// caseDDLFromTwice brings a schema to each version N, with a lease row in
// it, applies DDL from N twice as a DBA would, on one connection, and
// checks the schema is current for Migrate and the row kept its values.
func caseDDLFromTwice(t *testing.T, tg testdb.Target) {
	db := tg.Open(t)
	ctx := context.Background()
	for from := 0; from <= migrations.LatestVersion; from++ {
		prefix := fmt.Sprintf("from%d_", from)
		opts := migrations.Options{TablePrefix: prefix}
		st, err := store.New(db, store.Options{TablePrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Schema().MigrateTo(ctx, time.Minute, from); err != nil {
			t.Fatalf("from %d: migrate to %d: %v", from, from, err)
		}
		if v, err := migrations.Version(ctx, db, opts); err != nil || v != from {
			t.Fatalf("from %d: Version = %d, %v", from, v, err)
		}
		leases := prefix + "leases"
		if from >= 1 {
			if err := db.Exec("INSERT INTO " + leases + " (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us) " +
				"VALUES ('global/kept', 'n/c/i', 7, 1, 2, 3)").Error; err != nil {
				t.Fatal(err)
			}
		}
		if from >= 2 {
			if err := db.Exec("UPDATE " + leases + " SET data = 'd' WHERE name = 'global/kept'").Error; err != nil {
				t.Fatal(err)
			}
		}
		ddl, err := migrations.DDL(db.Name(), migrations.Options{TablePrefix: prefix, From: from})
		if err != nil {
			t.Fatal(err)
		}
		for round := 1; round <= 2; round++ {
			err := db.Connection(func(conn *gorm.DB) error {
				for _, s := range ddl.Statements {
					if err := conn.Exec(s).Error; err != nil {
						return fmt.Errorf("%w\n%s", err, s)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("from %d, application %d: %v", from, round, err)
			}
		}
		if v, err := migrations.Version(ctx, db, opts); err != nil || v != migrations.LatestVersion {
			t.Fatalf("from %d: Version after the DDL = %d, %v", from, v, err)
		}
		if applied, err := migrations.Migrate(ctx, db, opts); err != nil || len(applied) != 0 {
			t.Fatalf("from %d: Migrate after the DDL applied %v, %v; want nothing", from, applied, err)
		}
		var rows int64
		if err := db.Table(prefix + "schema_migrations").Count(&rows).Error; err != nil || rows != int64(migrations.LatestVersion) {
			t.Fatalf("from %d: %d version rows, %v; want %d", from, rows, err, migrations.LatestVersion)
		}
		type row struct {
			Holder, Data, SessionID string
			Epoch                   int64
		}
		var got []row
		if err := db.Raw("SELECT holder, COALESCE(data, '') AS data, session_id, epoch FROM " + leases).Scan(&got).Error; err != nil {
			t.Fatalf("from %d: read the lease table: %v", from, err)
		}
		var want []row
		switch {
		case from >= 2:
			want = []row{{Holder: "n/c/i", Data: "d", Epoch: 7}}
		case from == 1:
			want = []row{{Holder: "n/c/i", Epoch: 7}}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("from %d: lease rows %+v, want %+v", from, got, want)
		}
	}
}

// caseDDLFromAboveRealVersion applies, on SQLite, the statements for a
// version above the one the schema is really at: the lease table is rebuilt
// for its columns at that version, and it must still keep every row and its
// epoch (an emptied table would hand out epochs again). Elsewhere a column
// addition is guarded on its own, and nothing is rebuilt.
func caseDDLFromAboveRealVersion(t *testing.T, tg testdb.Target) {
	if tg.Dialect != "sqlite" {
		t.Skip("only SQLite rebuilds tables in its DDL")
	}
	db := tg.Open(t)
	ctx := context.Background()
	for real := 1; real < migrations.LatestVersion; real++ {
		for from := real + 1; from <= migrations.LatestVersion; from++ {
			prefix := fmt.Sprintf("real%d_from%d_", real, from)
			st, err := store.New(db, store.Options{TablePrefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Schema().MigrateTo(ctx, time.Minute, real); err != nil {
				t.Fatalf("migrate to %d: %v", real, err)
			}
			leases := prefix + "leases"
			if err := db.Exec("INSERT INTO " + leases + " (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us) " +
				"VALUES ('global/kept', 'n/c/i', 41, 1, 2, 3)").Error; err != nil {
				t.Fatal(err)
			}
			ddl, err := migrations.DDL(db.Name(), migrations.Options{TablePrefix: prefix, From: from})
			if err != nil {
				t.Fatal(err)
			}
			// As sqlite3 without -bail would: a failed statement does not stop
			// the script. One connection, as the script needs.
			conn := testdb.Conn(ctx, t, db)
			for _, s := range ddl.Statements {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Logf("real version %d, DDL from %d: %v (%.60s)", real, from, err, s)
				}
			}
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			var epochs []int64
			if err := db.Raw("SELECT epoch FROM " + leases + " WHERE name = 'global/kept'").Scan(&epochs).Error; err != nil {
				t.Fatalf("real version %d, DDL from %d: read the lease table: %v", real, from, err)
			}
			if len(epochs) != 1 || epochs[0] != 41 {
				t.Fatalf("real version %d, DDL from %d: epochs of the kept row %v, want [41]", real, from, epochs)
			}
		}
	}
}

// clientCommand returns the command-line client that applies a script
// read from stdin to the database at dsn: psql, mysql or sqlite3, the way
// docs/operations.md says to run them. It skips the test on SQL Server,
// whose client this test does not drive.
func clientCommand(t *testing.T, driver, dsn string) *exec.Cmd {
	t.Helper()
	var name string
	var args, env []string
	switch driver {
	case dbopen.Postgres:
		name, args = "psql", []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-1", "-f", "-", dsn}
	case dbopen.MySQL:
		cfg, err := mysqldrv.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("cannot read the MySQL DSN: %s", redact.Message(driver, dsn, err.Error()))
		}
		if cfg.Net != "tcp" {
			t.Skipf("the MySQL DSN connects over %s; this test drives the client over TCP only", cfg.Net)
		}
		host, port, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			host, port = cfg.Addr, "3306"
		}
		name, args = "mysql", []string{"--protocol=TCP", "-h", host, "-P", port, "-u", cfg.User, cfg.DBName}
		if cfg.Passwd != "" {
			env = append(env, "MYSQL_PWD="+cfg.Passwd) // not on the command line, where ps shows it
		}
	case dbopen.SQLServer:
		t.Skip("SQL Server: no sqlcmd run here")
	default:
		path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		name, args = "sqlite3", []string{"-bail", path}
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("LOUD: no %s client on this machine: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	// IF NOT EXISTS on an existing table is a NOTICE; anything else printed
	// fails the test.
	cmd.Env = append(append(os.Environ(), "PGOPTIONS=-c client_min_messages=warning"), env...)
	return cmd
}

// caseScriptThroughClient applies DDL's Script from every version
// twice through the database's own command-line client, and checks the
// schema is then current for Migrate.
func caseScriptThroughClient(t *testing.T, tg testdb.Target) {
	driver, dsn := tg.OpenDSN(t)
	clientCommand(t, driver, dsn) // skips when there is no client
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB(db)
	ctx := context.Background()
	for from := 0; from <= migrations.LatestVersion; from++ {
		opts := migrations.Options{TablePrefix: fmt.Sprintf("cli%d_", from)}
		st, err := store.New(db, store.Options{TablePrefix: opts.TablePrefix})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Schema().MigrateTo(ctx, time.Minute, from); err != nil {
			t.Fatal(err)
		}
		ddl, err := migrations.DDL(db.Name(), migrations.Options{TablePrefix: opts.TablePrefix, From: from})
		if err != nil {
			t.Fatal(err)
		}
		for round := 1; round <= 2; round++ {
			cmd := clientCommand(t, driver, dsn)
			cmd.Stdin = strings.NewReader(ddl.Script)
			if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Fatalf("from %d, application %d through %s: %v\n%q", from, round, cmd.Path, err, out)
			}
		}
		if v, err := migrations.Version(ctx, db, opts); err != nil || v != migrations.LatestVersion {
			t.Fatalf("from %d: Version after the script = %d, %v", from, v, err)
		}
		if applied, err := migrations.Migrate(ctx, db, opts); err != nil || len(applied) != 0 {
			t.Fatalf("from %d: Migrate after the script applied %v, %v; want nothing", from, applied, err)
		}
	}
}
