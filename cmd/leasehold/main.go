package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/redact"
	"github.com/leasehold/leasehold/migrations"
)

// sampleSQLiteFile is the sample's default database, named in the
// messages that say how to give a DSN.
const sampleSQLiteFile = "./leasehold-sample.db"

// connectTimeout bounds the first contact with the database.
const connectTimeout = 15 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the database is unreachable, a statement failed, an unknown lease
	exitUsage   = 2 // an unknown subcommand or flag, a bad value
)

// errUsage marks a usage error: the command exits with status 2.
var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return errUsage }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// dbConfig selects the database and the tables.
type dbConfig struct {
	driver, dsn, prefix string
}

// envFlags lists the environment fallback of each database flag, named as
// the sample names them. A flag on the command line wins.
var envFlags = []struct{ flag, env string }{
	{"driver", "LEASEHOLD_DRIVER"},
	{"dsn", "LEASEHOLD_DSN"},
	{"table-prefix", "LEASEHOLD_TABLE_PREFIX"},
}

// addDBFlags registers the database flags on fs, into c, keeping the
// values c holds. They are accepted before the subcommand and after it;
// the usage shows defaults, what applies without the flag (the built-in
// value or the environment's), never a value given on the command line.
func addDBFlags(fs *flag.FlagSet, c *dbConfig, defaults dbConfig) {
	given := *c
	fs.StringVar(&c.driver, "driver", defaults.driver,
		"database driver: "+strings.Join(drivers(), ", ")+" (env LEASEHOLD_DRIVER)")
	fs.StringVar(&c.dsn, "dsn", defaults.dsn,
		"data source name, or for SQLite the path of the database file, such as "+sampleSQLiteFile+
			" (env LEASEHOLD_DSN; required by every subcommand but ddl)")
	fs.StringVar(&c.prefix, "table-prefix", defaults.prefix, "table prefix (env LEASEHOLD_TABLE_PREFIX)")
	*c = given
}

// drivers lists the accepted driver names, the default first.
func drivers() []string {
	return []string{dbopen.SQLitePure, dbopen.SQLite, dbopen.Postgres, dbopen.MySQL, dbopen.SQLServer}
}

func isSQLite(driver string) bool { return driver == dbopen.SQLite || driver == dbopen.SQLitePure }

// command is one subcommand.
type command struct {
	name, args, summary string
	// flags registers the subcommand's own flags and returns its action.
	flags func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

var commands = []command{
	{"status", "[-json]", "list the leases, pools, locks and processes, by the database clock", statusFlags},
	{"watch", "[-interval 2s] [-count N] [-timeout 10s] [-full]", "list them, then what changes, every interval", watchFlags},
	{"migrate", "[-dry-run]", "bring the schema to the latest version", migrateFlags},
	{"ddl", "[-dialect D] [-from N]", "print the SQL that takes a schema from version N to the latest", ddlFlags},
	{"resign", "NAME [-prefer HOLDER [-force]]", "ask the holder of a lease to hand it over", resignFlags},
}

// env is what a subcommand works with.
type env struct {
	db             dbConfig
	stdout, stderr io.Writer
	getenv         func(string) string
}

// run runs the command line args (without the program name) and returns
// the exit status. Every message to stderr has the DSN's password
// replaced.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{db: dbConfig{driver: dbopen.SQLitePure}, stdout: stdout, getenv: getenv}
	e.stderr = &redactingWriter{w: stderr, e: e}
	for _, ef := range envFlags {
		v := strings.TrimSpace(getenv(ef.env))
		if v == "" {
			continue
		}
		switch ef.flag {
		case "driver":
			e.db.driver = v
		case "dsn":
			e.db.dsn = v
		case "table-prefix":
			e.db.prefix = v
		}
	}

	// The flag sets print nothing themselves: the flag package would
	// print the usage on an error or -h before returning it, and run
	// prints it once, after the error.
	defaults := e.db
	top := flag.NewFlagSet("leasehold", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	top.Usage = func() {}
	addDBFlags(top, &e.db, defaults)
	topUsage := func() { printUsage(e.stderr, top) }
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			topUsage()
			return exitOK
		}
		return e.fail(usagef("%v", err), topUsage)
	}
	if top.NArg() == 0 {
		return e.fail(usagef("no subcommand given"), topUsage)
	}
	name := top.Arg(0)
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return e.fail(usagef("unknown subcommand %q", name), topUsage)
	}
	cmd := commands[i]
	fs := flag.NewFlagSet("leasehold "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	action := cmd.flags(fs)
	addDBFlags(fs, &e.db, defaults)
	usage := func() {
		fmt.Fprintf(e.stderr, "Usage: leasehold [db flags] %s %s [db flags]\n\n%s.\n\nFlags:\n", cmd.name, cmd.args, capitalize(cmd.summary))
		fs.SetOutput(e.stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	// Flags may follow positional arguments: parse them in turns.
	var positional []string
	rest := top.Args()[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return exitOK
			}
			return e.fail(usagef("%v", err), usage)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	// The DSN is checked when a subcommand opens the database, after its
	// own flags: ddl connects to nothing, and needs none.
	if err := e.db.check(); err != nil {
		return e.fail(err, usage)
	}
	return e.fail(action(ctx, e, positional), usage)
}

// fail reports err and returns the exit status for it: usage errors print
// the usage too.
func (e *env) fail(err error, usage func()) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(e.stderr, "leasehold: %v\n", err)
	if errors.Is(err, errUsage) {
		fmt.Fprintln(e.stderr)
		usage()
		return exitUsage
	}
	return exitFailure
}

func printUsage(w io.Writer, top *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: leasehold [db flags] <subcommand> [flags]\n\n"+
		"Inspects and administers the leasehold coordination tables of a database.\n\nSubcommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun leasehold <subcommand> -h for its flags.\n\nDatabase flags (before or after the subcommand):\n")
	top.SetOutput(w)
	top.PrintDefaults()
	top.SetOutput(io.Discard)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// check validates the database flags the flag package cannot, but for
// the DSN: checkDSN does that.
func (c *dbConfig) check() error {
	if !slices.Contains(drivers(), c.driver) {
		return usagef("invalid value %q for flag -driver: want one of %s", c.driver, strings.Join(drivers(), ", "))
	}
	if _, err := migrations.DDL(dialectOf(c.driver), migrations.Options{TablePrefix: c.prefix}); err != nil {
		return usagef("invalid value %q for flag -table-prefix: %v", c.prefix, err)
	}
	return nil
}

// checkDSN validates -dsn for a subcommand that opens the database: it
// is required (there is no default database, so that no command opens or
// creates one the operator did not name), and a server's DSN given to a
// SQLite driver, which would take it for a file name, is refused.
func (c *dbConfig) checkDSN() error {
	if c.dsn == "" {
		return usagef("flag -dsn (or LEASEHOLD_DSN) is required: it names the database, for SQLite its file, "+
			"such as -dsn %s (the sample's), or for a server its DSN, such as -driver postgres -dsn 'postgres://user@host/db'",
			sampleSQLiteFile)
	}
	if isSQLite(c.driver) {
		if server, ok := redact.ServerDSN(c.dsn); ok {
			set := "-driver " + server + " (or LEASEHOLD_DRIVER=" + server + ")"
			if server == "" {
				set = "-driver to the server's: " + strings.Join(drivers()[2:], ", ")
			}
			return usagef("invalid value %q for flag -dsn: that is a database server's DSN, which the %s driver would take for a file name; "+
				"set %s, or give the path of a SQLite file", redact.DSN(c.driver, c.dsn), c.driver, set)
		}
	}
	return nil
}

// dialectOf returns the dialect name of a driver.
func dialectOf(driver string) string {
	if isSQLite(driver) {
		return "sqlite"
	}
	return driver
}

// sqlitePath returns the file a SQLite DSN opens, and whether the DSN is
// a plain path (rather than a "file:" URI with its own parameters).
func sqlitePath(dsn string) (path string, plain bool) {
	if rest, ok := strings.CutPrefix(dsn, "file:"); ok {
		path, _, _ = strings.Cut(rest, "?")
		path, _, _ = strings.Cut(path, "#")
		if auth, ok := strings.CutPrefix(path, "//"); ok {
			// file://localhost/path or file:///path
			if slash := strings.Index(auth, "/"); slash >= 0 {
				path = auth[slash:]
			}
		}
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
		return path, false
	}
	return dsn, !strings.Contains(dsn, "?")
}

// sqliteParam returns the value of the query parameter key of a SQLite
// "file:" URI, or "".
func sqliteParam(dsn, key string) string {
	_, query, ok := strings.Cut(dsn, "?")
	if !ok || !strings.HasPrefix(dsn, "file:") {
		return ""
	}
	query, _, _ = strings.Cut(query, "#")
	for _, kv := range strings.Split(query, "&") {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}

// access says what a subcommand does to the database, and so how it opens
// a SQLite file.
type access int

const (
	// create may create the file and the tables: migrate.
	create access = iota
	// readOnly reads an existing file, and cannot write it: status,
	// watch, migrate -dry-run.
	readOnly
	// readWrite writes rows to an existing file, never creating it:
	// resign.
	readWrite
)

// sqliteDSN returns the DSN that opens the SQLite database of dsn for a,
// and an error when a needs a file that does not exist.
//
// A plain path gets the settings the services use (dbopen.SQLiteDSN) for
// create, and those with mode=rw (never create the file) for readWrite.
// For readOnly it gets mode=rw, the busy timeout and query_only, which
// refuses every write. Not mode=ro: a read-only connection to a WAL
// database creates the -wal and -shm files it needs and cannot remove
// them when it closes, whereas the last read-write connection does. A
// "file:" URI keeps its parameters, and gets mode=rw unless it names a
// mode, and for readOnly query_only unless it sets that.
func sqliteDSN(driver, dsn string, a access) (string, error) {
	path, plain := sqlitePath(dsn)
	if a != create {
		if abs, err := sqliteMissing(dsn); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("no SQLite database at %s: no such file (give the path of an existing database with -dsn; "+
					"leasehold migrate creates one)", abs)
			}
			return "", fmt.Errorf("no SQLite database at %s: %w", abs, err)
		}
	}
	if a == create {
		dir, err := sqliteDirMissing(dsn)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("no directory %s for the SQLite database (create it first, or give another path with -dsn)", dir)
		case err != nil:
			return "", fmt.Errorf("the directory %s of the SQLite database: %w", dir, err)
		}
		if plain {
			return dbopen.SQLiteDSN(driver, path), nil
		}
		return dsn, nil
	}
	queryOnly, busy := "_pragma=query_only(1)", "_pragma=busy_timeout(5000)"
	if driver == dbopen.SQLite {
		queryOnly, busy = "_query_only=1", "_busy_timeout=5000"
	}
	if plain {
		full := dbopen.SQLiteDSN(driver, path)
		if a == readWrite {
			return full + "&mode=rw", nil
		}
		// The file name as SQLiteDSN escapes it, without the journal
		// mode: setting it may write.
		name, _, _ := strings.Cut(full, "?")
		return name + "?mode=rw&" + busy + "&" + queryOnly, nil
	}
	var add []string
	if sqliteParam(dsn, "mode") == "" {
		add = append(add, "mode=rw")
	}
	if _, query, _ := strings.Cut(dsn, "?"); a == readOnly && !strings.Contains(query, "query_only") {
		add = append(add, queryOnly)
	}
	if len(add) == 0 {
		return dsn, nil
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + strings.Join(add, "&"), nil
}

// sqliteMissing returns the absolute path of the file of a SQLite DSN,
// and an error when that file cannot be found: one wrapping
// fs.ErrNotExist when there is none. An in-memory database is never
// missing.
func sqliteMissing(dsn string) (abs string, err error) {
	path, _ := sqlitePath(dsn)
	if path == "" || strings.HasPrefix(path, ":memory:") || sqliteParam(dsn, "mode") == "memory" {
		return path, nil
	}
	abs, aerr := filepath.Abs(path)
	if aerr != nil {
		abs = path
	}
	_, err = os.Stat(path)
	return abs, err
}

// sqliteDirMissing returns the absolute path of the directory of a
// SQLite DSN's file, and an error when it is not a directory there. An
// in-memory database has no directory.
func sqliteDirMissing(dsn string) (dir string, err error) {
	path, _ := sqlitePath(dsn)
	if path == "" || strings.HasPrefix(path, ":memory:") || sqliteParam(dsn, "mode") == "memory" {
		return "", nil
	}
	dir = filepath.Dir(path)
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	return dir, err
}

// where names the database for messages: its driver and its DSN, with
// the password replaced.
func (e *env) where() string {
	return fmt.Sprintf("the %s database at %s", e.db.driver, redact.DSN(e.db.driver, e.db.dsn))
}

// open opens the database for a and checks that it answers.
func (e *env) open(ctx context.Context, a access) (*gorm.DB, func(), error) {
	if err := e.db.checkDSN(); err != nil {
		return nil, nil, err
	}
	driver, dsn := e.db.driver, e.db.dsn
	if isSQLite(driver) {
		var err error
		if dsn, err = sqliteDSN(driver, dsn, a); err != nil {
			return nil, nil, err
		}
	}
	where := e.where()
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", where, err)
	}
	closeDB := func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
	sqlDB, err := db.DB()
	if err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("open %s: %w", where, err)
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("cannot reach %s: %w", where, err)
	}
	return db, closeDB, nil
}

// admin opens the database for a, checks its schema is current, and
// returns an admin client for reads and resign requests; it never
// migrates.
func (e *env) admin(ctx context.Context, a access) (*coordination.Admin, func(), error) {
	db, closeDB, err := e.open(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	opts := migrations.Options{TablePrefix: e.db.prefix}
	v, err := migrations.Version(ctx, db, opts)
	if err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("read the schema version: %w", err)
	}
	if v < migrations.LatestVersion {
		closeDB()
		prefix := e.db.prefix
		if prefix == "" {
			prefix = "leasehold_" // the default table prefix
		}
		if v == 0 {
			return nil, nil, fmt.Errorf("no leasehold tables with prefix %q in %s (run leasehold migrate to create them)",
				prefix, e.where())
		}
		return nil, nil, fmt.Errorf("the tables with prefix %q in %s are at schema version %d; this build reads version %d (run leasehold migrate)",
			prefix, e.where(), v, migrations.LatestVersion)
	}
	adm, err := coordination.NewAdmin(db, coordination.Config{TablePrefix: e.db.prefix})
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	return adm, closeDB, nil
}

// redactingWriter replaces the DSN's password in everything written
// through it.
type redactingWriter struct {
	w io.Writer
	e *env
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	s := redact.Message(r.e.db.driver, r.e.db.dsn, string(p))
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
