// Package dbopen maps a driver name and a DSN to an open *gorm.DB.
//
// It is the one place that knows which gorm dialector belongs to which
// driver name, so that tests, helper processes and commands all accept the
// same names: "postgres", "mysql", "sqlserver", "sqlite" (the cgo driver,
// github.com/mattn/go-sqlite3) and "sqlite-pure" (the pure-Go driver,
// modernc.org/sqlite, through gorm.io/driver/sqlite).
package dbopen

import (
	"fmt"
	"maps"
	"strings"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	// modernc.org/sqlite registers the pure-Go driver as "sqlite".
	_ "modernc.org/sqlite"
)

// Driver names accepted by Open, Dialector and SQLiteDSN.
const (
	// Postgres selects gorm.io/driver/postgres (pgx).
	Postgres = "postgres"
	// MySQL selects gorm.io/driver/mysql; it works with MySQL and MariaDB.
	MySQL = "mysql"
	// SQLServer selects gorm.io/driver/sqlserver.
	SQLServer = "sqlserver"
	// SQLite selects gorm.io/driver/sqlite, which uses cgo
	// (github.com/mattn/go-sqlite3). A binary built with CGO_ENABLED=0
	// compiles but cannot open a database with it.
	SQLite = "sqlite"
	// SQLitePure selects modernc.org/sqlite, a pure-Go SQLite that also
	// works with CGO_ENABLED=0, through gorm.io/driver/sqlite with the
	// driver name "sqlite".
	SQLitePure = "sqlite-pure"
)

// pureSQLiteDriver is the database/sql name modernc.org/sqlite registers.
const pureSQLiteDriver = "sqlite"

// Drivers returns every driver name that Open accepts.
func Drivers() []string {
	return []string{Postgres, MySQL, SQLServer, SQLite, SQLitePure}
}

// Dialector returns the gorm dialector for driver, set up to connect to dsn.
// It returns an error that names the driver value when the name is unknown.
func Dialector(driver, dsn string) (gorm.Dialector, error) {
	switch driver {
	case Postgres:
		return postgres.Open(dsn), nil
	case MySQL:
		// gorm's MySQL dialector asks the server for its version while
		// opening, so the handle could not even be created while the
		// database is down. Skipping that keeps "start while the database
		// is down" working; leasehold does not need the version.
		return mysql.New(mysql.Config{DSN: dsn, SkipInitializeWithVersion: true}), nil
	case SQLServer:
		return sqlserver.Open(dsn), nil
	case SQLite:
		return sqlite.Open(dsn), nil
	case SQLitePure:
		return sqlite.New(sqlite.Config{DriverName: pureSQLiteDriver, DSN: dsn}), nil
	default:
		return nil, fmt.Errorf("dbopen: unknown driver %q (want one of %s)",
			driver, strings.Join(Drivers(), ", "))
	}
}

// Open opens a gorm database with the dialector that driver names.
// A nil cfg means a zero gorm.Config. Errors name the driver. Open never
// connects: it sets DisableAutomaticPing, so a process can open its handle
// while the database is down and let the coordinator retry.
//
// gorm.Open writes into the Config it is given (the dialector, clause
// builders, plugins), so a Config shared by two gorm.Open calls is a data
// race and mixes up the two handles. Open therefore hands gorm a copy of
// *cfg, with its maps copied too, and never changes *cfg: one Config may
// be passed to any number of Open calls, concurrent ones included.
func Open(driver, dsn string, cfg *gorm.Config) (*gorm.DB, error) {
	d, err := Dialector(driver, dsn)
	if err != nil {
		return nil, err
	}
	var c gorm.Config
	if cfg != nil {
		c = *cfg
		c.ClauseBuilders = maps.Clone(cfg.ClauseBuilders)
		c.Plugins = maps.Clone(cfg.Plugins)
		c.Dialector = nil
	}
	c.DisableAutomaticPing = true
	db, err := gorm.Open(d, &c)
	if err != nil {
		return nil, fmt.Errorf("dbopen: open %s database: %w", driver, err)
	}
	return db, nil
}

// SQLiteDSN returns the DSN that opens the SQLite file at path with the
// given SQLite driver, in WAL mode, with a 5 s busy timeout and with
// transactions that take the write lock when they begin (_txlock=immediate).
// The immediate lock matters: a deferred read-then-write transaction gets
// SQLITE_BUSY at once when another connection writes, and the busy timeout
// does not help it.
//
// For SQLite (cgo) it returns
//
//	file:PATH?_busy_timeout=5000&_journal_mode=WAL&_txlock=immediate
//
// and for SQLitePure
//
//	file:PATH?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate
//
// The busy timeout comes first: switching a new file to WAL takes a lock,
// and two processes opening it at once must wait for each other rather
// than fail with SQLITE_BUSY.
//
// (the pure driver defaults to synchronous=FULL, which is about ten times
// slower; the cgo driver already defaults to NORMAL). The characters '%',
// '?' and '#' in path are percent-encoded, as SQLite's URI file names need.
//
// SQLiteDSN panics if driver is not SQLite or SQLitePure: that is a
// programming error, not a condition to handle at run time.
func SQLiteDSN(driver, path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	switch driver {
	case SQLite:
		return "file:" + p + "?_busy_timeout=5000&_journal_mode=WAL&_txlock=immediate"
	case SQLitePure:
		return "file:" + p + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
			"&_pragma=synchronous(NORMAL)&_txlock=immediate"
	default:
		panic(fmt.Sprintf("dbopen.SQLiteDSN: driver %q is not a SQLite driver (want %q or %q)",
			driver, SQLite, SQLitePure))
	}
}
