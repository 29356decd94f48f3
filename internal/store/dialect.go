package store

import (
	"fmt"
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
// sql_schema.go, incarnation.go, schema.go), which asks the database for
// the fragments that differ:
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
// database implements: notifier (PostgreSQL's LISTEN/NOTIFY, wake.go),
// fileDatabase (the wake-up sockets next to an SQLite file, wake.go)
// and tableRebuilder (SQLite's DDL script, schema.go).
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

	// The schema (sql_schema.go, schema.go).

	// Column types: of names, of 64-bit and of 32-bit integers, and of the
	// data column where it takes a default (textCol).
	nameType() string
	bigintType() string
	intType() string
	textType() string
	// createTableIf starts a CREATE TABLE of table that does nothing when
	// the table exists, up to the table's quoted name.
	createTableIf(table string) string
	// createTableSuffix is appended after the closing parenthesis of
	// CREATE TABLE.
	createTableSuffix() string
	// addColumn adds a NOT NULL column with a default to a table,
	// idempotently where the database can say so in the statement
	// (PostgreSQL, SQL Server). Elsewhere the step guards it with
	// hasColumn (MySQL), or the migration runs in one transaction with its
	// version record (SQLite).
	addColumn(table string, c column) string
	// addColumns adds NOT NULL columns with defaults to a table, in one
	// statement where the database allows several in one ALTER TABLE (so a
	// MySQL step that adds them is done or not begun), one statement each
	// on SQLite. On SQL Server the first column's absence guards them all:
	// the migration there is one transaction.
	addColumns(table string, cols []column) []string
	// hasColumn counts a column, where ADD COLUMN cannot say "if not
	// exists" (MySQL, SQLite); "" elsewhere.
	hasColumn(table, col string) string
	// hasDataColumnAsReleased is the guard of schema version 2 as it was
	// released: MySQL's only.
	hasDataColumnAsReleased(table string) string
	// addDataColumn adds the text column that pool rows use for their
	// member list and member rows for their acknowledged generation.
	addDataColumn(table string) string
	// concat joins string expressions.
	concat(parts ...string) string
	// length is the length of a string expression (names are ASCII).
	length(s string) string
	// substr is the substring of s from 1-based position from, n long.
	substr(s, from, n string) string
	// lastSlash is the 1-based position of the last '/' in col, which must
	// contain one.
	lastSlash(col string) string
	// renameUnlessTaken renders an UPDATE of the lease table q (quoted)
	// that sets name to newName(col) on the rows matching where, except
	// rows whose new name is taken already. col is how the statement
	// refers to the row's name.
	renameUnlessTaken(q string, newName, where func(col string) string) string
	// insertUnlessTaken turns ins, "INSERT INTO q (...) SELECT ... WHERE
	// ..." into the lease table q (quoted), into one that skips rows whose
	// name (the SQL expression name) is taken.
	insertUnlessTaken(ins, q, name string) string
	// insertOnce makes ins, an INSERT of one row into the table q
	// (quoted), do nothing when a row with key = value exists, for DDL
	// that may be applied twice.
	insertOnce(ins, q, key, value string) string
	// unlessCounted returns statements that run s only when the query
	// check counts nothing, for a database that cannot say "if not exists"
	// in ALTER TABLE ... ADD COLUMN (MySQL). The statements must run on
	// one connection. Other databases guard their statements themselves
	// and get s.
	unlessCounted(check, s string) []string
	// scriptBatchEnd follows the line of each statement in a script for
	// the database's command-line client (Script); "" for nothing.
	scriptBatchEnd() string
	// migrationLock returns the lock statements for one schema.
	migrationLock(t Tables, timeout time.Duration) lockSQL
	// withMigrationLock runs apply with the migration lock of t held, on a
	// handle every migration statement goes through. apply runs a step
	// that must be atomic with the record of its version through stepTx.
	withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error
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
