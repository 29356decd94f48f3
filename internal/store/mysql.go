package store

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/wake"
)

// mysqlFacts are the facts of MySQL and MariaDB. MariaDB detects
// failovers (incarnation.go); on MySQL the expression fails and the store
// runs without (ProbeFailover).
var mysqlFacts = facts{
	name:             MySQL,
	now:              mysqlNow,
	quote:            quoteBacktick,
	incarnationExpr:  mariadbIncarnation,
	acquire:          acquireLockThenUpdate,
	renewReturnsRows: false,
	lockRows:         lockClause{suffix: " FOR UPDATE"},
	firstRows:        limitTail,
	// Names compare byte for byte, as on the other databases.
	types:       columnTypes{name: "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin", bigint: "BIGINT", integer: "INT", text: "TEXT"},
	tableSuffix: " ENGINE=InnoDB",
	wakes:       wake.None,
}

// mysqlNow: UTC_TIMESTAMP(6) is constant within a statement and
// independent of the session time zone.
const mysqlNow = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"

// mariadbIncarnation is the MariaDB server answering: its server_id, which
// every promotion changes, or "galera" on any node of a Galera cluster.
const mariadbIncarnation = "IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR))"

// mysqlDialect is MySQL and MariaDB (gorm.io/driver/mysql); a Galera node
// gets galeraDialect at start-up.
func mysqlDialect() *dialect {
	s := mysqlSchema{facts: mysqlFacts}
	d := newDialect(mysqlFacts, mysqlDB{}, s)
	d.cluster = &galeraProbe
	return d
}

// mysqlDB is the runtime type of MySQL and MariaDB.
type mysqlDB struct {
	inLists
	plainSteps
}

var _ database = mysqlDB{}

// returning hands back one column of the row an UPDATE changes as the
// statement's last insert id (col = LAST_INSERT_ID(col)), which the server
// sends with the affected-row count.
func (mysqlDB) returning(cols ...string) (afterSet, afterWhere string) {
	if len(cols) != 1 {
		panic("leasehold: MySQL hands back one column of an UPDATE, as its last insert id")
	}
	return ", " + cols[0] + " = LAST_INSERT_ID(" + cols[0] + ")", ""
}

// sqlEnsureRows: not INSERT IGNORE, which would also turn real errors into
// warnings.
func (mysqlDB) sqlEnsureRows(t Tables, names []string) stmt {
	return stmt{"INSERT INTO " + quoteBacktick(t.Leases) + " (name, expires_at_us) VALUES " + valuesNow(mysqlNow, len(names)) +
		" ON DUPLICATE KEY UPDATE expires_at_us = IF(holder = '', " + mysqlNow + ", expires_at_us)", namesArgs(names)}
}

func (mysqlDB) lockForShare(string) (hint, suffix string) { return "", " LOCK IN SHARE MODE" }

func (mysqlDB) insertOnceConcurrent(into, values, _, key, _ string) string {
	return onDuplicateKeyNothing(into+"VALUES ("+values+")", key)
}

// onDuplicateKeyNothing makes ins do nothing when a row with its key
// exists.
func onDuplicateKeyNothing(ins, key string) string {
	return ins + " ON DUPLICATE KEY UPDATE " + key + " = " + key
}

// mysqlSchema is the schema of MySQL and MariaDB: DDL commits implicitly,
// and ADD COLUMN cannot say "if not exists".
type mysqlSchema struct {
	facts
	inPlaceColumns
	sqlStrings
}

var _ schemaType = mysqlSchema{}

func (mysqlSchema) createTableIf(string) string { return createTableIfNotExists }

func (m mysqlSchema) addColumn(table string, c column) string {
	return alterAdd(m.facts, table, "ADD COLUMN ", []column{c})
}

func (m mysqlSchema) addColumns(table string, cols []column) []string {
	return []string{alterAdd(m.facts, table, "ADD COLUMN ", cols)}
}

func (mysqlSchema) hasColumn(table, col string) string {
	return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '" +
		table + "' AND column_name = '" + col + "'"
}

func (m mysqlSchema) hasDataColumnAsReleased(table string) string { return m.hasColumn(table, "data") }

// addDataColumn: a nullable MEDIUMTEXT (TEXT takes no default before
// MySQL 8.0.13); reads use COALESCE.
func (m mysqlSchema) addDataColumn(table string) string {
	return "ALTER TABLE " + m.quote(table) + " ADD COLUMN data MEDIUMTEXT NULL"
}

// unlessCounted: a prepared statement that is either s or DO 0, chosen
// through a session variable.
func (mysqlSchema) unlessCounted(check, s string) []string {
	return []string{
		"SET @leasehold_ddl = IF((" + check + ") = 0, " + quoteLiteral(s) + ", 'DO 0')",
		"PREPARE leasehold_ddl FROM @leasehold_ddl",
		"EXECUTE leasehold_ddl",
		"DEALLOCATE PREPARE leasehold_ddl",
	}
}

func (mysqlSchema) insertOnce(ins, _, key, _ string) string { return onDuplicateKeyNothing(ins, key) }

// concat is CONCAT: || is a logical OR on MySQL.
func (mysqlSchema) concat(parts ...string) string { return "CONCAT(" + strings.Join(parts, ", ") + ")" }

func (mysqlSchema) lastSlash(col string) string {
	return "(LENGTH(" + col + ") - LOCATE('/', REVERSE(" + col + ")) + 1)"
}

// renameUnlessTaken: IGNORE skips the rows whose new name is taken (MySQL
// cannot read the table it updates in a subquery).
func (mysqlSchema) renameUnlessTaken(q string, newName, where func(col string) string) string {
	return "UPDATE IGNORE " + q + " SET name = " + newName("name") + " WHERE " + where("name")
}

// insertUnlessTaken: IGNORE skips names taken already.
func (mysqlSchema) insertUnlessTaken(ins, _, _ string) string {
	return strings.Replace(ins, "INSERT INTO", "INSERT IGNORE INTO", 1)
}

// migrationLock is a named lock (GET_LOCK), held by a connection.
func (mysqlSchema) migrationLock(Tables, time.Duration) lockSQL {
	return lockSQL{acquire: "SELECT GET_LOCK(?, ?)", release: "SELECT RELEASE_LOCK(?)"}
}

// withMigrationLock holds a named lock on one pinned connection (DDL
// commits implicitly), released explicitly or by the server when the
// connection dies; a step of data changes runs in a transaction begun and
// ended by statements there.
func (m mysqlSchema) withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error {
	lock := m.migrationLock(t, timeout)
	return pinned(db, func(conn *gorm.DB) error {
		var dbName sql.NullString
		if err := scanRow(conn, stmt{q: "SELECT DATABASE()"}, &dbName); err != nil {
			return err
		}
		name := m.lockName(t, dbName.String)
		var got sql.NullInt64
		secs := max(int64(timeout/time.Second), 1)
		if err := scanRow(conn, stmt{lock.acquire, []any{name, secs}}, &got); err != nil {
			return fmt.Errorf("%w: %w", ErrMigrationLock, err)
		}
		if !got.Valid || got.Int64 != 1 {
			return fmt.Errorf("%w: GET_LOCK(%q) timed out after %v", ErrMigrationLock, name, timeout)
		}
		defer conn.Exec(lock.release, name)
		return apply(conn, func(fn func() error) error {
			if err := conn.Exec("START TRANSACTION").Error; err != nil {
				return err
			}
			if err := fn(); err != nil {
				conn.Exec("ROLLBACK")
				return err
			}
			return conn.Exec("COMMIT").Error
		})
	})
}

// lockName is a GET_LOCK name (at most 64 characters) scoped to the
// database, since MySQL's named locks are server-wide.
func (mysqlSchema) lockName(t Tables, database string) string {
	name := migrationLockKey(t) + "@" + database
	if len(name) > 64 {
		name = fmt.Sprintf("leasehold:migrate:%x", advisoryKey(name))
	}
	return name
}

// lostRace: a deadlock, or on Galera a failed certification (both
// ER_LOCK_DEADLOCK, 1213), or a brute-force abort found at the
// transaction's end (ErrRolledBackUnderneath).
func (mysqlDB) lostRace(err error) bool {
	if errors.Is(err, ErrRolledBackUnderneath) {
		return true
	}
	n, ok := MySQLErrorNumber(err)
	return ok && n == 1213
}

// MySQLLostRace is lostRace on MySQL and MariaDB, for tests/store.
func MySQLLostRace(err error) bool { return mysqlDB{}.lostRace(err) }

// MySQLDriverPackage and MySQLErrorType name the MySQL driver's error
// type, whose Number MySQLErrorNumber reads without linking the driver
// (TestMySQLErrorNumberReadsTheDriversType holds them to the driver's).
const (
	MySQLDriverPackage = "github.com/go-sql-driver/mysql"
	MySQLErrorType     = "MySQLError"
)

// MySQLErrorNumber returns the server's error number of the first MySQL
// driver error in err's chain, searched as errors.As does, and whether
// there was one.
func MySQLErrorNumber(err error) (uint16, bool) {
	for err != nil {
		if n, ok := mysqlNumberOf(err); ok {
			return n, true
		}
		switch u := err.(type) { //nolint:errorlint // it follows the wrapping itself
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if n, ok := MySQLErrorNumber(e); ok {
					return n, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// mysqlNumberOf returns err's Number if err is the driver's *MySQLError.
func mysqlNumberOf(err error) (uint16, bool) {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0, false
	}
	e := v.Elem()
	if t := e.Type(); t.Kind() != reflect.Struct || t.Name() != MySQLErrorType || t.PkgPath() != MySQLDriverPackage {
		return 0, false
	}
	f := e.FieldByName("Number")
	if !f.IsValid() || f.Kind() != reflect.Uint16 {
		return 0, false
	}
	return uint16(f.Uint()), true
}
