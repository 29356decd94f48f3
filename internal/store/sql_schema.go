package store

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// The DDL of the schema, the statements of the version table and the
// migration lock, as every database shares them. schema.go lists the
// migration steps.

// column describes one column of a table in the schema.
type column struct {
	name string
	typ  func(database) string
	def  string // default value literal, "" for none
}

func nameCol(db database) string   { return db.nameType() }
func bigintCol(db database) string { return db.bigintType() }
func intCol(db database) string    { return db.intType() }

// textCol is the type of the data column where it takes a default: not on
// MySQL, whose TEXT columns took none before 8.0.13 (see addDataColumn).
func textCol(db database) string { return db.textType() }

// columnDef declares the NOT NULL column c, with its default.
func columnDef(db database, c column) string {
	def := ""
	if c.def != "" {
		def = " DEFAULT " + c.def
	}
	return c.name + " " + c.typ(db) + " NOT NULL" + def
}

// createTable renders an idempotent CREATE TABLE for the database.
func createTable(db database, table string, pk string, cols []column) string {
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = columnDef(db, c)
	}
	return db.createTableIf(table) + db.quote(table) + " (" + strings.Join(defs, ", ") + ", PRIMARY KEY (" + pk + "))" +
		db.createTableSuffix()
}

// createTableIfNotExists starts a CREATE TABLE that does nothing when the
// table exists, on every database but SQL Server.
const createTableIfNotExists = "CREATE TABLE IF NOT EXISTS "

// alterAdd adds the columns cols to a table in one ALTER TABLE, each
// clause starting with add ("ADD COLUMN ").
func alterAdd(db database, table, add string, cols []column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = add + columnDef(db, c)
	}
	return "ALTER TABLE " + db.quote(table) + " " + strings.Join(parts, ", ")
}

// createMigrationsTable is the DDL of the version table.
func (d *dialect) createMigrationsTable(t Tables) string {
	return createTable(d, t.Migrations, "version", []column{
		{name: "version", typ: intCol},
		{name: "description", typ: nameCol, def: "''"},
		{name: "applied_at_us", typ: bigintCol, def: "0"},
	})
}

// sqlRecordVersion records an applied step. Arguments: description.
func (d *dialect) sqlRecordVersion(t Tables, version int) string {
	return "INSERT INTO " + d.quote(t.Migrations) + " (version, description, applied_at_us) VALUES (" +
		strconv.Itoa(version) + ", ?, " + d.now() + ")"
}

// sqlCurrentVersion reads the highest applied step.
func (d *dialect) sqlCurrentVersion(t Tables) string {
	return "SELECT COALESCE(MAX(version), 0) FROM " + d.quote(t.Migrations)
}

// recordVersionOnce records an applied step unless its row exists, for
// DDL that may be applied twice. description is an SQL literal.
func (d *dialect) recordVersionOnce(t Tables, version int, description string) string {
	q := d.quote(t.Migrations)
	v := strconv.Itoa(version)
	return d.insertOnce("INSERT INTO "+q+" (version, description, applied_at_us) VALUES ("+v+", "+description+", "+d.now()+")",
		q, "version", v)
}

// ----------------------------------------------------------------------
// Migration lock

// lockSQL holds the statements that serialise migrations on one dialect.
type lockSQL struct {
	// setup runs first, inside the migration transaction (PostgreSQL).
	setup string
	// acquire takes the lock; for MySQL and SQL Server it returns a status
	// row. '?' is the lock name (MySQL, SQL Server) and then the timeout in
	// seconds (MySQL).
	acquire string
	// release frees the lock; empty where the transaction end frees it.
	release string
}

// migrationApply applies the migration steps on tx, with the migration
// lock held. It runs a step that must be atomic with the record of its
// version through stepTx.
type migrationApply func(tx *gorm.DB, stepTx func(func() error) error) error

// inRun is the stepTx of a migration run that is one transaction as a
// whole: the step runs in it.
func inRun(fn func() error) error { return fn() }

// migrationLockSQL lists the lock statements, for the golden files.
func migrationLockSQL(d *dialect, t Tables, timeout time.Duration) []string {
	l := d.migrationLock(t, timeout)
	var out []string
	for _, s := range []string{l.setup, l.acquire, l.release} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// migrationLockKey derives the name of the lock that serialises concurrent
// migrations of one schema (one prefix in one database).
func migrationLockKey(t Tables) string { return "leasehold:migrate:" + t.Prefix }

// advisoryKey maps the lock name to PostgreSQL's 64-bit advisory lock key.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}
