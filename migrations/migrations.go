package migrations

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// Options selects the schema to migrate or render. The zero value is
// valid.
type Options struct {
	// TablePrefix is prepended to every table name. Only ASCII letters,
	// digits and '_' are allowed, starting with a letter or '_', at most 40
	// bytes; anything else is rejected, so the prefix can never carry SQL.
	// Defaults to "leasehold_".
	TablePrefix string

	// LockTimeout bounds Migrate's wait for the migration lock held by
	// another process migrating the same schema. Defaults to 1 minute.
	LockTimeout time.Duration

	// From is the schema version DDL's statements start from: 0 for a
	// database without leasehold's tables, or the version Version reports
	// for one to upgrade. It must be 0 to LatestVersion. Defaults to 0.
	From int
}

// LatestVersion is the schema version this build of leasehold needs: the
// version Migrate brings a schema to and the last one DDL renders.
const LatestVersion = 10

// Dialects returns the dialect names DDL accepts: "postgres", "mysql",
// "sqlite" and "sqlserver", as gorm's Dialector.Name() reports them. The
// slice is new on every call; changing it changes nothing else.
func Dialects() []string {
	return slices.Clone(store.Dialects)
}

// ErrMigrationLock is returned when another process held the migration
// lock for longer than Options.LockTimeout.
var ErrMigrationLock = store.ErrMigrationLock

// Migrate brings the coordination schema in db up to LatestVersion and
// returns the versions it applied (none when the schema was current).
//
// It is idempotent and safe to run from many processes at the same moment:
// one process migrates while the others wait for its lock, then find
// nothing left to do. The lock is a transaction-scoped advisory lock on
// PostgreSQL, a named lock (GET_LOCK) on MySQL and MariaDB, an immediate
// write transaction on SQLite, and sp_getapplock on SQL Server.
func Migrate(ctx context.Context, db *gorm.DB, opts Options) ([]int, error) {
	s, err := store.New(db, store.Options{TablePrefix: opts.TablePrefix})
	if err != nil {
		return nil, err
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	applied, err := s.Schema().Migrate(ctx, timeout)
	if err != nil {
		return nil, fmt.Errorf("migrations: migrate %s schema with prefix %q: %w", s.Dialect(), s.Tables().Prefix, err)
	}
	return applied, nil
}

// Version returns the schema version applied in db: 0 when the schema has
// never been migrated.
func Version(ctx context.Context, db *gorm.DB, opts Options) (int, error) {
	s, err := store.New(db, store.Options{TablePrefix: opts.TablePrefix})
	if err != nil {
		return 0, err
	}
	return s.Schema().SchemaVersion(ctx)
}

// SQL is the schema SQL that DDL renders for one dialect, in two forms.
type SQL struct {
	// Statements are the statements in the order they must run, on one
	// connection, each without a terminating ';'.
	Statements []string

	// Script is Statements as one script for the dialect's command-line
	// client: a comment naming the versions, then each statement ending
	// with ';', and on SQL Server followed by GO, so that each statement
	// is compiled only after the ones before it have run. It is what
	// leasehold ddl (cmd/leasehold) prints.
	Script string
}

// DDL renders the SQL that takes a schema at version opts.From (0: no
// tables yet) to LatestVersion on the given dialect, one of Dialects,
// with the rows of the version table, for a DBA who applies schema changes
// by hand. Applying it has the effect of Migrate on a schema at that
// version, and applying it a second time changes nothing: every statement
// is guarded (IF NOT EXISTS or its equivalent; version rows inserted only
// when absent; on MySQL and MariaDB a column is added through a prepared
// statement that checks information_schema first). SQLite cannot guard a
// column addition, so there a missing table is created in its latest form
// and a table that lacks columns is rebuilt with them, rows kept, all in
// one BEGIN IMMEDIATE ... COMMIT transaction.
//
// Run the statements in order on one connection (MySQL's guards keep their
// choice in a session variable); a tool that stops at a failed statement
// must roll back. Version tells a database's current version.
//
// It returns an error wrapping coordination.ErrInvalidConfig for another
// dialect, an unsafe prefix or a From outside 0 to LatestVersion, naming
// the value.
func DDL(dialect string, opts Options) (SQL, error) {
	stmts, err := store.DDLFrom(dialect, opts.TablePrefix, opts.From)
	if err != nil {
		return SQL{}, err
	}
	script, err := store.Script(dialect, opts.TablePrefix, opts.From)
	if err != nil {
		return SQL{}, err
	}
	return SQL{Statements: stmts, Script: script}, nil
}
