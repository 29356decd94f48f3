package migrations_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

	"github.com/leasehold/leasehold/migrations"
)

// Migrate at deploy time, then start the services with
// coordination.Config.DisableAutoMigrate set.
func ExampleMigrate() {
	dir, _ := os.MkdirTemp("", "leasehold-example")
	defer os.RemoveAll(dir)
	db, err := gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: filepath.Join(dir, "app.db")}), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	ctx := context.Background()
	applied, err := migrations.Migrate(ctx, db, migrations.Options{})
	fmt.Println("applied:", applied, err)
	applied, err = migrations.Migrate(ctx, db, migrations.Options{})
	fmt.Println("again:", applied, err)
	// Output:
	// applied: [1 2 3 4 5 6 7 8 9] <nil>
	// again: [] <nil>
}

// DDL gives a DBA the statements to apply by hand.
func ExampleDDL() {
	stmts, err := migrations.DDL("postgres", migrations.Options{TablePrefix: "coord_"})
	if err != nil {
		panic(err)
	}
	fmt.Println(stmts[1])
	// Output: CREATE TABLE IF NOT EXISTS "coord_leases" (name VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name))
}

// DDLFrom gives a DBA the statements that upgrade a schema from the
// version Version reports; each is safe to apply twice.
func ExampleDDLFrom() {
	stmts, err := migrations.DDLFrom("postgres", migrations.Options{TablePrefix: "coord_"}, 8)
	if err != nil {
		panic(err)
	}
	for _, s := range stmts[1:] {
		fmt.Println(s)
	}
	// Output:
	// ALTER TABLE "coord_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT ''
	// INSERT INTO "coord_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING
}
