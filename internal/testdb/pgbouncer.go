package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/redact"
)

// PgBouncerPoolSize is how many server connections the private PgBouncer
// opens to PostgreSQL for each database: few, so that the clients'
// transactions share them, as they do in a real deployment, and a
// statement that depends on its server connection (a named prepared
// statement, LISTEN) meets another one soon.
const PgBouncerPoolSize = 4

// StartPgBouncer starts a private PgBouncer in transaction pooling mode in
// front of the PostgreSQL server upstream, on a free port on 127.0.0.1,
// with its configuration, log and pid file in a new temporary directory,
// and waits until it accepts connections. Every database of upstream is
// reachable through it under its own name, as user postgres, without a
// password; each has a pool of PgBouncerPoolSize server connections.
//
// The returned Server's DSN is upstream's, with PgBouncer's port; Stop,
// Start, Kill and Close act on PgBouncer alone. CreateDatabase and
// DropDatabase go through PgBouncer to upstream.
//
// It returns an error wrapping ErrBinariesMissing when PgBouncer is not
// installed. The caller must Close it before upstream.
func StartPgBouncer(ctx context.Context, upstream *Server) (*Server, error) {
	if upstream == nil || upstream.Kind() != KindPostgres {
		return nil, fmt.Errorf("testdb: start PgBouncer: the upstream must be a private PostgreSQL server")
	}
	bin, err := findBinary("pgbouncer", "/usr/sbin/pgbouncer")
	if err != nil {
		return nil, err
	}
	// PgBouncer refuses to run as root; it runs as PostgreSQL does.
	cred, err := serviceUser("postgres")
	if err != nil {
		return nil, err
	}
	s, err := newServer(pgbouncerEngine(upstream.Port()), bin, cred)
	if err != nil {
		return nil, err
	}
	if err := s.startFirst(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// pgbouncerEngine is what is particular to a private PgBouncer in front of
// the PostgreSQL server on upstreamPort. Its DSNs are PostgreSQL's. It
// stops on SIGTERM, its immediate shutdown, which closes the clients'
// connections at once, as a crash of the pooler would.
func pgbouncerEngine(upstreamPort int) *engine {
	return &engine{
		kind:          KindPgBouncer,
		dialect:       postgresDialect,
		dsn:           postgresEngine.dsn,
		adminDatabase: postgresEngine.adminDatabase,
		adminParams:   postgresEngine.adminParams,
		configure:     func(s *Server) error { return writePgBouncerConfig(s, upstreamPort) },
		args:          func(s *Server) []string { return []string{pgbouncerConfigPath(s)} },
		stop:          syscall.SIGTERM,
		death:         syscall.SIGTERM,
	}
}

// pgbouncerConfigPath is where the configuration of the PgBouncer s is.
func pgbouncerConfigPath(s *Server) string { return filepath.Join(s.dir.root, "pgbouncer.ini") }

// writePgBouncerConfig writes the configuration of the PgBouncer s, which
// listens on s.Port() and connects to PostgreSQL on upstreamPort. It is
// written before every start, so that the first start can try another
// port.
func writePgBouncerConfig(s *Server, upstreamPort int) error {
	lines := []string{
		"[databases]",
		// The fallback database: any name connects to the database of
		// that name upstream.
		fmt.Sprintf("* = host=127.0.0.1 port=%d user=postgres", upstreamPort),
		"",
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		fmt.Sprintf("listen_port = %d", s.port),
		"unix_socket_dir =",
		"auth_type = any",
		// The admin console, where handBack sees whether PgBouncer is done
		// with a test's database before it is dropped.
		"admin_users = postgres",
		"pool_mode = transaction",
		fmt.Sprintf("default_pool_size = %d", PgBouncerPoolSize),
		"min_pool_size = 0",
		"reserve_pool_size = 0",
		"max_client_conn = 1000",
		"max_db_connections = 0",
		// A database is dropped upstream when its test ends; its pool here
		// stays until the binary ends (PgBouncer's default): a busy run
		// of the whole suite once lost PgBouncer while pools were being
		// dropped.
		"autodb_idle_timeout = 3600",
		"server_idle_timeout = 30",
		fmt.Sprintf("server_connect_timeout = %d", int(pingTimeout/time.Second)),
		"server_login_retry = 1",
		"ignore_startup_parameters = extra_float_digits,options",
		// The log goes to standard error, which is the server log.
		"pidfile = " + filepath.Join(s.dir.root, "pgbouncer.pid"),
		"log_connections = 0",
		"log_disconnections = 0",
		"",
	}
	path := pgbouncerConfigPath(s)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		return fmt.Errorf("testdb: write PgBouncer configuration: %w", err)
	}
	if s.dir.cred != nil {
		if err := os.Chown(path, int(s.dir.cred.Uid), int(s.dir.cred.Gid)); err != nil {
			return fmt.Errorf("testdb: hand PgBouncer configuration to uid %d: %w", s.dir.cred.Uid, err)
		}
	}
	return nil
}

// PgBouncerDSNSetting ends the DSNs of PgBouncerTarget: the pgx setting
// that the library and a program's own statements need behind a
// transaction pooler (PgBouncer before 1.21 keeps no prepared statement
// across transactions). pgx's default, cache_statement, prepares each
// statement as a named one on whichever server connection the pooler gave
// the client at the time; the store's start-up probe refuses it there
// (store.ErrPoolerMode). A test of that default cuts the setting off.
const PgBouncerDSNSetting = " default_query_exec_mode=exec"

// PgBouncerTarget is the target "pgbouncer": PostgreSQL behind a private
// PgBouncer in transaction pooling mode (StartPgBouncer), in front of a
// private PostgreSQL server of its own, so that a fault test on it never
// stops the server of the target "postgres". It is not among Targets:
// the suites that run on it say so with PoolerTargets.
var PgBouncerTarget = Target{Name: "pgbouncer", Dialect: "postgres", Pooled: true}

// PoolerTargets returns Targets and PgBouncerTarget: the targets of the
// conformance suites, which must hold behind a transaction pooler too.
func PoolerTargets() []Target {
	return append(Targets(), PgBouncerTarget)
}

// pgbouncerTarget is the backend of PgBouncerTarget. Its PostgreSQL server
// and its PgBouncer start once, on first use.
type pgbouncerTarget struct {
	once     sync.Once
	upstream *Server // the private PostgreSQL server
	bouncer  *Server // PgBouncer in front of it
	err      error
}

// privateOnly marks a backend that needs private servers even when an
// environment variable points its dialect's tests at another server: the
// test is skipped then (skipPrivateOnly).
type privateOnly interface{ needsPrivateServer() }

func (*pgbouncerTarget) needsPrivateServer() {}

// skipPrivateOnly skips t, loudly, when tg's backend needs private
// servers and an environment variable names one for its dialect.
func skipPrivateOnly(t testing.TB, tg Target) {
	t.Helper()
	if _, ok := tg.backend().(privateOnly); !ok || !External(tg.Dialect) {
		return
	}
	d := dialectOf(tg.Dialect)
	t.Skipf("LOUD: testdb: SKIPPING %s TEST: it runs on private servers of its own, but %s points the %s tests at %s",
		strings.ToUpper(tg.Name), d.env, tg.Dialect, redact.DSN(d.driver, os.Getenv(d.env)))
}

// start starts the upstream server and PgBouncer, once, or skips or fails
// t when they cannot start.
func (p *pgbouncerTarget) start(t testing.TB, tg Target) {
	t.Helper()
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		// PgBouncer first: without it there is no use for the server.
		if _, p.err = findBinary("pgbouncer", "/usr/sbin/pgbouncer"); p.err != nil {
			return
		}
		if p.upstream, p.err = StartPostgres(ctx); p.err != nil {
			return
		}
		if p.bouncer, p.err = StartPgBouncer(ctx, p.upstream); p.err != nil {
			_ = p.upstream.Close()
		}
	})
	if p.err != nil {
		if errors.Is(p.err, ErrBinariesMissing) {
			unavailable(t, tg.Dialect, fmt.Errorf("the %s target: %w", tg.Name, p.err))
		}
		t.Fatalf("testdb: shared %s target: %v", tg.Name, p.err)
	}
}

// server returns the PostgreSQL server behind PgBouncer: stopping it is
// the database going away, which PgBouncer's clients see as PostgreSQL's
// clients do.
func (p *pgbouncerTarget) server(t testing.TB, tg Target) *Server {
	t.Helper()
	p.start(t, tg)
	return p.upstream
}

func (p *pgbouncerTarget) openDSN(t testing.TB, tg Target) (driver, dsn string) {
	t.Helper()
	p.start(t, tg)
	name := uniqueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.upstream.CreateDatabase(ctx, name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.handBack(ctx, name); err != nil {
			t.Logf("testdb: %v", err)
		}
	})
	return dbopen.Postgres, p.bouncer.DSN(name) + PgBouncerDSNSetting
}

// handBackWait bounds handBack's wait for PgBouncer to be done with a
// test's database.
const handBackWait = 10 * time.Second

// handBack drops the database name of a test that ended, once PgBouncer
// has no client connection to it and no cancel request for it under way.
// PostgreSQL ends PgBouncer's idle server connections to it in the drop,
// WITH (FORCE). PgBouncer 1.18 exits when one of them ends, or when its
// client goes (KILL on the admin console), while a cancel request for it
// is under way: "server_proto: server in bad state: 11" (pgbouncer#822,
// fixed in 1.20.1) or "disconnect_client(): bad client state: 1", taking
// every client of the binary with it. pgx sends a cancel request when it
// closes a connection whose statement's context ended, and finishes that
// close after database/sql's Close has returned. If PgBouncer is not done
// within handBackWait, the database is dropped all the same.
func (p *pgbouncerTarget) handBack(ctx context.Context, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("hand back PgBouncer database %q: the name must match %s", name, validName)
	}
	waitErr := p.awaitQuiet(ctx, name, handBackWait)
	if err := p.upstream.DropDatabase(ctx, name); err != nil {
		return errors.Join(waitErr, err)
	}
	if waitErr != nil {
		return fmt.Errorf("hand back PgBouncer database %q: dropped while PgBouncer was not done with it: %w", name, waitErr)
	}
	return nil
}

// awaitQuiet waits until PgBouncer's pool for the database name has no
// client connection, no cancel request and no active server connection
// (SHOW POOLS on its admin console, which speaks only the simple query
// protocol; the configuration makes postgres an admin), for at most wait.
// The wait counts from the first answer of the console, so a slow
// connection on a busy machine does not use it up; ctx bounds every
// query. A database PgBouncer has no pool for is quiet.
func (p *pgbouncerTarget) awaitQuiet(ctx context.Context, name string, wait time.Duration) error {
	console, err := sql.Open("pgx", p.bouncer.DSN("pgbouncer")+" default_query_exec_mode=simple_protocol")
	if err != nil {
		return fmt.Errorf("open PgBouncer's admin console: %w", err)
	}
	defer func() { _ = console.Close() }()
	var runOut <-chan time.Time
	for {
		busy, err := poolBusy(ctx, console, name)
		switch {
		case err != nil:
			return err
		case busy == "":
			return nil
		}
		if runOut == nil {
			runOut = time.After(wait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("PgBouncer's pool for %s still has %s: %w", name, busy, ctx.Err())
		case <-runOut:
			return fmt.Errorf("PgBouncer's pool for %s still has %s after %v", name, busy, wait)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// poolBusy reads SHOW POOLS and returns the counters of the pool for the
// database name that are not zero among its clients (cl_*), its cancel
// requests and its active server connections, as "cl_active=1", or "" if
// none is.
func poolBusy(ctx context.Context, console *sql.DB, name string) (string, error) {
	rows, err := console.QueryContext(ctx, "SHOW POOLS")
	if err != nil {
		return "", fmt.Errorf("SHOW POOLS on PgBouncer's admin console: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	db := slices.Index(cols, "database")
	if db < 0 {
		return "", fmt.Errorf("SHOW POOLS has no column database: %v", cols)
	}
	var busy []string
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", fmt.Errorf("SHOW POOLS: %w", err)
		}
		if vals[db].String != name {
			continue
		}
		for i, c := range cols {
			counts := strings.HasPrefix(c, "cl_") || strings.Contains(c, "cancel") || c == "sv_active"
			if counts && vals[i].String != "0" {
				busy = append(busy, c+"="+vals[i].String)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("SHOW POOLS: %w", err)
	}
	return strings.Join(busy, ", "), nil
}
