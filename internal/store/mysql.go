package store

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// mysqlDB is MySQL and MariaDB (gorm.io/driver/mysql). It has no UPDATE ...
// RETURNING, detects no failovers (incarnation.go), and its followers
// poll.
type mysqlDB struct {
	inLists
	sqlStrings
}

var _ database = mysqlDB{}

func (mysqlDB) name() string { return MySQL }

// now: UTC_TIMESTAMP(6) is constant within a statement and independent of
// the session time zone; TIMESTAMPDIFF between two DATETIMEs does no
// time-zone conversion either.
func (mysqlDB) now() string {
	return "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
}

func (mysqlDB) quote(ident string) string { return quoteBacktick(ident) }

func (mysqlDB) incarnationExpr() string { return "" }

func (mysqlDB) acquire() acquireMode { return acquireLockThenUpdate }

func (mysqlDB) serialWriters() bool { return false }

// returning hands back one column of the row an UPDATE changes as the
// statement's last insert id: MariaDB and MySQL have no UPDATE ...
// RETURNING. col = LAST_INSERT_ID(col) leaves the column as it is and
// makes its value the statement's last insert id, which the server sends
// back with the affected-row count (renewReturnsRows). The acquire, which
// needs two columns, locks the rows and then updates them instead
// (acquireLockThenUpdate).
func (mysqlDB) returning(cols ...string) (afterSet, afterWhere string) {
	if len(cols) != 1 {
		panic("leasehold: MySQL hands back one column of an UPDATE, as its last insert id")
	}
	return ", " + cols[0] + " = LAST_INSERT_ID(" + cols[0] + ")", ""
}

func (mysqlDB) renewReturnsRows() bool { return false }

// sqlEnsureRows: not INSERT IGNORE, which would also turn real errors into
// warnings.
func (m mysqlDB) sqlEnsureRows(t Tables, names []string) stmt {
	return stmt{"INSERT INTO " + m.quote(t.Leases) + " (name, expires_at_us) VALUES " + valuesNow(m.now(), len(names)) +
		" ON DUPLICATE KEY UPDATE expires_at_us = IF(holder = '', " + m.now() + ", expires_at_us)", namesArgs(names)}
}

func (mysqlDB) lockForUpdate() (hint, suffix string) { return "", " FOR UPDATE" }

func (mysqlDB) lockForShare(string) (hint, suffix string) { return "", " LOCK IN SHARE MODE" }

func (m mysqlDB) insertOnceConcurrent(into, values, q, key, value string) string {
	return m.insertOnce(into+"VALUES ("+values+")", q, key, value)
}

// nameType: binary ASCII collation, so that names and holders compare byte
// for byte, as on the other databases (MySQL's default collation ignores
// case).
func (mysqlDB) nameType() string          { return "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin" }
func (mysqlDB) bigintType() string        { return "BIGINT" }
func (mysqlDB) intType() string           { return "INT" }
func (mysqlDB) textType() string          { return "TEXT" }
func (mysqlDB) createTableSuffix() string { return " ENGINE=InnoDB" }

// The schema: DDL commits implicitly, and ADD COLUMN cannot say "if not
// exists".

func (mysqlDB) createTableIf(string) string { return createTableIfNotExists }

func (m mysqlDB) addColumn(table string, c column) string {
	return alterAdd(m, table, "ADD COLUMN ", []column{c})
}

func (m mysqlDB) addColumns(table string, cols []column) []string {
	return []string{alterAdd(m, table, "ADD COLUMN ", cols)}
}

func (mysqlDB) hasColumn(table, col string) string {
	return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '" +
		table + "' AND column_name = '" + col + "'"
}

func (m mysqlDB) hasDataColumnAsReleased(table string) string { return m.hasColumn(table, "data") }

// addDataColumn: a nullable MEDIUMTEXT, since TEXT columns take no default
// before MySQL 8.0.13; reads use COALESCE.
func (m mysqlDB) addDataColumn(table string) string {
	return "ALTER TABLE " + m.quote(table) + " ADD COLUMN data MEDIUMTEXT NULL"
}

// concat is CONCAT: || is a logical OR on MySQL.
func (mysqlDB) concat(parts ...string) string { return "CONCAT(" + strings.Join(parts, ", ") + ")" }

func (mysqlDB) lastSlash(col string) string {
	return "(LENGTH(" + col + ") - LOCATE('/', REVERSE(" + col + ")) + 1)"
}

// renameUnlessTaken: MySQL cannot read the table it updates in a
// subquery. IGNORE skips the rows whose new name is taken; it can hide
// nothing else here, since the new name has the old one's length and no
// other column changes.
func (mysqlDB) renameUnlessTaken(q string, newName, where func(col string) string) string {
	return "UPDATE IGNORE " + q + " SET name = " + newName("name") + " WHERE " + where("name")
}

// insertUnlessTaken: IGNORE skips names taken already (see
// renameUnlessTaken).
func (mysqlDB) insertUnlessTaken(ins, _, _ string) string {
	return strings.Replace(ins, "INSERT INTO", "INSERT IGNORE INTO", 1)
}

func (mysqlDB) insertOnce(ins, _, key, _ string) string {
	return ins + " ON DUPLICATE KEY UPDATE " + key + " = " + key
}

// unlessCounted: MySQL cannot say "if not exists" in ALTER TABLE ... ADD
// COLUMN, so a prepared statement is either s or DO 0. The statements must
// run on one connection (a session variable carries the choice).
func (mysqlDB) unlessCounted(check, s string) []string {
	return []string{
		"SET @leasehold_ddl = IF((" + check + ") = 0, " + quoteLiteral(s) + ", 'DO 0')",
		"PREPARE leasehold_ddl FROM @leasehold_ddl",
		"EXECUTE leasehold_ddl",
		"DEALLOCATE PREPARE leasehold_ddl",
	}
}

func (mysqlDB) scriptBatchEnd() string { return "" }

// migrationLock is a named lock (GET_LOCK), held by a connection.
func (mysqlDB) migrationLock(Tables, time.Duration) lockSQL {
	return lockSQL{acquire: "SELECT GET_LOCK(?, ?)", release: "SELECT RELEASE_LOCK(?)"}
}

// withMigrationLock: DDL commits implicitly on MySQL, so a transaction
// cannot hold the lock: a named lock on one pinned connection does. It is
// released explicitly, and by the server if the connection dies. A step of
// data changes runs in a transaction begun and ended by statements on that
// connection: gorm would take the pinned connection for a transaction
// already and only set a savepoint.
func (m mysqlDB) withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error {
	lock := m.migrationLock(t, timeout)
	return pinned(db, func(conn *gorm.DB) error {
		var dbName sql.NullString
		if err := scanRow(conn, stmt{q: "SELECT DATABASE()"}, &dbName); err != nil {
			return err
		}
		name := mysqlLockName(dbName.String, migrationLockKey(t))
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

// mysqlLockName builds a GET_LOCK name (at most 64 characters) scoped to
// the database, since MySQL's named locks are server-wide.
func mysqlLockName(database, key string) string {
	name := key + "@" + database
	if len(name) > 64 {
		name = fmt.Sprintf("leasehold:migrate:%x", advisoryKey(name))
	}
	return name
}
