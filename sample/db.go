package main

import (
	"fmt"
	"strings"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	// modernc.org/sqlite registers a pure-Go SQLite driver as "sqlite".
	_ "modernc.org/sqlite"
)

// Driver names accepted by -driver.
const (
	// driverPostgres selects gorm.io/driver/postgres (pgx).
	driverPostgres = "postgres"
	// driverMySQL selects gorm.io/driver/mysql, for MySQL and MariaDB.
	driverMySQL = "mysql"
	// driverSQLServer selects gorm.io/driver/sqlserver.
	driverSQLServer = "sqlserver"
	// driverSQLite selects gorm.io/driver/sqlite, which needs cgo
	// (github.com/mattn/go-sqlite3). A binary built with CGO_ENABLED=0
	// compiles, but cannot open a database with it.
	driverSQLite = "sqlite"
	// driverSQLitePure selects modernc.org/sqlite, a pure-Go SQLite that
	// also works with CGO_ENABLED=0, through gorm.io/driver/sqlite. It is
	// the default.
	driverSQLitePure = "sqlite-pure"
)

// drivers returns every driver name the sample accepts.
func drivers() []string {
	return []string{driverSQLitePure, driverSQLite, driverPostgres, driverMySQL, driverSQLServer}
}

// isSQLite reports whether driver names one of the SQLite drivers.
func isSQLite(driver string) bool {
	return driver == driverSQLite || driver == driverSQLitePure
}

// dialector returns the gorm dialector for driver, set up for dsn. None of
// them connects here.
func dialector(driver, dsn string) (gorm.Dialector, error) {
	switch driver {
	case driverPostgres:
		return postgres.Open(dsn), nil
	case driverMySQL:
		// By default gorm's MySQL dialector asks the server for its
		// version inside gorm.Open, so the handle could not be created
		// while the database is down. leasehold does not need the
		// version; skipping it lets the process start and wait.
		return mysql.New(mysql.Config{DSN: dsn, SkipInitializeWithVersion: true}), nil
	case driverSQLServer:
		return sqlserver.Open(dsn), nil
	case driverSQLite:
		return sqlite.Open(dsn), nil
	case driverSQLitePure:
		// gorm's SQLite dialector works with any database/sql SQLite
		// driver; "sqlite" is the name modernc.org/sqlite registers.
		return sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: dsn}), nil
	default:
		return nil, fmt.Errorf("unknown driver %q (want one of %s)", driver, strings.Join(drivers(), ", "))
	}
}

// openGorm opens a gorm handle on dsn with driver's dialector. It does not
// connect (DisableAutomaticPing): a database that is down at start is
// waited for later, and the coordinator rides out its outages.
func openGorm(driver, dsn string) (*gorm.DB, error) {
	d, err := dialector(driver, dsn)
	if err != nil {
		return nil, err
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		return nil, fmt.Errorf("open the %s database: %w", driver, err)
	}
	return db, nil
}

// sqliteDSN returns the DSN that opens the SQLite file at path with the
// given SQLite driver:
//
//   - WAL mode, so that readers do not block the writer and several
//     processes can share the file;
//   - a 5 s busy timeout, set first: switching a new file to WAL takes a
//     lock, and two processes opening it at once must wait for each other
//     rather than fail with SQLITE_BUSY;
//   - _txlock=immediate: transactions take the write lock when they
//     begin. A deferred transaction that reads and then writes gets
//     SQLITE_BUSY at once when another connection writes, and the busy
//     timeout does not help it;
//   - for the pure-Go driver, synchronous=NORMAL (it defaults to FULL,
//     which is much slower; the cgo driver already defaults to NORMAL).
//
// The characters '%', '?' and '#' in path are percent-encoded, as SQLite's
// URI file names need. For other drivers it returns path unchanged.
func sqliteDSN(driver, path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	switch driver {
	case driverSQLite:
		return "file:" + p + "?_busy_timeout=5000&_journal_mode=WAL&_txlock=immediate"
	case driverSQLitePure:
		return "file:" + p + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
			"&_pragma=synchronous(NORMAL)&_txlock=immediate"
	default:
		return path
	}
}
