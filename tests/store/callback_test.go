package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/store"
)

// errRefused is what the refusing callback fails every read with.
var errRefused = errors.New("refused by the application's callback")

// TestRowCallbackErrorIsReturned: an application may register gorm
// callbacks on the handle it gives leasehold. When one fails a statement
// before it runs, gorm's Row returns no *sql.Row at all; every read of a
// single row must return the callback's error instead of panicking.
func TestRowCallbackErrorIsReturned(t *testing.T) {
	db, err := dbopen.Open(dbopen.SQLitePure, dbopen.SQLiteDSN(dbopen.SQLitePure, filepath.Join(t.TempDir(), "callback.db")),
		&gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	// With the schema in place SchemaVersion reads the version row rather
	// than stopping at "no table".
	s := migrated(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	refuse := func(tx *gorm.DB) { _ = tx.AddError(errRefused) }
	if err := db.Callback().Row().Before("gorm:row").Register("test:refuse", refuse); err != nil {
		t.Fatal(err)
	}
	// A fresh prefix: its migration table is new, so MigrateTo reads the
	// version after creating it.
	fresh, err := store.New(db, store.Options{TablePrefix: "other_"})
	if err != nil {
		t.Fatal(err)
	}

	reads := []struct {
		name string
		read func() error
	}{
		{"SchemaVersion", func() error { _, err := s.Schema().SchemaVersion(ctx); return err }},
		{"Now", func() error { _, err := s.Now(ctx); return err }},
		{"ReadSession", func() error { _, _, err := s.Sessions().ReadSession(ctx, "no-such-session"); return err }},
		{"Migrate", func() error { _, err := fresh.Schema().Migrate(ctx, 30*time.Second); return err }},
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				return r.read()
			}()
			if !errors.Is(err, errRefused) {
				t.Fatalf("%s = %v, want the callback's error %q", r.name, err, errRefused)
			}
		})
	}
}

// migrated returns the store of db with its schema migrated.
func migrated(t *testing.T, db *gorm.DB) *store.Store {
	t.Helper()
	return migratedWith(t, db, store.Options{})
}

// migratedWith returns the store of db with the options o and its schema
// migrated.
func migratedWith(t *testing.T, db *gorm.DB, o store.Options) *store.Store {
	t.Helper()
	s, err := store.New(db, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Schema().Migrate(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return s
}
