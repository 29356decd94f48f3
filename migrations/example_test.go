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
	// applied: [1 2 3 4 5 6 7 8 9 10] <nil>
	// again: [] <nil>
}

// DDL gives a DBA the statements to apply by hand.
func ExampleDDL() {
	ddl, err := migrations.DDL("postgres", migrations.Options{TablePrefix: "coord_"})
	if err != nil {
		panic(err)
	}
	fmt.Println(ddl.Statements[1])
	// Output: CREATE TABLE IF NOT EXISTS "coord_leases" (name VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name))
}

// With From, DDL gives a DBA the statements that upgrade a schema from the
// version Version reports; each is safe to apply twice.
func ExampleDDL_from() {
	ddl, err := migrations.DDL("postgres", migrations.Options{TablePrefix: "coord_", From: 9})
	if err != nil {
		panic(err)
	}
	for _, s := range ddl.Statements[1:] {
		fmt.Println(s)
	}
	// Output:
	// ALTER TABLE "coord_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT ''
	// INSERT INTO "coord_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING
}

// Script is the same SQL as one file for the database's command-line
// client; on SQL Server each statement is followed by GO.
func ExampleDDL_script() {
	ddl, err := migrations.DDL("sqlserver", migrations.Options{From: 9})
	if err != nil {
		panic(err)
	}
	fmt.Print(ddl.Script)
	// Output:
	// -- leasehold coordination schema for sqlserver, from version 9 to 10
	// -- Every statement is safe to apply again.
	// IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
	// GO
	// IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
	// GO
	// IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
	// GO
}

// Dialects names the databases DDL renders for.
func ExampleDialects() {
	fmt.Println(migrations.Dialects())
	// Output: [postgres mysql sqlite sqlserver]
}
