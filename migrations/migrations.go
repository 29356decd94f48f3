package migrations

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// Options selects the schema to migrate. The zero value is valid.
type Options struct {
	// TablePrefix is prepended to every table name. Only ASCII letters,
	// digits and '_' are allowed, starting with a letter or '_', at most 40
	// bytes; anything else is rejected, so the prefix can never carry SQL.
	// Defaults to "leasehold_".
	TablePrefix string

	// LockTimeout bounds the wait for the migration lock held by another
	// process migrating the same schema. Defaults to 1 minute.
	LockTimeout time.Duration
}

// DefaultTablePrefix is the table prefix used when Options.TablePrefix is
// empty.
const DefaultTablePrefix = store.DefaultTablePrefix

// LatestVersion is the schema version this build of leasehold needs.
var LatestVersion = store.LatestVersion

// Dialects lists the dialect names DDL accepts: "postgres", "mysql",
// "sqlite" and "sqlserver", as gorm's Dialector.Name() reports them.
var Dialects = append([]string(nil), store.Dialects...)

// Errors.
var (
	// ErrInvalidPrefix is returned for an unsafe Options.TablePrefix.
	ErrInvalidPrefix = store.ErrInvalidPrefix
	// ErrUnsupportedDialect is returned for a database leasehold does not
	// support.
	ErrUnsupportedDialect = store.ErrUnsupportedDialect
	// ErrMigrationLock is returned when another process held the migration
	// lock for longer than Options.LockTimeout.
	ErrMigrationLock = store.ErrMigrationLock
)

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
	applied, err := s.Migrate(ctx, timeout)
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
	return s.SchemaVersion(ctx)
}

// DDL returns the SQL statements that create the latest schema from
// nothing on the given dialect, including the version table and its rows,
// for a DBA who applies schema changes by hand. Applying them has the same
// effect as Migrate on an empty database.
func DDL(dialect string, opts Options) ([]string, error) {
	return store.DDL(dialect, opts.TablePrefix)
}

// Script is DDL joined into one script, each statement ending with ';'.
func Script(dialect string, opts Options) (string, error) {
	stmts, err := DDL(dialect, opts)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- leasehold coordination schema version %d for %s\n", LatestVersion, dialect)
	for _, s := range stmts {
		b.WriteString(s)
		b.WriteString(";\n")
	}
	return b.String(), nil
}
