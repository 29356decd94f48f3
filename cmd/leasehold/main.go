package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/redact"
	"github.com/leasehold/leasehold/migrations"
)

// defaultSQLiteFile is the database used when neither -dsn nor
// LEASEHOLD_DSN is set: the sample's SQLite file in the working directory.
const defaultSQLiteFile = "leasehold-sample.db"

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

// addDBFlags registers the database flags on fs. They are accepted before
// the subcommand and after it.
func addDBFlags(fs *flag.FlagSet, c *dbConfig) {
	fs.StringVar(&c.driver, "driver", c.driver,
		"database driver: "+strings.Join(drivers(), ", ")+" (env LEASEHOLD_DRIVER)")
	fs.StringVar(&c.dsn, "dsn", c.dsn,
		"data source name, or for SQLite the path of the database file (env LEASEHOLD_DSN; default: the SQLite file "+
			defaultSQLiteFile+" in the working directory)")
	fs.StringVar(&c.prefix, "table-prefix", c.prefix, "table prefix (env LEASEHOLD_TABLE_PREFIX)")
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
	{"status", "[-json]", "list the leases and pools, by the database clock", statusFlags},
	{"watch", "[-interval 2s] [-count N]", "list them again every interval, marking what changed", watchFlags},
	{"migrate", "[-dry-run]", "bring the schema to the latest version", migrateFlags},
	{"ddl", "[-dialect D] [-from N]", "print the SQL that takes a schema from version N to the latest", ddlFlags},
	{"resign", "NAME [-prefer HOLDER]", "ask the holder of a lease to hand it over", resignFlags},
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

	top := flag.NewFlagSet("leasehold", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	addDBFlags(top, &e.db)
	top.Usage = func() { printUsage(e.stderr, top) }
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			top.Usage()
			return exitOK
		}
		return e.fail(usagef("%v", err), top.Usage)
	}
	if top.NArg() == 0 {
		return e.fail(usagef("no subcommand given"), top.Usage)
	}
	name := top.Arg(0)
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return e.fail(usagef("unknown subcommand %q", name), top.Usage)
	}
	cmd := commands[i]
	fs := flag.NewFlagSet("leasehold "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	action := cmd.flags(fs)
	addDBFlags(fs, &e.db)
	fs.Usage = func() {
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
				fs.Usage()
				return exitOK
			}
			return e.fail(usagef("%v", err), fs.Usage)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	// ddl connects to nothing: it needs a DSN no more than a database.
	if err := e.db.check(cmd.name != "ddl"); err != nil {
		return e.fail(err, fs.Usage)
	}
	return e.fail(action(ctx, e, positional), fs.Usage)
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

// check validates the database flags the flag package cannot. needDSN
// makes -dsn required for the drivers that have no default.
func (c *dbConfig) check(needDSN bool) error {
	if !slices.Contains(drivers(), c.driver) {
		return usagef("invalid value %q for flag -driver: want one of %s", c.driver, strings.Join(drivers(), ", "))
	}
	if needDSN && c.dsn == "" && !isSQLite(c.driver) {
		return usagef("flag -dsn (or LEASEHOLD_DSN) is required with -driver %s; only the SQLite drivers have a default", c.driver)
	}
	if _, err := migrations.DDL(dialectOf(c.driver), migrations.Options{TablePrefix: c.prefix}); err != nil {
		return usagef("invalid value %q for flag -table-prefix: %v", c.prefix, err)
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
		return path, false
	}
	return dsn, !strings.Contains(dsn, "?")
}

// open opens the database and checks that it answers. With mustExist, a
// SQLite file that does not exist is an error rather than created empty.
func (e *env) open(ctx context.Context, mustExist bool) (*gorm.DB, func(), error) {
	driver, dsn := e.db.driver, e.db.dsn
	if isSQLite(driver) {
		if dsn == "" {
			dsn = defaultSQLiteFile
		}
		path, plain := sqlitePath(dsn)
		if mustExist && path != "" && !strings.HasPrefix(path, ":memory:") {
			if _, err := os.Stat(path); err != nil {
				abs, _ := filepath.Abs(path)
				return nil, nil, fmt.Errorf("no SQLite database at %s (give its path with -dsn): %w", abs, err)
			}
		}
		if plain {
			dsn = dbopen.SQLiteDSN(driver, dsn)
		}
		e.db.dsn = dsn
	}
	where := fmt.Sprintf("the %s database at %s", driver, redact.DSN(driver, dsn))
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

// coordinator opens the database, checks its schema is current, and
// returns a coordinator for reads and resign requests; it is never run.
func (e *env) coordinator(ctx context.Context) (*coordination.Coordinator, func(), error) {
	db, closeDB, err := e.open(ctx, true)
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
			prefix = migrations.DefaultTablePrefix
		}
		if v == 0 {
			return nil, nil, fmt.Errorf("no leasehold tables with prefix %q in the %s database at %s (run leasehold migrate to create them)",
				prefix, e.db.driver, redact.DSN(e.db.driver, e.db.dsn))
		}
		return nil, nil, fmt.Errorf("the tables with prefix %q are at schema version %d; this build reads version %d (run leasehold migrate)",
			prefix, v, migrations.LatestVersion)
	}
	id, err := operatorIdentity()
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	c, err := coordination.New(db, id, coordination.Config{TablePrefix: e.db.prefix, DisableAutoMigrate: true})
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	return c, closeDB, nil
}

// operatorIdentity is the identity of this command: the host name as the
// node, "cli" as the cluster, a fresh instance.
func operatorIdentity() (identity.Identity, error) {
	node, err := os.Hostname()
	if err == nil {
		if id, err := identity.New(node, "cli"); err == nil {
			return id, nil
		}
	}
	return identity.New("leasehold-cli", "cli")
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
