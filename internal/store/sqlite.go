package store

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/wake"
)

// sqliteFacts are SQLite's facts (gorm.io/driver/sqlite, over the cgo or
// the pure-Go driver): one writer at a time, no failover detection.
var sqliteFacts = facts{
	name:             SQLite,
	now:              sqliteNow,
	quote:            quoteDouble,
	acquire:          acquireReturning,
	serialWriters:    true,
	renewReturnsRows: true,
	// The write lock (sqlWriteLock) excludes every other writer.
	lockRows:       lockClause{},
	firstRows:      limitTail,
	types:          columnTypes{name: "TEXT", bigint: "INTEGER", integer: "INTEGER", text: "TEXT"},
	rebuildsTables: true,
	wakes:          wake.Sockets,
	databaseFile:   "SELECT file FROM pragma_database_list WHERE name = 'main'",
	busyTimeout:    "PRAGMA busy_timeout",
}

// sqliteNow: julianday('now'), constant within one statement, to the
// millisecond.
const sqliteNow = "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)"

// sqliteDialect is SQLite.
func sqliteDialect() *dialect {
	s := sqliteSchema{facts: sqliteFacts}
	return newDialect(sqliteFacts, sqliteDB{}, s)
}

// sqliteDB is SQLite's runtime type. The processes that share its file
// wake each other through sockets next to it (wake.go).
type sqliteDB struct {
	returningClause
	onConflict
	inLists
	plainSteps
}

var _ database = sqliteDB{}

func (s sqliteDB) sqlEnsureRows(t Tables, names []string) stmt {
	q := quoteDouble(t.Leases)
	return stmt{"INSERT INTO " + q + " (name, expires_at_us) VALUES " + valuesNow(sqliteNow, len(names)) + s.touchUnheld(q, sqliteNow),
		namesArgs(names)}
}

// lockForShare is empty: writers exclude each other already (sqlFence).
func (sqliteDB) lockForShare(string) (hint, suffix string) { return "", "" }

// sqlFenceWrite takes the write lock before the fencing read, so that the
// caller's transaction, deferred or not, writes on the snapshot it read:
// a deferred transaction that reads first and then writes after another
// connection's commit fails at once with SQLITE_BUSY, busy timeout or not.
func (sqliteDB) sqlFenceWrite(t Tables, _ string) stmt { return sqliteWriteLock(t) }

// sqlFenceGenerationWrite takes the write lock as sqlFenceWrite does.
func (sqliteDB) sqlFenceGenerationWrite(t Tables, _ string) stmt { return sqliteWriteLock(t) }

// sqliteWriteLock is a write that changes nothing; it waits for the write
// lock under the busy timeout and holds it until the transaction ends.
func sqliteWriteLock(t Tables) stmt {
	return stmt{q: "UPDATE " + quoteDouble(t.Leases) + " SET epoch = epoch WHERE 1 = 0"}
}

// sqliteSchema is SQLite's schema: ADD COLUMN cannot say "if not exists",
// so the migrations guard it with hasColumn and DDLFrom rebuilds tables.
type sqliteSchema struct {
	facts
	keyLockName
	guardedDDL
	onConflictDDL
	sqlStrings
	notExistsRename
}

var _ schemaType = sqliteSchema{}

func (sqliteSchema) createTableIf(string) string { return createTableIfNotExists }

func (s sqliteSchema) addColumn(table string, c column) string {
	return alterAdd(s.facts, table, "ADD COLUMN ", []column{c})
}

// addColumns adds one column a statement: SQLite's ALTER TABLE adds one.
func (s sqliteSchema) addColumns(table string, cols []column) []string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = s.addColumn(table, c)
	}
	return parts
}

func (sqliteSchema) hasColumn(table, col string) string {
	return "SELECT COUNT(*) FROM pragma_table_info('" + table + "') WHERE name = '" + col + "'"
}

func (s sqliteSchema) addDataColumn(table string) string {
	return "ALTER TABLE " + s.quote(table) + " ADD COLUMN data TEXT NOT NULL DEFAULT ''"
}

func (sqliteSchema) concat(parts ...string) string { return strings.Join(parts, " || ") }

// lastSlash: no REVERSE; trimming all but '/' from the right leaves the
// name up to its last '/'.
func (sqliteSchema) lastSlash(col string) string {
	return "LENGTH(RTRIM(" + col + ", REPLACE(" + col + ", '/', '')))"
}

// migrationLock is the database's write lock, taken by BEGIN IMMEDIATE.
func (sqliteSchema) migrationLock(Tables, time.Duration) lockSQL {
	return lockSQL{acquire: "BEGIN IMMEDIATE", release: "COMMIT"}
}

// withMigrationLock: BEGIN IMMEDIATE takes the write lock up front,
// whatever _txlock the DSN sets; the run is one transaction.
func (s sqliteSchema) withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error {
	lock := s.migrationLock(t, timeout)
	return pinned(db, func(conn *gorm.DB) error {
		if err := conn.Exec(lock.acquire).Error; err != nil {
			return fmt.Errorf("%w: %w", ErrMigrationLock, err)
		}
		if err := apply(conn, inRun); err != nil {
			conn.Exec("ROLLBACK")
			return err
		}
		return conn.Exec(lock.release).Error
	})
}

// rebuildTable gives table the columns want, copying its rows, when it has
// the columns before or already all of want; a missing table is created as
// before first. Run it inside one transaction.
func (s sqliteSchema) rebuildTable(table, pk string, before, want []column) []string {
	q, tmp := s.quote(table), table+"_rebuild"
	names := make([]string, len(want))
	for i, c := range want {
		names[i] = c.name
	}
	var defaults []string
	for _, c := range want[len(before):] {
		defaults = append(defaults, c.def+" AS "+c.name)
	}
	cols := strings.Join(names, ", ")
	return []string{
		createTable(s.facts, s, table, pk, before),
		"DROP TABLE IF EXISTS " + s.quote(tmp),
		createTable(s.facts, s, tmp, pk, want),
		"INSERT INTO " + s.quote(tmp) + " (" + cols + ") SELECT " + cols + " FROM " + q +
			" NATURAL LEFT JOIN (SELECT " + strings.Join(defaults, ", ") + ") AS added",
		"DROP TABLE " + q,
		"ALTER TABLE " + s.quote(tmp) + " RENAME TO " + q,
	}
}
