package store

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// schemaDDL is how one database creates and alters the coordination
// tables, so that every statement may be applied twice.
type schemaDDL interface {
	// createTableIf starts a CREATE TABLE of table that does nothing when
	// the table exists, up to the table's quoted name.
	createTableIf(table string) string
	// addColumn adds a NOT NULL column with a default, idempotently where
	// the statement can say so (PostgreSQL, SQL Server; elsewhere the step
	// is guarded by hasColumn or runs in one transaction).
	addColumn(table string, c column) string
	// addColumns adds NOT NULL columns with defaults, in one statement
	// where ALTER TABLE takes several (one each on SQLite).
	addColumns(table string, cols []column) []string
	// hasColumn counts a column where ADD COLUMN cannot say "if not
	// exists" (MySQL, SQLite); "" elsewhere.
	hasColumn(table, col string) string
	// hasDataColumnAsReleased is the guard of schema version 2 as it was
	// released (MySQL's only).
	hasDataColumnAsReleased(table string) string
	// addDataColumn adds the text column of pool rows.
	addDataColumn(table string) string
	// unlessCounted returns statements, for one connection, that run s
	// only when the query check counts nothing (MySQL); s elsewhere.
	unlessCounted(check, s string) []string
	// insertOnce makes ins, an INSERT of one row into the table q
	// (quoted), do nothing when a row with key = value exists.
	insertOnce(ins, q, key, value string) string
}

// schemaType is a database's schema type, in all its roles.
type schemaType interface {
	schemaDDL
	rowRewriter
	tableRebuilder
	migrationLocker
}

// tableRebuilder rebuilds tables where rebuildsTables (SQLite).
type tableRebuilder interface {
	// rebuildTable gives table the columns want, copying its rows, when it
	// has the columns before (a prefix of want) or already all of want;
	// nil where ALTER TABLE adds columns.
	rebuildTable(table, pk string, before, want []column) []string
}

// inPlaceColumns is rebuildTable where ALTER TABLE adds the columns.
type inPlaceColumns struct{}

func (inPlaceColumns) rebuildTable(string, string, []column, []column) []string { return nil }

// rowRewriter is what the step that renames rows (schema version 3) asks
// one database for.
type rowRewriter interface {
	// concat joins string expressions.
	concat(parts ...string) string
	// length is the length of a string expression (names are ASCII).
	length(s string) string
	// substr is the substring of s from 1-based position from, n long.
	substr(s, from, n string) string
	// lastSlash is the 1-based position of the last '/' in col, which must
	// contain one.
	lastSlash(col string) string
	// renameUnlessTaken is an UPDATE of the lease table q (quoted) that
	// sets name to newName(col) on the rows where(col) matches, but those
	// whose new name is taken; col is the statement's name column.
	renameUnlessTaken(q string, newName, where func(col string) string) string
	// insertUnlessTaken makes ins, "INSERT INTO q (...) SELECT ... WHERE
	// ...", skip the rows whose name (an SQL expression) is taken.
	insertUnlessTaken(ins, q, name string) string
}

// migrationLocker is how one database serialises concurrent migrations of
// one schema.
type migrationLocker interface {
	// migrationLock returns the lock statements for one schema.
	migrationLock(t Tables, timeout time.Duration) lockSQL
	// withMigrationLock runs apply with the migration lock of t held, on
	// the handle of every migration statement.
	withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error
	// lockName is the lock's '?' name, in the database named database.
	lockName(t Tables, database string) string
}

// keyLockName is lockName where the key names the lock.
type keyLockName struct{}

func (keyLockName) lockName(t Tables, _ string) string { return migrationLockKey(t) }

// column describes one column of a table in the schema.
type column struct {
	name string
	typ  func(columnTypes) string
	def  string // default value literal, "" for none
}

func nameCol(t columnTypes) string   { return t.name }
func bigintCol(t columnTypes) string { return t.bigint }
func intCol(t columnTypes) string    { return t.integer }

// textCol is the type of the data column where it takes a default (not
// MySQL's, see addDataColumn).
func textCol(t columnTypes) string { return t.text }

// columnDef declares the NOT NULL column c, with its default, in the
// column types t.
func columnDef(t columnTypes, c column) string {
	def := ""
	if c.def != "" {
		def = " DEFAULT " + c.def
	}
	return c.name + " " + c.typ(t) + " NOT NULL" + def
}

// createTable renders an idempotent CREATE TABLE for the database of the
// facts f and the DDL ddl.
func createTable(f facts, ddl schemaDDL, table string, pk string, cols []column) string {
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = columnDef(f.types, c)
	}
	return ddl.createTableIf(table) + f.quote(table) + " (" + strings.Join(defs, ", ") + ", PRIMARY KEY (" + pk + "))" +
		f.tableSuffix
}

// createTableIfNotExists is createTableIf but on SQL Server.
const createTableIfNotExists = "CREATE TABLE IF NOT EXISTS "

// alterAdd adds cols to a table in one ALTER TABLE, each clause starting
// with add ("ADD COLUMN ").
func alterAdd(f facts, table, add string, cols []column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = add + columnDef(f.types, c)
	}
	return "ALTER TABLE " + f.quote(table) + " " + strings.Join(parts, ", ")
}

// schemaSQL builds the statements of the schema.
type schemaSQL struct{ *dialect }

// createTable renders an idempotent CREATE TABLE.
func (d schemaSQL) createTable(table, pk string, cols []column) string {
	return createTable(d.facts, d.ddl, table, pk, cols)
}

// createMigrationsTable is the DDL of the version table.
func (d schemaSQL) createMigrationsTable(t Tables) string {
	return d.createTable(t.Migrations, "version", []column{
		{name: "version", typ: intCol},
		{name: "description", typ: nameCol, def: "''"},
		{name: "applied_at_us", typ: bigintCol, def: "0"},
	})
}

// sqlRecordVersion records an applied step. Arguments: description.
func (d schemaSQL) sqlRecordVersion(t Tables, version int) string {
	return "INSERT INTO " + d.quote(t.Migrations) + " (version, description, applied_at_us) VALUES (" +
		strconv.Itoa(version) + ", ?, " + d.now + ")"
}

// sqlCurrentVersion reads the highest applied step.
func (d schemaSQL) sqlCurrentVersion(t Tables) string {
	return "SELECT COALESCE(MAX(version), 0) FROM " + d.quote(t.Migrations)
}

// recordVersionOnce records an applied step unless its row exists;
// description is an SQL literal.
func (d schemaSQL) recordVersionOnce(t Tables, version int, description string) string {
	q := d.quote(t.Migrations)
	v := strconv.Itoa(version)
	return d.ddl.insertOnce("INSERT INTO "+q+" (version, description, applied_at_us) VALUES ("+v+", "+description+", "+d.now+")",
		q, "version", v)
}

// lockSQL holds the statements that serialise migrations on one database.
type lockSQL struct {
	setup string // runs first, in the migration's transaction (PostgreSQL)
	// acquire takes the lock; on MySQL and SQL Server it returns a status
	// row, and '?' is the lock name, then the timeout in seconds (MySQL).
	acquire string
	release string // "" where the transaction's end frees it
}

// migrationApply applies the migration steps on tx, with the migration
// lock held; a step that must be atomic with the record of its version
// runs through stepTx.
type migrationApply func(tx *gorm.DB, stepTx func(func() error) error) error

// inRun is the stepTx of a migration run that is one transaction.
func inRun(fn func() error) error { return fn() }

// migrationLockSQL lists the lock statements, for the golden files.
func migrationLockSQL(d *dialect, t Tables, timeout time.Duration) []string {
	l := d.lock.migrationLock(t, timeout)
	var out []string
	for _, s := range []string{l.setup, l.acquire, l.release} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// migrationLockKey names the lock of one schema's migrations.
func migrationLockKey(t Tables) string { return "leasehold:migrate:" + t.Prefix }

// advisoryKey maps the lock name to PostgreSQL's 64-bit advisory lock key.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}
