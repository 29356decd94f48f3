package store

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// How the supported databases differ
//
// The database interface below lists every way in which the supported
// databases differ, and each database implements it in a file of its own:
// postgres.go, mysql.go (MySQL and MariaDB), sqlite.go and sqlserver.go.
// Every statement the library sends is built from one template per
// operation, shared by every database (sql_sessions.go, sql_leases.go,
// incarnation.go), which asks the database for the fragments that differ:
//
//   - the database clock, read as microseconds since the Unix epoch;
//   - how an insert-if-absent tolerates a concurrent insert;
//   - how the acquire statement hands back the new epochs (RETURNING,
//     OUTPUT, or, since MariaDB has no UPDATE ... RETURNING, a locking read
//     in the acquire's own transaction);
//   - how a statement that decides from the sessions table first locks the
//     lease rows it may change (sqlLockRows), so that it decides on a
//     snapshot taken after every lock it waited for;
//   - how a fencing read locks the lease row inside the caller's
//     transaction;
//   - how concurrent migrations are serialised;
//   - whether a writing transaction excludes every other writer on the
//     whole database (SQLite), so that a fenced transaction keeps the
//     holder's renewal out until it ends;
//   - the column types of the schema, and the string functions the schema
//     migrations use.
//
// What only one database does is an interface of its own, which only that
// database implements: notifier (PostgreSQL's LISTEN/NOTIFY, wake.go) and
// fileDatabase (the wake-up sockets next to an SQLite file, wake_local.go).
//
// The Store sequences these statements and never asks which database it
// talks to, only what it can do; schema.go lists the migration steps.
//
// Integers that come from the library itself (TTLs, epochs read from the
// database) are written into the SQL as literals. Strings (names, holders,
// session ids) are always bound parameters written as '?'; gorm rewrites
// them to the dialect's placeholder ($1, @p1) on the way out.

// Dialect names as reported by gorm's Dialector.Name().
const (
	Postgres  = "postgres"
	MySQL     = "mysql"
	SQLite    = "sqlite"
	SQLServer = "sqlserver"
)

// Dialects lists the supported dialect names.
var Dialects = []string{Postgres, MySQL, SQLite, SQLServer}

// acquireMode says how the acquire statement reports the terms it started.
// Either way the acquire runs in an explicit transaction that commits only
// after the terms reached the client: a statement that waits on a row lock
// does not notice that its client gave up, and in autocommit it would run
// on and commit once the lock is freed, taking terms nobody runs. (SQLite
// makes an UPDATE ... RETURNING's changes at its first step and commits
// them when the statement ends, also when its caller stopped reading.)
type acquireMode int

const (
	// acquireReturning: one UPDATE returns (name, epoch) of every lease it
	// took (OUTPUT on SQL Server).
	acquireReturning acquireMode = iota
	// acquireLockThenUpdate: no UPDATE ... RETURNING (MariaDB, MySQL). A
	// locking read finds the leases that can be taken and their epochs,
	// and an UPDATE takes exactly those.
	acquireLockThenUpdate
)

// database is what one supported database does its own way: the values
// and the SQL fragments that the shared statement builders ask it for.
type database interface {
	// name is the dialect's name, as gorm's Dialector.Name() reports it.
	name() string
	// now is an expression for the database clock in microseconds since
	// the Unix epoch, as a 64-bit integer.
	now() string
	// quote quotes one identifier.
	quote(ident string) string
	// incarnationExpr is an expression for the current incarnation of the
	// database server, as text: it changes when a standby is promoted or
	// the database is restored, and never otherwise (incarnation.go). ""
	// where leasehold does not detect failovers.
	incarnationExpr() string
	// acquire says how an acquire reports its terms.
	acquire() acquireMode
	// serialWriters is true when a writing transaction excludes every
	// other writer on the whole database, not only on the rows it touches
	// (SQLite's single write lock), while readers still see the last
	// committed state (WAL). A fenced transaction then holds off the
	// holder's renewal statement for as long as it is open.
	serialWriters() bool

	// returning makes an UPDATE hand back the columns cols of every row
	// it changes: afterSet follows its SET clause, afterWhere its WHERE
	// clause.
	returning(cols ...string) (afterSet, afterWhere string)
	// renewReturnsRows reports whether the renewal statement returns the
	// notice as a row (everywhere but MySQL, where it is the last insert
	// id).
	renewReturnsRows() bool
	// nameIn matches the column col against the given names.
	nameIn(col string, names []string) (string, []any)
	// whereTerms is what follows the SET clause of an UPDATE of the lease
	// table q (quoted) that matches exactly the given terms of session.
	whereTerms(q, session string, terms []Term) (string, []any)
	// sqlEnsureRows creates the rows of leases that have never been used,
	// and tolerates rows that exist or that another process inserts at the
	// same moment. A row that exists unheld gets expires_at_us = now, as a
	// new one does: pruning deletes unheld rows only once that is older
	// than its grace, so it never deletes a row someone is about to
	// acquire.
	sqlEnsureRows(t Tables, names []string) stmt
	// lockForUpdate is the table hint (after the table's name) and the
	// suffix (at the end) of a read that locks the rows it reads for the
	// rest of the transaction, against every other writer (sqlLockRows).
	lockForUpdate() (hint, suffix string)
	// lockForShare is the table hint and the suffix of a read of the
	// table aliased alias that locks the rows it reads against a change
	// until the transaction ends (sqlFence).
	lockForShare(alias string) (hint, suffix string)
	// insertOnceConcurrent is an INSERT of one row (into: "INSERT INTO q
	// (columns) ", values: its values) into the table q (quoted) that does
	// nothing when a row with key = value exists, also when another
	// process inserts it at the same moment.
	insertOnceConcurrent(into, values, q, key, value string) string

	// Column types.
	nameType() string
	bigintType() string
	intType() string
	// createTableSuffix is appended after the closing parenthesis of
	// CREATE TABLE.
	createTableSuffix() string
}

// dialect is the SQL of one database: the statement builders, which every
// database shares, around the database's own values and fragments.
type dialect struct {
	database

	// incarnation is the database's incarnationExpr, or "" once
	// ProbeFailover found that the server cannot say its incarnation.
	incarnation string
}

// newDialect returns the dialect of db.
func newDialect(db database) *dialect {
	return &dialect{database: db, incarnation: db.incarnationExpr()}
}

// dialects holds the dialect of every supported database by name.
var dialects = map[string]*dialect{
	Postgres:  newDialect(postgresDB{}),
	MySQL:     newDialect(mysqlDB{}),
	SQLite:    newDialect(sqliteDB{}),
	SQLServer: newDialect(sqlserverDB{}),
}

// lookupDialect returns the dialect with the given gorm name.
func lookupDialect(name string) (*dialect, error) {
	d, ok := dialects[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (supported: %s)", ErrUnsupportedDialect, name, strings.Join(Dialects, ", "))
	}
	return d, nil
}

// lockFirst reports whether an acquire or a prune must lock its lease rows
// in a statement of its own before deciding which of them it changes.
//
// Whether a lease is held depends on a row of another table, its
// session's. PostgreSQL (READ COMMITTED), MySQL and SQL Server (under read
// committed snapshot) re-read a row a statement waited for at its newest
// version, but read the sessions table as of the statement's start. A
// statement that waited on one row's lock would then judge the next row,
// taken meanwhile by a session started after the statement began, as held
// by a session that does not exist, and take it or delete it under its
// live holder. So these databases lock every named row first, in name
// order, and decide in a second statement, under READ COMMITTED, whose
// snapshot is taken once no lock is left to wait for. SQLite lets one
// writer run at a time: its statements never wait on a row.
func (d *dialect) lockFirst() bool { return !d.serialWriters() }

// ----------------------------------------------------------------------
// Schema

// column describes one column of a table in the schema.
type column struct {
	name string
	typ  func(*dialect) string
	def  string // default value literal, "" for none
}

func nameCol(d *dialect) string   { return d.nameType() }
func bigintCol(d *dialect) string { return d.bigintType() }
func intCol(d *dialect) string    { return d.intType() }

// textCol is the type of the data column where it takes a default: not on
// MySQL, whose TEXT columns took none before 8.0.13 (see addDataColumn).
func textCol(d *dialect) string {
	if d.name() == SQLServer {
		return "NVARCHAR(MAX)"
	}
	return "TEXT"
}

// createTable renders an idempotent CREATE TABLE for the dialect.
func (d *dialect) createTable(table string, pk string, cols []column) string {
	var b strings.Builder
	if d.name() == SQLServer {
		b.WriteString("IF OBJECT_ID(N'" + table + "', N'U') IS NULL CREATE TABLE ")
	} else {
		b.WriteString("CREATE TABLE IF NOT EXISTS ")
	}
	b.WriteString(d.quote(table))
	b.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.name + " " + c.typ(d) + " NOT NULL")
		if c.def != "" {
			b.WriteString(" DEFAULT " + c.def)
		}
	}
	b.WriteString(", PRIMARY KEY (" + pk + "))")
	b.WriteString(d.createTableSuffix())
	return b.String()
}

// addColumn adds a NOT NULL column with a default to a table, idempotently
// where the database can say so in the statement (PostgreSQL, SQL Server).
// Elsewhere the step guards it with hasColumn (MySQL), or the migration
// runs in one transaction with its version record (SQLite).
func (d *dialect) addColumn(table string, c column) string {
	q := d.quote(table)
	def := ""
	if c.def != "" {
		def = " DEFAULT " + c.def
	}
	switch d.name() {
	case Postgres:
		return "ALTER TABLE " + q + " ADD COLUMN IF NOT EXISTS " + c.name + " " + c.typ(d) + " NOT NULL" + def
	case SQLServer:
		return "IF COL_LENGTH(N'" + table + "', N'" + c.name + "') IS NULL ALTER TABLE " + q + " ADD " + c.name + " " +
			c.typ(d) + " NOT NULL" + strings.Replace(def, "'", "N'", 1)
	default:
		return "ALTER TABLE " + q + " ADD COLUMN " + c.name + " " + c.typ(d) + " NOT NULL" + def
	}
}

// addColumns adds NOT NULL columns with defaults to a table, in one
// statement where the database allows several in one ALTER TABLE (so a
// MySQL step that adds them is done or not begun), one statement each on
// SQLite. On SQL Server the first column's absence guards them all: the
// migration there is one transaction.
func (d *dialect) addColumns(table string, cols []column) []string {
	q := d.quote(table)
	def := func(c column) string {
		if c.def == "" {
			return ""
		}
		return " DEFAULT " + c.def
	}
	parts := make([]string, len(cols))
	switch d.name() {
	case Postgres:
		for i, c := range cols {
			parts[i] = "ADD COLUMN IF NOT EXISTS " + c.name + " " + c.typ(d) + " NOT NULL" + def(c)
		}
		return []string{"ALTER TABLE " + q + " " + strings.Join(parts, ", ")}
	case MySQL:
		for i, c := range cols {
			parts[i] = "ADD COLUMN " + c.name + " " + c.typ(d) + " NOT NULL" + def(c)
		}
		return []string{"ALTER TABLE " + q + " " + strings.Join(parts, ", ")}
	case SQLServer:
		for i, c := range cols {
			parts[i] = c.name + " " + c.typ(d) + " NOT NULL" + strings.Replace(def(c), "'", "N'", 1)
		}
		return []string{"IF COL_LENGTH(N'" + table + "', N'" + cols[0].name + "') IS NULL ALTER TABLE " + q + " ADD " + strings.Join(parts, ", ")}
	default:
		for i, c := range cols {
			parts[i] = d.addColumn(table, c)
		}
		return parts
	}
}

// hasColumn counts a column, where ADD COLUMN cannot say "if not exists"
// (MySQL, SQLite); "" elsewhere.
func (d *dialect) hasColumn(table, col string) string {
	switch d.name() {
	case MySQL:
		return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '" +
			table + "' AND column_name = '" + col + "'"
	case SQLite:
		return "SELECT COUNT(*) FROM pragma_table_info('" + table + "') WHERE name = '" + col + "'"
	default:
		return ""
	}
}

// hasDataColumnAsReleased is the guard of schema version 2 as it was
// released: MySQL's only.
func (d *dialect) hasDataColumnAsReleased(table string) string {
	if d.name() != MySQL {
		return ""
	}
	return d.hasColumn(table, "data")
}

// addDataColumn adds the text column that pool rows use for their member
// list and member rows for their acknowledged generation. On MySQL it is a
// nullable MEDIUMTEXT (TEXT columns take no default before MySQL 8.0.13);
// reads use COALESCE.
func (d *dialect) addDataColumn(table string) string {
	q := d.quote(table)
	switch d.name() {
	case Postgres:
		return "ALTER TABLE " + q + " ADD COLUMN IF NOT EXISTS data TEXT NOT NULL DEFAULT ''"
	case MySQL:
		return "ALTER TABLE " + q + " ADD COLUMN data MEDIUMTEXT NULL"
	case SQLServer:
		return "IF COL_LENGTH(N'" + table + "', N'data') IS NULL ALTER TABLE " + q + " ADD data NVARCHAR(MAX) NOT NULL DEFAULT N''"
	default:
		return "ALTER TABLE " + q + " ADD COLUMN data TEXT NOT NULL DEFAULT ''"
	}
}

// concat joins string expressions.
func (d *dialect) concat(parts ...string) string {
	switch d.name() {
	case MySQL:
		return "CONCAT(" + strings.Join(parts, ", ") + ")"
	case SQLServer:
		return strings.Join(parts, " + ")
	default:
		return strings.Join(parts, " || ")
	}
}

// length is the length of a string expression (names are ASCII).
func (d *dialect) length(s string) string {
	if d.name() == SQLServer {
		return "LEN(" + s + ")"
	}
	return "LENGTH(" + s + ")"
}

// substr is the substring of s from 1-based position from, n long.
func (d *dialect) substr(s, from, n string) string {
	if d.name() == SQLServer {
		return "SUBSTRING(" + s + ", " + from + ", " + n + ")"
	}
	return "SUBSTR(" + s + ", " + from + ", " + n + ")"
}

// lastSlash is the 1-based position of the last '/' in col, which must
// contain one.
func (d *dialect) lastSlash(col string) string {
	switch d.name() {
	case Postgres:
		return "(LENGTH(" + col + ") - STRPOS(REVERSE(" + col + "), '/') + 1)"
	case MySQL:
		return "(LENGTH(" + col + ") - LOCATE('/', REVERSE(" + col + ")) + 1)"
	case SQLServer:
		return "(LEN(" + col + ") - CHARINDEX('/', REVERSE(" + col + ")) + 1)"
	default:
		// SQLite has no REVERSE: trimming every character but '/' from the
		// right leaves the name up to its last '/'.
		return "LENGTH(RTRIM(" + col + ", REPLACE(" + col + ", '/', '')))"
	}
}

// renameUnlessTaken renders an UPDATE of the lease table that sets name to
// newName(col) on the rows matching where, except rows whose new name is
// taken already. col is how the statement refers to the row's name.
func (d *dialect) renameUnlessTaken(table string, newName func(col string) string, where func(col string) string) string {
	q := d.quote(table)
	if d.name() == MySQL {
		// MySQL cannot read the table it updates in a subquery. IGNORE
		// skips the rows whose new name is taken; it can hide nothing else
		// here, since the new name has the old one's length and no other
		// column changes.
		return "UPDATE IGNORE " + q + " SET name = " + newName("name") + " WHERE " + where("name")
	}
	col := q + ".name"
	return "UPDATE " + q + " SET name = " + newName(col) + " WHERE " + where(col) +
		" AND NOT EXISTS (SELECT 1 FROM " + q + " AS taken WHERE taken.name = " + newName(col) + ")"
}

// insertUnlessTaken turns "INSERT INTO table (...) SELECT ... WHERE ..." into
// one that skips rows whose name (the SQL expression name) is taken.
func (d *dialect) insertUnlessTaken(ins, table, name string) string {
	q := d.quote(table)
	switch d.name() {
	case MySQL:
		// IGNORE skips names taken already (see renameUnlessTaken).
		return strings.Replace(ins, "INSERT INTO", "INSERT IGNORE INTO", 1)
	case SQLServer:
		return ins + " AND NOT EXISTS (SELECT 1 FROM " + q + " AS taken WHERE taken.name = " + name + ")"
	default:
		return ins + " ON CONFLICT (name) DO NOTHING"
	}
}

// recordVersionOnce records an applied step unless its row exists, for
// DDL that may be applied twice. description is an SQL literal.
func (d *dialect) recordVersionOnce(t Tables, version int, description string) string {
	q := d.quote(t.Migrations)
	v := strconv.Itoa(version)
	ins := "INSERT INTO " + q + " (version, description, applied_at_us) VALUES (" + v + ", " + description + ", " + d.now() + ")"
	switch d.name() {
	case MySQL:
		return ins + " ON DUPLICATE KEY UPDATE version = version"
	case SQLServer:
		return "IF NOT EXISTS (SELECT 1 FROM " + q + " WHERE version = " + v + ") " + ins
	default:
		return ins + " ON CONFLICT (version) DO NOTHING"
	}
}

// unlessCounted returns statements that run s only when the query check
// counts nothing. It is for MySQL, which cannot say "if not exists" in
// ALTER TABLE ... ADD COLUMN: a prepared statement is either s or DO 0.
// The statements must run on one connection (a session variable carries
// the choice). Other dialects guard their statements themselves and get s.
func (d *dialect) unlessCounted(check, s string) []string {
	if d.name() != MySQL {
		return []string{s}
	}
	return []string{
		"SET @leasehold_ddl = IF((" + check + ") = 0, " + quoteLiteral(s) + ", 'DO 0')",
		"PREPARE leasehold_ddl FROM @leasehold_ddl",
		"EXECUTE leasehold_ddl",
		"DEALLOCATE PREPARE leasehold_ddl",
	}
}

// rebuildTable gives a SQLite table the columns want, copying its rows,
// when it has the columns before (a prefix of want) or already all of
// want: SQLite cannot add a column only if it is missing, and this copy
// works on either. The columns want adds to before take their defaults from
// one row; a NATURAL LEFT JOIN with that row has no column in common with a
// table that lacks them all (each row gets the defaults), and only those in
// common with one that has them all (each row keeps its own values). The
// columns of one migration step come and go together, so a rebuild per step
// copies a table at any version. A missing table is created as before
// first. Run it inside one transaction.
func (d *dialect) rebuildTable(table, pk string, before, want []column) []string {
	q, tmp := d.quote(table), table+"_rebuild"
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
		// A table the script expects but that is not there yet is
		// created as it was first, so that the copy and the rename
		// below still make it.
		d.createTable(table, pk, before),
		"DROP TABLE IF EXISTS " + d.quote(tmp),
		d.createTable(tmp, pk, want),
		"INSERT INTO " + d.quote(tmp) + " (" + cols + ") SELECT " + cols + " FROM " + q +
			" NATURAL LEFT JOIN (SELECT " + strings.Join(defaults, ", ") + ") AS added",
		"DROP TABLE " + q,
		"ALTER TABLE " + d.quote(tmp) + " RENAME TO " + q,
	}
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

// migrationLock returns the lock statements for one schema.
func (d *dialect) migrationLock(t Tables, timeout time.Duration) lockSQL {
	key := migrationLockKey(t)
	switch d.name() {
	case Postgres:
		return lockSQL{
			setup:   "SET LOCAL lock_timeout = " + strconv.FormatInt(timeout.Milliseconds(), 10),
			acquire: "SELECT pg_advisory_xact_lock(" + strconv.FormatInt(advisoryKey(key), 10) + ")",
		}
	case MySQL:
		return lockSQL{acquire: "SELECT GET_LOCK(?, ?)", release: "SELECT RELEASE_LOCK(?)"}
	case SQLServer:
		return lockSQL{acquire: "DECLARE @r INT; EXEC @r = sp_getapplock @Resource = ?, @LockMode = 'Exclusive', " +
			"@LockOwner = 'Transaction', @LockTimeout = " + strconv.FormatInt(timeout.Milliseconds(), 10) + "; SELECT @r"}
	default:
		return lockSQL{acquire: "BEGIN IMMEDIATE", release: "COMMIT"}
	}
}

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

// withMigrationLock runs apply with the migration lock of t held, on a
// handle every migration statement goes through. apply runs a step that
// must be atomic with the record of its version through stepTx.
func (d *dialect) withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration,
	apply func(tx *gorm.DB, stepTx func(func() error) error) error) error {
	lock := d.migrationLock(t, timeout)
	key := migrationLockKey(t)
	inRun := func(fn func() error) error { return fn() } // the whole run is one transaction
	switch d.name() {
	case Postgres:
		// DDL is transactional on PostgreSQL: lock, migrate and record in one
		// transaction; the lock ends with it.
		return db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(lock.setup).Error; err != nil {
				return err
			}
			if err := tx.Exec(lock.acquire).Error; err != nil {
				return fmt.Errorf("%w: %w", ErrMigrationLock, err)
			}
			return apply(tx, inRun)
		})
	case SQLServer:
		return db.Transaction(func(tx *gorm.DB) error {
			var rc int
			if err := scanRow(tx, stmt{lock.acquire, []any{key}}, &rc); err != nil {
				return fmt.Errorf("%w: %w", ErrMigrationLock, err)
			}
			if rc < 0 {
				return fmt.Errorf("%w: sp_getapplock returned %d", ErrMigrationLock, rc)
			}
			return apply(tx, inRun)
		})
	case MySQL:
		// DDL commits implicitly on MySQL, so a transaction cannot hold the
		// lock: a named lock on one pinned connection does. It is released
		// explicitly, and by the server if the connection dies. A step of
		// data changes runs in a transaction begun and ended by statements
		// on that connection: gorm would take the pinned connection for a
		// transaction already and only set a savepoint.
		return pinned(db, func(conn *gorm.DB) error {
			var dbName sql.NullString
			if err := scanRow(conn, stmt{q: "SELECT DATABASE()"}, &dbName); err != nil {
				return err
			}
			name := mysqlLockName(dbName.String, key)
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
	default:
		// BEGIN IMMEDIATE takes the write lock up front (waiting up to the
		// busy timeout), whatever _txlock the caller's DSN sets, and the
		// run is one transaction.
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
