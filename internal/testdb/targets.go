package testdb

import (
	"go.uber.org/goleak"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/dbopen"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// RequireEnv is the environment variable that turns a missing dialect from
// a skip into a failure. It holds a comma-separated list of dialects, such
// as "postgres,mysql,sqlite".
const RequireEnv = "REQUIRE_DIALECTS"

// Target is one database the tests run against.
type Target struct {
	// Name is "postgres", "mysql", "sqlite-cgo", "sqlite-pure",
	// "sqlserver", "pgbouncer" (PgBouncerTarget), "galera"
	// (GaleraTarget), "postgres-pair" or "mariadb-pair" (PairTargets).
	Name string
	// Dialect is "postgres", "mysql", "sqlite" or "sqlserver". It is what
	// REQUIRE_DIALECTS lists.
	Dialect string
	// Pooled is true when the database is behind a pooler that gives each
	// transaction whichever server connection is free (PgBouncerTarget):
	// nothing of a server session outlasts a transaction, LISTEN
	// included, so release notifications never arrive.
	Pooled bool
	// Replicated is true when a commit waits for other servers: a
	// replicated pair (PairTargets) or a Galera cluster (GaleraTarget).
	// Its statements take longer than a single server's, and on a busy
	// machine much longer, so tests give such a target wider time bounds.
	Replicated bool
}

// Targets returns every target: PostgreSQL, MariaDB, SQLite through the cgo
// driver, and SQLite through the pure-Go driver; and SQL Server when
// LEASEHOLD_TEST_SQLSERVER_DSN is set or REQUIRE_DIALECTS names sqlserver
// (there is no private SQL Server, so without the variable its tests
// fail as required).
func Targets() []Target {
	tgs := []Target{
		{Name: "postgres", Dialect: "postgres"},
		{Name: "mysql", Dialect: "mysql"},
		{Name: "sqlite-cgo", Dialect: "sqlite"},
		{Name: "sqlite-pure", Dialect: "sqlite"},
	}
	if External("sqlserver") || Required("sqlserver") {
		tgs = append(tgs, Target{Name: "sqlserver", Dialect: "sqlserver"})
	}
	return tgs
}

// Open gives the test a fresh, empty database on tg and a gorm handle to it
// with gorm's logger silenced. The handle is closed, and a server database
// dropped, when the test ends.
//
// For PostgreSQL and MariaDB the database is created on the package's
// shared private server, which starts on first use. MariaDB handles use
// parseTime=true&loc=UTC, so DATETIME columns scan into time.Time. For
// SQLite the database is a new file in t.TempDir(), opened as
// dbopen.SQLiteDSN describes.
//
// When an environment variable names a server for tg's dialect
// (PostgresDSNEnv, MySQLDSNEnv, SQLServerDSNEnv), the database is created
// on that server instead, through the DSN given, and the DSN returned is
// that one with its database replaced. A server that cannot be reached
// within 20 s fails the test.
//
// If tg cannot be tested on this machine (the server binaries are missing,
// or cgo is off for sqlite-cgo), Open skips the test, or fails it when
// REQUIRE_DIALECTS names tg.Dialect. A server that fails to start for any
// other reason fails the test.
func (tg Target) Open(t testing.TB) *gorm.DB {
	t.Helper()
	driver, dsn := tg.OpenDSN(t)
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatalf("testdb: open %s database: %v", tg.Name, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatalf("testdb: open %s database: get its *sql.DB: %v", tg.Name, err)
	}
	t.Cleanup(func() {
		if err := sqlDB.Close(); err != nil {
			t.Errorf("testdb: close %s database: %v", tg.Name, err)
		}
	})
	return db
}

// Conn returns one connection of db's pool, for statements that must
// share a session (LISTEN, a script); the caller closes it.
func Conn(ctx context.Context, t testing.TB, db *gorm.DB) *sql.Conn {
	t.Helper()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// OpenDSN creates a fresh, empty database on tg just as Open does, and
// returns a driver name for dbopen.Open ("postgres", "mysql", "sqlserver",
// "sqlite" or "sqlite-pure") and a DSN for it that another OS process can use too.
// It skips or fails the test as Open does.
func (tg Target) OpenDSN(t testing.TB) (driver, dsn string) {
	t.Helper()
	skipPrivateOnly(t, tg)
	if es := externalFor(tg.Dialect); es != nil {
		return es.openDSN(t)
	}
	return tg.backend().openDSN(t, tg)
}

// Server returns the shared private server behind tg, or nil for the
// SQLite targets, so that a fault test can stop and restart it. If the
// test leaves the server stopped, it is started again when the test ends.
// Tests that stop the server must not run in parallel with other tests of
// the package that use it. It skips or fails the test as Open does.
//
// A target whose tests run against a server named by an environment
// variable (External) has no server the test may stop: Server skips the
// test, as it does for "sqlserver", which never has a private server.
func (tg Target) Server(t testing.TB) *Server {
	t.Helper()
	SkipExternal(t, tg.Dialect)
	skipPrivateOnly(t, tg)
	srv := tg.backend().server(t, tg)
	if srv == nil {
		return nil
	}
	t.Cleanup(func() {
		if srv.Running() {
			return
		}
		if err := srv.Start(); err != nil {
			t.Errorf("testdb: the test left the shared %s server stopped, and starting it again failed: %v", srv.Kind(), err)
		}
	})
	return srv
}

// sharedServer returns the package's shared server for tg, starting it on
// first use, or skips or fails the test if it cannot start.
func (tg Target) sharedServer(t testing.TB) *Server {
	t.Helper()
	return tg.backend().server(t, tg)
}

// backend is what differs between the targets: where a test's database
// comes from when no environment variable names a server for it, and
// which private server is behind it. Each target name has one (backends);
// Target.backend picks it.
type backend interface {
	// openDSN makes a fresh database for t and returns dbopen's driver
	// name and a DSN for it, or skips or fails t as Target.OpenDSN says.
	openDSN(t testing.TB, tg Target) (driver, dsn string)
	// server returns the package's shared private server behind the
	// target, started on first use, or nil when the target has none to
	// stop (SQLite). It skips or fails t when the server cannot start, or
	// when the target should have one and has not (SQL Server).
	server(t testing.TB, tg Target) *Server
}

var (
	postgresTarget = &privateTarget{start: StartPostgres, driver: dbopen.Postgres}
	// MariaDB handles use parseTime=true&loc=UTC, so DATETIME columns
	// scan into time.Time.
	mysqlTarget = &privateTarget{start: StartMariaDB, driver: dbopen.MySQL, params: "?parseTime=true&loc=UTC"}

	// backends maps each target name to its backend.
	backends = map[string]backend{
		"postgres":    postgresTarget,
		"mysql":       mysqlTarget,
		"sqlite-cgo":  sqliteTarget{driver: dbopen.SQLite, needsCgo: true},
		"sqlite-pure": sqliteTarget{driver: dbopen.SQLitePure},
		"sqlserver":   sqlserverTarget{},
		"pgbouncer":   &pgbouncerTarget{},
		"galera":      &galeraTarget{},

		"postgres-pair": &pairTarget{start: func(ctx context.Context, mode ReplicationMode) (*Pair, error) {
			return StartPostgresPair(ctx, mode)
		}},
		"mariadb-pair": &pairTarget{start: StartMariaDBPair},
	}
)

// backend returns tg's backend, picked by its name.
func (tg Target) backend() backend {
	if b, ok := backends[tg.Name]; ok {
		return b
	}
	return unknownTarget{}
}

// privateTarget is a target whose databases are made on a shared private
// server, one per kind, each started at most once.
type privateTarget struct {
	start  func(context.Context) (*Server, error) // StartPostgres or StartMariaDB
	driver string                                 // dbopen's driver name
	params string                                 // appended to the server's DSN of a database

	once sync.Once
	srv  *Server
	err  error
}

// sharedStartTimeout bounds the first start of a shared server, setup
// (initdb, mariadb-install-db) included.
const sharedStartTimeout = 2 * time.Minute

func (p *privateTarget) server(t testing.TB, tg Target) *Server {
	t.Helper()
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		p.srv, p.err = p.start(ctx)
	})
	if p.err != nil {
		if errors.Is(p.err, ErrBinariesMissing) {
			unavailable(t, tg.Dialect, p.err)
		}
		t.Fatalf("testdb: shared %s server: %v", tg.Name, p.err)
	}
	return p.srv
}

func (p *privateTarget) openDSN(t testing.TB, tg Target) (driver, dsn string) {
	t.Helper()
	srv := p.server(t, tg)
	name := uniqueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.CreateDatabase(ctx, name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		// Dropping only saves disk space (a PostgreSQL database takes
		// about 7 MB), so a failure is logged, not a test failure.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.DropDatabase(ctx, name); err != nil {
			t.Logf("testdb: %v", err)
		}
	})
	return p.driver, srv.DSN(name) + p.params
}

// sqliteTarget is a target whose databases are new files in the test's
// temporary directory, opened through driver.
type sqliteTarget struct {
	driver   string // dbopen.SQLite or dbopen.SQLitePure
	needsCgo bool   // the driver is the cgo one
}

func (s sqliteTarget) openDSN(t testing.TB, tg Target) (driver, dsn string) {
	t.Helper()
	if s.needsCgo && !cgoEnabled {
		unavailable(t, tg.Dialect, fmt.Errorf("%s needs cgo, but this test binary was built with CGO_ENABLED=0", tg.Name))
	}
	return s.driver, dbopen.SQLiteDSN(s.driver, filepath.Join(t.TempDir(), "test.db"))
}

func (sqliteTarget) server(testing.TB, Target) *Server { return nil }

// sqlserverTarget is the target "sqlserver", which has no private server:
// only one an environment variable names.
type sqlserverTarget struct{}

func (sqlserverTarget) openDSN(t testing.TB, tg Target) (driver, dsn string) {
	t.Helper()
	unavailable(t, tg.Dialect, fmt.Errorf("there is no private SQL Server; set %s to test against one", SQLServerDSNEnv))
	return "", ""
}

func (sqlserverTarget) server(t testing.TB, tg Target) *Server {
	t.Helper()
	unavailable(t, tg.Dialect, fmt.Errorf("there is no private SQL Server to stop; set %s to test against one", SQLServerDSNEnv))
	return nil
}

// unknownTarget is the backend of a target name testdb does not know.
type unknownTarget struct{}

func (unknownTarget) openDSN(t testing.TB, tg Target) (driver, dsn string) {
	t.Helper()
	t.Fatalf("testdb: unknown target %q (want one of postgres, mysql, sqlite-cgo, sqlite-pure, sqlserver, pgbouncer, galera)", tg.Name)
	return "", ""
}

func (unknownTarget) server(testing.TB, Target) *Server { return nil }

// dbCounter makes database names unique within the test binary; each
// binary has servers of its own.
var dbCounter atomic.Int64

// uniqueName returns a database name made from the test's name and a
// counter, such as "t_testlease_acquire_12".
func uniqueName(t testing.TB) string {
	var b strings.Builder
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() >= 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return fmt.Sprintf("t_%s_%d", b.String(), dbCounter.Add(1))
}

// Required reports whether REQUIRE_DIALECTS names dialect, which makes a
// missing database a test failure instead of a skip.
func Required(dialect string) bool {
	return requiredIn(os.Getenv(RequireEnv), dialect)
}

// requiredIn reports whether the comma-separated list names dialect.
// Spaces and case are ignored.
func requiredIn(list, dialect string) bool {
	for _, d := range strings.Split(list, ",") {
		if d = strings.TrimSpace(d); d != "" && strings.EqualFold(d, dialect) {
			return true
		}
	}
	return false
}

// decide says what a test does when dialect cannot be tested for reason:
// skip it, or, when the list from REQUIRE_DIALECTS names the dialect, fail
// it. msg is the message to give either way; a skip's carries the
// "LOUD:" marker, which tools/testsummary repeats in the summary of
// make test, so that a dialect left out is a line there and not only a
// count.
func decide(requireList, dialect string, reason error) (fail bool, msg string) {
	if requiredIn(requireList, dialect) {
		return true, fmt.Sprintf("testdb: %s=%q requires the %s dialect, but it cannot be tested here: %v",
			RequireEnv, requireList, dialect, reason)
	}
	return false, fmt.Sprintf("LOUD: testdb: SKIPPING %s TEST: %v (set %s=%s to make this a failure)",
		strings.ToUpper(dialect), reason, RequireEnv, dialect)
}

// unavailable skips or fails t, as decide says.
func unavailable(t testing.TB, dialect string, reason error) {
	t.Helper()
	fail, msg := decide(os.Getenv(RequireEnv), dialect, reason)
	if fail {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Main runs the tests, stops every server this package started in the
// test binary, and exits with the tests' code. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testdb.Main(m) }
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// ignoreGormLRU skips the expiry goroutine of gorm's prepared-statement
// cache: gorm never stops it (gorm.io/gorm/internal/lru says so), and
// gorm.io/plugin/dbresolver creates one such cache for every pool it
// registers, so any test that registers a resolver leaves them behind.
var ignoreGormLRU = goleak.IgnoreTopFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1")

// Run is Main without the exit: it runs the tests, stops every server this
// package started, and returns the exit code, which is non-zero also when
// stopping a server failed. Use it when TestMain has more to do before it
// exits, such as checking for leaked goroutines.
//
// After a passing run it also fails the binary if any goroutine started by
// the tests is still running (go.uber.org/goleak), except the expiry
// goroutines of gorm's prepared-statement caches, which gorm never stops.
func Run(m *testing.M) int {
	before := goleak.IgnoreCurrent()
	code := m.Run()
	if err := errors.Join(closePairs(), closeAll(), closeExternal()); err != nil {
		fmt.Fprintf(os.Stderr, "testdb: stopping the test database servers failed: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(before, ignoreGormLRU); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	return code
}
