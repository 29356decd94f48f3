package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/migrations"
)

// postgresSettings are the private PostgreSQL server's extra settings:
// pg_stat_statements for the renewal's server time (planning included),
// and room for the fleet section's connections.
var postgresSettings = []string{
	"shared_preload_libraries=pg_stat_statements",
	"pg_stat_statements.track_planning=on",
	"pg_stat_statements.max=10000",
	"max_connections=600",
}

// serverStart bounds the first start of a server, setup included.
const serverStart = 3 * time.Minute

// target is a fresh database of one dialect.
type target struct {
	dialect string
	driver  string
	dsn     string         // for this process
	srv     *testdb.Server // nil for SQLite
	name    string         // the database name on srv
	path    string         // the SQLite file
	drop    func()
}

// target creates a fresh database of dialect, starting its server on first
// use.
func (r *runner) target(ctx context.Context, dialect string) (*target, error) {
	r.dbCount++
	name := fmt.Sprintf("bench_%d", r.dbCount)
	switch dialect {
	case "sqlite":
		dir := filepath.Join(r.tmp, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "bench.db")
		return &target{dialect: dialect, driver: sqliteDriver, dsn: dbopen.SQLiteDSN(sqliteDriver, path), path: path,
			drop: func() { _ = os.RemoveAll(dir) }}, nil
	case "postgres", "mysql":
	default:
		return nil, fmt.Errorf("dialect %q is unknown", dialect)
	}
	srv, err := r.server(ctx, dialect)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := srv.CreateDatabase(cctx, name); err != nil {
		return nil, err
	}
	tg := &target{dialect: dialect, srv: srv, name: name, drop: func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.DropDatabase(dctx, name)
	}}
	if dialect == "mysql" {
		tg.driver, tg.dsn = dbopen.MySQL, srv.DSN(name)+"?parseTime=true&loc=UTC"
		return tg, nil
	}
	tg.driver, tg.dsn = dbopen.Postgres, srv.DSN(name)
	sqlDB, err := sql.Open("pgx", tg.dsn)
	if err != nil {
		tg.drop()
		return nil, err
	}
	defer func() { _ = sqlDB.Close() }()
	if _, err := sqlDB.ExecContext(cctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		tg.drop()
		return nil, fmt.Errorf("create extension pg_stat_statements: %w", err)
	}
	return tg, nil
}

// server returns the private server of dialect, starting it once.
func (r *runner) server(ctx context.Context, dialect string) (*testdb.Server, error) {
	start := func(f func(context.Context) (*testdb.Server, error)) (*testdb.Server, error) {
		sctx, cancel := context.WithTimeout(ctx, serverStart)
		defer cancel()
		s, err := f(sctx)
		if errors.Is(err, testdb.ErrBinariesMissing) {
			return nil, fmt.Errorf("the %s server is not installed here: %w", dialect, err)
		}
		return s, err
	}
	if dialect == "postgres" {
		r.pgOnce.Do(func() {
			r.pg, r.pgErr = start(func(ctx context.Context) (*testdb.Server, error) {
				return testdb.StartPostgresWith(ctx, postgresSettings...)
			})
		})
		return r.pg, r.pgErr
	}
	r.myOnce.Do(func() { r.my, r.myErr = start(testdb.StartMariaDB) })
	return r.my, r.myErr
}

// childDSN is the DSN for a worker process named app: on PostgreSQL it
// sets application_name, so pg_stat_activity tells the processes apart.
func (tg *target) childDSN(app string) string {
	if tg.dialect == "postgres" {
		return tg.dsn + " application_name=" + app
	}
	return tg.dsn
}

// open opens the database in this process, gorm's logger silenced.
func (tg *target) open() (*gorm.DB, error) {
	return dbopen.Open(tg.driver, tg.dsn, &gorm.Config{Logger: logger.Discard})
}

// migrate creates the coordination schema, so that processes started
// afterwards find it in place.
func (tg *target) migrate(ctx context.Context) error {
	db, err := tg.open()
	if err != nil {
		return err
	}
	defer closeDB(db)
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = migrations.Migrate(mctx, db, migrations.Options{})
	return err
}

// liveLeases counts the leases the database shows as held and unexpired,
// by its own clock.
func (tg *target) liveLeases(ctx context.Context) (int, error) {
	db, err := tg.open()
	if err != nil {
		return 0, err
	}
	defer closeDB(db)
	a, err := coordination.NewAdmin(db, coordination.Config{})
	if err != nil {
		return 0, err
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	leases, err := a.Leases(lctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range leases {
		if l.Live {
			n++
		}
	}
	return n, nil
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}
