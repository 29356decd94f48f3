package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/internal/redact"
)

// Environment variables that point a dialect's tests at a server of the
// user's own instead of a private one. Each holds a DSN in the form the
// dialect's driver takes; its user must be allowed to create and drop
// databases, since every test gets a database of its own on that server.
//
// SQLite has none: its targets already use plain files, and a file
// elsewhere would test nothing they do not.
const (
	// PostgresDSNEnv replaces the private PostgreSQL server (target
	// "postgres"). Key=value and URL forms are accepted.
	PostgresDSNEnv = "LEASEHOLD_TEST_POSTGRES_DSN"
	// MySQLDSNEnv replaces the private MariaDB server (target "mysql"),
	// as a go-sql-driver/mysql DSN.
	MySQLDSNEnv = "LEASEHOLD_TEST_MYSQL_DSN"
	// SQLServerDSNEnv adds the target "sqlserver", which has no private
	// server. URL (sqlserver://…) and ADO key=value forms are accepted.
	SQLServerDSNEnv = "LEASEHOLD_TEST_SQLSERVER_DSN"
)

// External reports whether the tests of dialect run against a server
// named by an environment variable (see PostgresDSNEnv) rather than a
// private one. Such a server cannot be stopped by a test.
func External(dialect string) bool {
	d := dialectOf(dialect)
	return d != nil && os.Getenv(d.env) != ""
}

// External reports whether tg runs against a server named by an
// environment variable; see the package function External.
func (tg Target) External() bool { return External(tg.Dialect) }

// SkipExternal skips t when dialect's tests run against an external
// server: t needs to stop or restart the server, and cannot stop someone
// else's.
func SkipExternal(t testing.TB, dialect string) {
	t.Helper()
	if !External(dialect) {
		return
	}
	d := dialectOf(dialect)
	t.Skipf("LOUD: testdb: SKIPPING: this test stops and restarts a private %s server, but %s points the %s tests at %s, which it cannot stop",
		dialect, d.env, dialect, redact.DSN(d.driver, os.Getenv(d.env)))
}

// externalConnectTimeout bounds the first connection to an external
// server, so that a DSN naming an unreachable host fails the tests rather
// than hanging them. It is a variable so that a test can shorten it.
var externalConnectTimeout = 20 * time.Second

// externalServer is the server an environment variable names, shared by
// the test binary's tests of one dialect.
type externalServer struct {
	dialect *dialect
	dsn     string // as given

	once  sync.Once
	admin *sql.DB // a pool on the DSN as given, to create and drop databases
	err   error   // why the server cannot be used; redacted
}

var (
	externalMu      sync.Mutex
	externalServers = map[string]*externalServer{}
)

// externalFor returns the external server of dialect, or nil when its
// variable is unset.
func externalFor(dialect string) *externalServer {
	d := dialectOf(dialect)
	if d == nil {
		return nil
	}
	dsn := os.Getenv(d.env)
	if dsn == "" {
		return nil
	}
	externalMu.Lock()
	defer externalMu.Unlock()
	es := externalServers[dialect]
	if es == nil || es.dsn != dsn {
		es = &externalServer{dialect: d, dsn: dsn}
		externalServers[dialect] = es
	}
	return es
}

// closeExternal closes the admin pools of the external servers.
func closeExternal() error {
	externalMu.Lock()
	defer externalMu.Unlock()
	var errs []error
	for d, es := range externalServers {
		if es.admin != nil {
			errs = append(errs, es.admin.Close())
		}
		delete(externalServers, d)
	}
	return errors.Join(errs...)
}

// env is the variable that names the server.
func (es *externalServer) env() string { return es.dialect.env }

// driver is the dbopen driver name for the server's DSNs.
func (es *externalServer) driver() string { return es.dialect.driver }

// redacted returns the DSN as given, with its password replaced.
func (es *externalServer) redacted() string { return redact.DSN(es.driver(), es.dsn) }

// errorf makes an error about the server whose message quotes neither the
// DSN's password nor any part of it a driver error may repeat.
func (es *externalServer) errorf(format string, args ...any) error {
	return errors.New(redact.Message(es.driver(), es.dsn, fmt.Sprintf(format, args...)))
}

// ready opens the admin pool and checks, within externalConnectTimeout,
// that the server answers. Only the first call connects; later calls
// return its result.
func (es *externalServer) ready() (*sql.DB, error) {
	es.once.Do(func() {
		// A DSN the driver cannot read is not quoted, not even redacted:
		// where its password ends is anyone's guess.
		if _, err := withDatabase(es.dialect.name, es.dsn, "t_check"); err != nil {
			es.err = es.errorf("testdb: %s does not hold a DSN the %s driver accepts: %v", es.env(), es.driver(), err)
			return
		}
		admin, err := es.open(0)
		if err != nil {
			es.err = es.errorf("testdb: %s does not hold a DSN the %s driver accepts: %v", es.env(), es.driver(), err)
			return
		}
		if err := es.probe(); err != nil {
			_ = admin.Close()
			es.err = es.errorf("testdb: %s=%s: cannot connect within %s: %v", es.env(), es.redacted(), externalConnectTimeout, err)
			return
		}
		admin.SetMaxOpenConns(4)
		admin.SetMaxIdleConns(2)
		admin.SetConnMaxIdleTime(30 * time.Second)
		es.admin = admin
	})
	return es.admin, es.err
}

// probe connects once, bounded by externalConnectTimeout.
func (es *externalServer) probe() error {
	db, err := es.open(externalConnectTimeout)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), externalConnectTimeout)
	defer cancel()
	return db.PingContext(ctx)
}

// open returns a pool on the DSN as given. pgx and go-sql-driver/mysql
// give up connecting when the context ends; go-mssqldb does not, so on
// SQL Server every read and write of the pool's connections is bounded by
// ioTimeout instead, unless it is zero or the DSN sets its own
// "connection timeout".
func (es *externalServer) open(ioTimeout time.Duration) (*sql.DB, error) {
	return es.dialect.open(es.dsn, ioTimeout)
}

// dropStmts returns the statements that drop the database name, which
// validName has accepted, to try in order until one succeeds: the
// dialect's, then, where it has one, its statement for older servers.
func (es *externalServer) dropStmts(name string) []string {
	stmts := []string{es.dialect.drop(name)}
	if es.dialect.dropOlder != nil {
		stmts = append(stmts, es.dialect.dropOlder(name))
	}
	return stmts
}

// openDSN creates a fresh database for t on the server, dropped when t
// ends, and returns the driver name and the DSN for it. It fails t if the
// server cannot be reached or the database cannot be created.
func (es *externalServer) openDSN(t testing.TB) (driver, dsn string) {
	t.Helper()
	admin, err := es.ready()
	if err != nil {
		t.Fatal(err)
	}
	name := externalName(t)
	dsn, err = withDatabase(es.dialect.name, es.dsn, name)
	if err != nil {
		t.Fatal(es.errorf("testdb: %s does not hold a DSN the %s driver accepts: %v", es.env(), es.driver(), err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, es.dialect.create(name)); err != nil {
		t.Fatal(es.errorf("testdb: create database %s on the server %s names (%s); its user must be allowed to create and drop databases: %v",
			name, es.env(), es.redacted(), err))
	}
	t.Cleanup(func() {
		// As on the private servers, a failed drop only leaves a database
		// behind; it is logged, not a test failure.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var errs []error
		for _, stmt := range es.dropStmts(name) {
			_, err := admin.ExecContext(ctx, stmt)
			if err == nil {
				return
			}
			errs = append(errs, err)
		}
		t.Log(es.errorf("testdb: drop database %s on the server %s names (%s): %v", name, es.env(), es.redacted(), errors.Join(errs...)))
	})
	return es.driver(), dsn
}

// runToken tells this test binary's databases apart from those of other
// binaries using the same external server at the same time, on this
// machine or another: the counter in uniqueName is only per binary.
var runToken = sync.OnceValue(func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
})

// externalName is uniqueName with runToken in it, such as
// "t_testlease_acquire_1f2e3d4c_12".
func externalName(t testing.TB) string {
	name := uniqueName(t)
	i := strings.LastIndexByte(name, '_')
	return name[:i] + "_" + runToken() + name[i:]
}

// parseURL parses a URL DSN. Its error leaves the URL out: url.Error
// quotes the whole URL, password and all.
func parseURL(dsn string) (*url.URL, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	return u, nil
}

// pgSettings are the settings postgresWith replaces in a PostgreSQL DSN;
// an empty one is left as it is. user and password go together: a role's
// credentials.
type pgSettings struct {
	database       string
	user, password string
}

// postgresWith returns dsn, a PostgreSQL DSN in the URL form
// (postgres://…) or the libpq key=value form, with the settings of s
// replaced. Every other setting, and every byte of a key=value DSN that
// holds none of them, is kept as it is.
func postgresWith(dsn string, s pgSettings) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return postgresURLWith(dsn, s)
	}
	return postgresPairsWith(dsn, s)
}

// postgresURLWith sets the path of a postgres:// URL to the database and
// its user information to the user and password, and drops the query
// parameters pgx would prefer to them (dbname, database, user, password).
func postgresURLWith(dsn string, s pgSettings) (string, error) {
	u, err := parseURL(dsn)
	if err != nil {
		return "", err
	}
	var drop []string
	if s.database != "" {
		u.Path, u.RawPath = "/"+s.database, ""
		drop = append(drop, "dbname", "database")
	}
	if s.user != "" {
		u.User = url.UserPassword(s.user, s.password)
		drop = append(drop, "user", "password")
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for _, k := range drop {
			if q.Has(k) {
				q.Del(k)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String(), nil
}

// postgresPairsWith replaces the values of dbname (or database), user
// and password in a libpq key=value DSN, and adds those it does not have.
// It reads the string as pgx does (values quoted with '…' or bare,
// backslash escapes) and leaves every other byte of it alone.
func postgresPairsWith(dsn string, s pgSettings) (string, error) {
	type setting struct {
		keys  []string // the first is the one added
		value string
		found bool
	}
	var set []*setting
	if s.database != "" {
		set = append(set, &setting{keys: []string{"dbname", "database"}, value: s.database})
	}
	if s.user != "" {
		set = append(set, &setting{keys: []string{"user"}, value: s.user}, &setting{keys: []string{"password"}, value: s.password})
	}
	const space = " \t\n\r\v\f"
	var b strings.Builder
	rest := dsn
	for {
		trimmed := strings.TrimLeft(rest, space)
		b.WriteString(rest[:len(rest)-len(trimmed)])
		rest = trimmed
		if rest == "" {
			break
		}
		eq := strings.IndexByte(rest, '=')
		if eq < 0 {
			return "", errors.New("not a key=value DSN: text without '='")
		}
		key := strings.Trim(rest[:eq], space)
		afterEq := strings.TrimLeft(rest[eq+1:], space)
		valStart := len(rest) - len(afterEq)
		end := 0
		if afterEq != "" && afterEq[0] == '\'' {
			end = 1
			for ; end < len(afterEq) && afterEq[end] != '\''; end++ {
				if afterEq[end] == '\\' {
					end++
				}
			}
			if end >= len(afterEq) {
				return "", errors.New("not a key=value DSN: unterminated quoted value")
			}
			end++ // the closing quote
		} else {
			for ; end < len(afterEq) && !strings.ContainsRune(space, rune(afterEq[end])); end++ {
				if afterEq[end] == '\\' {
					end++
				}
			}
			end = min(end, len(afterEq))
		}
		var hit *setting
		for _, st := range set {
			if slices.Contains(st.keys, key) {
				hit = st
			}
		}
		switch {
		case hit == nil:
			b.WriteString(rest[:valStart+end])
		case !hit.found:
			b.WriteString(rest[:valStart])
			b.WriteString(pairValue(hit.value))
			hit.found = true
		default:
			// A second one would win; drop it.
		}
		rest = rest[valStart+end:]
	}
	out := b.String()
	for _, st := range set {
		if st.found {
			continue
		}
		if out != "" && !strings.ContainsRune(space, rune(out[len(out)-1])) {
			out += " "
		}
		out += st.keys[0] + "=" + pairValue(st.value)
	}
	return out, nil
}

// pairValue is v as a value of a key=value DSN: bare when it can be,
// quoted otherwise.
func pairValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// mysqlWithDatabase parses dsn as go-sql-driver/mysql does, sets the
// database, parseTime=true and loc=UTC, and formats it again: the driver's
// own parser is the only one that agrees with it on where the password
// ends.
func mysqlWithDatabase(dsn, name string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("not a go-sql-driver/mysql DSN (user:password@tcp(host:port)/db?params): %w", err)
	}
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	return cfg.FormatDSN(), nil
}

// sqlserverDatabaseKeys are go-mssqldb's names for the database setting,
// lower-cased as it compares them.
var sqlserverDatabaseKeys = []string{"database", "initial catalog"}

// sqlserverURLWithDatabase sets the database query parameter of a
// sqlserver:// URL to name, removing any other spelling of it.
func sqlserverURLWithDatabase(dsn, name string) (string, error) {
	u, err := parseURL(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	for k := range q {
		for _, d := range sqlserverDatabaseKeys {
			if strings.EqualFold(k, d) {
				q.Del(k)
			}
		}
	}
	q.Set("database", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// sqlserverADOWithDatabase replaces the database setting of an ADO
// key=value DSN (server=h;user id=u;password=p;database=d), splitting it
// on ';' as go-mssqldb does, and keeps the other settings byte for byte.
func sqlserverADOWithDatabase(dsn, name string) string {
	var kept []string
	for _, part := range strings.Split(dsn, ";") {
		key, _, _ := strings.Cut(part, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		drop := part == ""
		for _, d := range sqlserverDatabaseKeys {
			drop = drop || key == d
		}
		if !drop {
			kept = append(kept, part)
		}
	}
	return strings.Join(append(kept, "database="+name), ";")
}
