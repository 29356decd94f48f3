package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Schema runs the statements of the coordination schema: it reads the
// applied version, checks it, and migrates, one step at a time under the
// database's migration lock (schema.go lists the steps).
type Schema struct {
	conns  *gate
	sql    schemaSQL
	tables Tables
}

// SchemaVersion returns the applied schema version, 0 when the version
// table does not exist.
func (s *Schema) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
		// gorm's HasTable swallows errors, and on most dialects panics
		// when a callback of the application's fails its read (gorm's Row
		// then has no row to scan). One read first tells "absent" from
		// "unreachable" or "refused".
		var one int
		if err := scanRow(db, stmt{"SELECT 1", nil}, &one); err != nil {
			return err
		}
		if has, err := s.hasTable(db, s.tables.Migrations); err != nil || !has {
			return err
		}
		return scanRow(db, stmt{s.sql.sqlCurrentVersion(s.tables), nil}, &v)
	})
	return v, err
}

// hasTable reports whether the table exists.
func (s *Schema) hasTable(db *gorm.DB, table string) (bool, error) {
	st := s.sql.sqlCountTables(table)
	if st.q == "" {
		return db.Migrator().HasTable(table), nil
	}
	var n int64
	err := scanRow(db, st, &n)
	return n > 0, err
}

// CheckSchema returns an error wrapping ErrSchemaMissing when the schema is
// older than LatestVersion, or the database error when it cannot tell.
func (s *Schema) CheckSchema(ctx context.Context) error {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v < LatestVersion {
		return fmt.Errorf("%w: tables with prefix %q are at version %d, this build needs %d; "+
			"run migrations.Migrate(ctx, db, migrations.Options{TablePrefix: %q}), apply the DDL from migrations.DDL, "+
			"or leave AutoMigrate enabled", ErrSchemaMissing, s.tables.Prefix, v, LatestVersion, s.tables.Prefix)
	}
	return nil
}

// Migrate brings the schema to LatestVersion. It is idempotent and safe to
// run from many processes at once: a dialect-specific lock serialises the
// runs, and each run applies only the steps not yet recorded.
func (s *Schema) Migrate(ctx context.Context, lockTimeout time.Duration) (applied []int, err error) {
	return s.MigrateTo(ctx, lockTimeout, LatestVersion)
}

// MigrateTo is Migrate up to version target only, for tests that need a
// schema of an earlier version.
func (s *Schema) MigrateTo(ctx context.Context, lockTimeout time.Duration, target int) (applied []int, err error) {
	// On the pool, never on the listening connection: the migration runs
	// its own transactions and locks.
	err = s.conns.runOn(ctx, s.conns.general, func(db *gorm.DB) error {
		return s.sql.lock.withMigrationLock(db, s.tables, lockTimeout, func(tx *gorm.DB, stepTx func(func() error) error) error {
			if err := tx.Exec(s.sql.createMigrationsTable(s.tables)).Error; err != nil {
				return fmt.Errorf("create %s: %w", s.tables.Migrations, err)
			}
			var current int
			if err := scanRow(tx, stmt{s.sql.sqlCurrentVersion(s.tables), nil}, &current); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			for _, m := range migrations {
				if m.Version <= current || m.Version > target {
					continue
				}
				step := func() error { return s.applyStep(tx, m) }
				var err error
				if m.transactional {
					err = stepTx(step)
				} else {
					err = step()
				}
				if err != nil {
					return err
				}
				applied = append(applied, m.Version)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// applyStep runs one migration step and records its version, skipping the
// statements when the step's applied check finds them done already.
func (s *Schema) applyStep(tx *gorm.DB, m Migration) error {
	done := false
	if m.applied != nil {
		if q := m.applied(s.sql, s.tables); q != "" {
			var n int
			if err := scanRow(tx, stmt{q, nil}, &n); err != nil {
				return fmt.Errorf("migration %d (%s): check: %w", m.Version, m.Description, err)
			}
			done = n > 0
		}
	}
	if !done {
		for _, stmt := range m.statements(s.sql, s.tables) {
			if err := tx.Exec(stmt).Error; err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Description, err)
			}
		}
	}
	if _, err := exec(tx, stmt{s.sql.sqlRecordVersion(s.tables, m.Version), []any{m.Description}}); err != nil {
		return fmt.Errorf("record migration %d: %w", m.Version, err)
	}
	return nil
}
