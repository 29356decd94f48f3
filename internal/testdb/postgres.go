package testdb

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartPostgres creates a private PostgreSQL cluster in a new temporary
// directory, starts it on a free port on 127.0.0.1 and waits until it
// accepts connections. The cluster trusts every connection, so DSN needs
// no password; the superuser is "postgres". Durability is off (fsync,
// synchronous_commit and full_page_writes) for speed, and max_connections
// is 200.
//
// It returns an error wrapping ErrBinariesMissing when PostgreSQL is not
// installed. The caller must Close the server.
func StartPostgres(ctx context.Context) (*Server, error) {
	return StartPostgresWith(ctx)
}

// StartPostgresWith is StartPostgres with extra server settings, each
// "name=value" as postgres -c takes it, such as
// "shared_preload_libraries=pg_stat_statements" or "max_connections=400".
// They are passed after the defaults, so they override them, and they
// stay in force across Stop and Start. A setting without '=' or with an
// empty name is an error that names it.
func StartPostgresWith(ctx context.Context, settings ...string) (*Server, error) {
	for _, s := range settings {
		if name, _, ok := strings.Cut(s, "="); !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("testdb: PostgreSQL setting %q: want name=value", s)
		}
	}
	initdb, postgres, err := findPostgres()
	if err != nil {
		return nil, err
	}
	cred, err := serviceUser("postgres")
	if err != nil {
		return nil, err
	}
	s, err := newServer(postgresEngine, postgres, cred)
	if err != nil {
		return nil, err
	}
	s.settings = append([]string(nil), settings...)
	err = s.runSetup(ctx, initdb,
		"--pgdata="+s.dir.dataDir,
		"--username=postgres",
		"--auth=trust",
		"--no-locale",
		"--encoding=UTF8",
		"--no-sync",
		"--no-instructions",
	)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.startFirst(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// postgresEngine is what is particular to the private PostgreSQL
// servers. The DSN is "host=127.0.0.1 port=P user=postgres dbname=DB
// sslmode=disable", on the database "postgres" when none is named. The
// server stops on SIGINT, its fast shutdown, and gets SIGQUIT, its
// immediate shutdown, which also ends its backends, when the test binary
// dies.
var postgresEngine = &engine{
	kind:    KindPostgres,
	dialect: postgresDialect,
	dsn: func(port int, database string) string {
		if database == "" {
			database = "postgres"
		}
		return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", port, database)
	},
	adminDatabase: "postgres",
	adminParams:   fmt.Sprintf(" connect_timeout=%d", int(pingTimeout/time.Second)),
	args:          postgresArgs,
	stop:          syscall.SIGINT,
	death:         syscall.SIGQUIT,
}

// postgresArgs are the command-line arguments of the postgres server s.
func postgresArgs(s *Server) []string {
	args := []string{
		"-D", s.dir.dataDir,
		"-p", strconv.Itoa(s.port),
		"-k", s.dir.root, // the Unix socket lives in the private directory
	}
	for _, setting := range []string{
		"listen_addresses=127.0.0.1",
		"fsync=off",
		"synchronous_commit=off",
		"full_page_writes=off",
		"max_connections=200",
		"logging_collector=off",
	} {
		args = append(args, "-c", setting)
	}
	for _, setting := range s.settings {
		args = append(args, "-c", setting)
	}
	return args
}

// findPostgres finds initdb and postgres: first in Debian's
// /usr/lib/postgresql/VERSION/bin, newest version first, then in PATH.
func findPostgres() (initdb, postgres string, err error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	var initdbs, servers []string
	for _, d := range dirs {
		initdbs = append(initdbs, filepath.Join(d, "initdb"))
		servers = append(servers, filepath.Join(d, "postgres"))
	}
	if initdb, err = findBinary("initdb", initdbs...); err != nil {
		return "", "", err
	}
	// Use the postgres that belongs to the initdb found.
	servers = append([]string{filepath.Join(filepath.Dir(initdb), "postgres")}, servers...)
	if postgres, err = findBinary("postgres", servers...); err != nil {
		return "", "", err
	}
	return initdb, postgres, nil
}

// versionOf returns the major version in a path like
// /usr/lib/postgresql/15/bin, or 0.
func versionOf(binDir string) int {
	v, _ := strconv.Atoi(strings.Split(filepath.Base(filepath.Dir(binDir)), ".")[0])
	return v
}
