package testdb

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	// Database/sql drivers of the admin pools (dialect.open): "pgx" for
	// PostgreSQL and "mysql" for MySQL and MariaDB.
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/leasehold/leasehold/internal/dbopen"
)

// dialect is what differs between the server dialects, whether their
// server is a private one or one an environment variable names: the
// drivers, the statements that create and drop a database, and how a DSN
// is pointed at another database. There is one value per dialect
// (postgresDialect, mysqlDialect, sqlserverDialect); dialectOf picks it by
// name, and nothing else looks at the name.
type dialect struct {
	name   string // as in Target.Dialect
	env    string // the variable naming an external server of the dialect
	driver string // dbopen's driver name, which redact takes too
	// open returns a database/sql pool on dsn; see externalServer.open
	// for ioTimeout.
	open func(dsn string, ioTimeout time.Duration) (*sql.DB, error)
	// withDatabase returns dsn with its database replaced by name, a
	// plain identifier (see the function withDatabase).
	withDatabase func(dsn, name string) (string, error)
	// create and drop are the statements that create and drop the
	// database name, which validName has accepted. dropOlder, when set,
	// drops it on a server too old for drop; an external server, whose
	// version is the user's, is given it when drop fails.
	create, drop, dropOlder func(name string) string
	// roles reports whether Target.Role can make login roles on the
	// dialect's servers.
	roles bool
}

var (
	postgresDialect = &dialect{
		name:   "postgres",
		env:    PostgresDSNEnv,
		driver: dbopen.Postgres,
		open:   func(dsn string, _ time.Duration) (*sql.DB, error) { return sql.Open("pgx", dsn) },
		withDatabase: func(dsn, name string) (string, error) {
			return postgresWith(dsn, pgSettings{database: name})
		},
		create: func(name string) string { return fmt.Sprintf(`CREATE DATABASE "%s"`, name) },
		// PostgreSQL before 13 has no WITH (FORCE).
		drop:      func(name string) string { return fmt.Sprintf(`DROP DATABASE IF EXISTS "%s" WITH (FORCE)`, name) },
		dropOlder: func(name string) string { return fmt.Sprintf(`DROP DATABASE IF EXISTS "%s"`, name) },
		roles:     true,
	}
	mysqlDialect = &dialect{
		name:         "mysql",
		env:          MySQLDSNEnv,
		driver:       dbopen.MySQL,
		open:         func(dsn string, _ time.Duration) (*sql.DB, error) { return sql.Open("mysql", dsn) },
		withDatabase: mysqlWithDatabase,
		create:       func(name string) string { return fmt.Sprintf("CREATE DATABASE `%s` CHARACTER SET utf8mb4", name) },
		drop:         func(name string) string { return fmt.Sprintf("DROP DATABASE IF EXISTS `%s`", name) },
	}
	sqlserverDialect = &dialect{
		name:         "sqlserver",
		env:          SQLServerDSNEnv,
		driver:       dbopen.SQLServer,
		open:         openSQLServer,
		withDatabase: sqlserverWithDatabase,
		create:       func(name string) string { return fmt.Sprintf("CREATE DATABASE [%s]", name) },
		// SQL Server drops a database only when no session uses it, so
		// they are ended first.
		drop: func(name string) string {
			return fmt.Sprintf("IF DB_ID(N'%s') IS NOT NULL BEGIN "+
				"ALTER DATABASE [%s] SET SINGLE_USER WITH ROLLBACK IMMEDIATE; DROP DATABASE [%s]; END", name, name, name)
		},
	}

	// dialects are the server dialects by name. SQLite has none: its
	// targets use plain files.
	dialects = map[string]*dialect{
		postgresDialect.name:  postgresDialect,
		mysqlDialect.name:     mysqlDialect,
		sqlserverDialect.name: sqlserverDialect,
	}
)

// dialectOf returns the server dialect of that name, or nil for SQLite
// and for a name testdb does not know.
func dialectOf(name string) *dialect { return dialects[name] }

// openSQLServer is sqlserverDialect's open: go-mssqldb does not give up
// connecting when the context ends, so every read and write of the pool's
// connections is bounded by ioTimeout instead, unless it is zero or the
// DSN sets its own "connection timeout".
func openSQLServer(dsn string, ioTimeout time.Duration) (*sql.DB, error) {
	cfg, err := msdsn.Parse(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.ConnTimeout == 0 {
		cfg.ConnTimeout = ioTimeout
	}
	return sql.OpenDB(mssql.NewConnectorConfig(cfg)), nil
}

// withDatabase returns dsn, a DSN for the driver of the dialect named, with its database
// replaced by name, which must be a plain identifier (validName). Every
// other setting, the password included, is kept as it is.
//
// For MySQL the result also has parseTime=true and loc=UTC, as the
// private MariaDB target's DSNs have.
func withDatabase(dialectName, dsn, name string) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("database name %q must match %s", name, validName)
	}
	d := dialectOf(dialectName)
	if d == nil {
		return "", fmt.Errorf("no external server for dialect %q", dialectName)
	}
	return d.withDatabase(dsn, name)
}

// sqlserverWithDatabase is sqlserverDialect's withDatabase, for the URL
// (sqlserver://…) and ADO (key=value;…) forms.
func sqlserverWithDatabase(dsn, name string) (string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlserver://"):
		return sqlserverURLWithDatabase(dsn, name)
	case strings.HasPrefix(dsn, "odbc:"):
		return "", errors.New("the ODBC form (odbc:…) is not supported; use sqlserver://user:password@host:port?database=db or the ADO form server=host;user id=user;password=…")
	default:
		return sqlserverADOWithDatabase(dsn, name), nil
	}
}
