package store

import (
	"fmt"
	"strings"
)

// How the supported databases differ
//
// Each supported database has a file of its own: postgres.go, mysql.go
// (MySQL and MariaDB), sqlite.go and sqlserver.go. In it, what the
// database is and what it does its own way come in three parts, in the
// manner of gorm's Dialector and its separate Migrator:
//
//   - its facts (type facts below): plain values, the same for every
//     statement: the dialect's name, the database clock read as
//     microseconds since the Unix epoch, how it quotes a name, its
//     failover incarnation (incarnation.go), how an acquire hands back the
//     new epochs (RETURNING, OUTPUT, or, since MariaDB has no UPDATE ...
//     RETURNING, a locking read in the acquire's own transaction), whether
//     a writing transaction excludes every other writer on the whole
//     database (SQLite), how the renewal returns the session's notice, the
//     lock clause of a read that decides (sqlLockRows), the column types
//     of the schema, and what ends a statement in a script;
//   - its runtime type (postgresDB, ...), implementing the database
//     interface below: the statement fragments that differ while the
//     library runs, such as how an UPDATE hands back its rows, how names
//     are matched, how an insert-if-absent tolerates a concurrent insert,
//     and how a fencing read locks the lease row inside the caller's
//     transaction;
//   - its schema type (postgresSchema, ...), implementing the small
//     interfaces of sql_schema.go: schemaDDL (the DDL, guarded so that it
//     may be applied twice), rowRewriter (the string functions and renames
//     of the migration step that rewrites rows) and migrationLocker (how
//     concurrent migrations are serialised).
//
// What only one database does is an interface of its own, which only that
// database implements: notifier (PostgreSQL's LISTEN/NOTIFY, wake.go) and
// fileDatabase (the wake-up sockets next to an SQLite file, wake.go) on
// the runtime type, and tableRebuilder (SQLite's DDL script, schema.go)
// on the schema type.
//
// A dialect holds the three parts of one database. Every statement the
// library sends is built from one template per operation, shared by every
// database, which asks the dialect for the fragments that differ. The
// builders are small types over the dialect, one for each kind of
// statement: sessionSQL (sql_sessions.go), leaseSQL (sql_leases.go),
// poolSQL (sql_pools.go), incarnationSQL (incarnation.go) and schemaSQL
// (sql_schema.go, schema.go). The conditions several of them share (a
// lease's liveness, the failover conditions, the locking read of a
// decision) are the dialect's own.
//
// The Store and its owners (doc.go) sequence these statements and never
// ask which database they talk to, only what it can do; schema.go lists
// the migration steps.
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

// facts are what one supported database is: values that every statement
// builder may read, the same for every statement.
type facts struct {
	// name is the dialect's name, as gorm's Dialector.Name() reports it.
	name string
	// now is an expression for the database clock in microseconds since
	// the Unix epoch, as a 64-bit integer.
	now string
	// quote quotes one identifier.
	quote func(ident string) string
	// incarnationExpr is an expression for the current incarnation of the
	// database server, as text: it changes when a standby is promoted or
	// the database is restored, and never otherwise (incarnation.go). ""
	// where leasehold does not detect failovers.
	incarnationExpr string
	// acquire says how an acquire reports its terms.
	acquire acquireMode
	// serialWriters is true when a writing transaction excludes every
	// other writer on the whole database, not only on the rows it touches
	// (SQLite's single write lock), while readers still see the last
	// committed state (WAL). A fenced transaction then holds off the
	// holder's renewal statement for as long as it is open.
	serialWriters bool
	// renewReturnsRows is true when the renewal statement returns the
	// notice as a row (everywhere but MySQL, where it is the last insert
	// id).
	renewReturnsRows bool
	// lockRows is the clause of a read that locks the rows it reads for
	// the rest of the transaction, against every other writer
	// (sqlLockRows).
	lockRows lockClause
	// firstRows limits a SELECT to its first n rows: top follows SELECT,
	// tail ends the statement (sqlReadDeadFloored).
	firstRows func(n int) (top, tail string)
	// types are the column types of the schema.
	types columnTypes
	// tableSuffix is appended after the closing parenthesis of CREATE
	// TABLE.
	tableSuffix string
	// batchEnd follows the line of each statement in a script for the
	// database's command-line client (Script); "" for nothing.
	batchEnd string
}

// lockClause is how a read locks the rows it reads: a table hint (after
// the table's name) and a suffix (at the end of the statement).
type lockClause struct{ hint, suffix string }

// columnTypes are the column types of the schema: of names, of 64-bit and
// of 32-bit integers, and of the data column where it takes a default
// (textCol).
type columnTypes struct{ name, bigint, integer, text string }

// database is what one supported database does its own way while the
// library runs: the SQL fragments that the shared statement builders ask
// it for.
type database interface {
	// returning makes an UPDATE hand back the columns cols of every row
	// it changes: afterSet follows its SET clause, afterWhere its WHERE
	// clause.
	returning(cols ...string) (afterSet, afterWhere string)
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
	// lockForShare is the table hint and the suffix of a read of the
	// table aliased alias that locks the rows it reads against a change
	// until the transaction ends (sqlFence).
	lockForShare(alias string) (hint, suffix string)
	// insertOnceConcurrent is an INSERT of one row (into: "INSERT INTO q
	// (columns) ", values: its values) into the table q (quoted) that does
	// nothing when a row with key = value exists, also when another
	// process inserts it at the same moment.
	insertOnceConcurrent(into, values, q, key, value string) string
}

// dialect is the SQL of one database: its facts, its runtime fragments and
// its schema's, which the statement builders, shared by every database,
// put together.
type dialect struct {
	facts
	database

	// ddl, rewrite and lock are the database's schema type, in the three
	// roles the schema's statements ask it for (sql_schema.go).
	ddl     schemaDDL
	rewrite rowRewriter
	lock    migrationLocker

	// incarnation is the database's incarnationExpr, or "" once
	// ProbeFailover found that the server cannot say its incarnation.
	incarnation string
	// cluster, when set, is asked by the start-up probe (ProbeFailover)
	// whether the server is a node of a multi-primary cluster that needs
	// a dialect of its own (MariaDB Galera, mysql.go).
	cluster clusterProbe
}

// clusterProbe finds out, once at start-up, whether the server is a node
// of a multi-primary cluster whose statements differ (MariaDB Galera,
// mysql.go).
type clusterProbe interface {
	// sqlProbeCluster is a statement returning one row (name, value), or
	// none where the server has no such setting.
	sqlProbeCluster() string
	// clusterDialect returns the dialect for a server that answered
	// value, or nil to keep the one in use.
	clusterDialect(value string) *dialect
}

// deadSessionMarker is a database whose acquire, once it has locked the
// named rows, changes the row of every dead session holding one of them,
// so that the acquire conflicts with a renewal of that session committed
// elsewhere (Galera, mysql.go).
type deadSessionMarker interface {
	sqlMarkDeadSessions(t Tables, session string, names []string) stmt
}

// fenceWriter is a database whose fencing check changes the lease row it
// checks, so that the fenced transaction conflicts with a takeover
// committed elsewhere (Galera, mysql.go).
type fenceWriter interface {
	sqlFenceWrite(t Tables, name string) stmt
}

// generationFenceWriter is a database whose fencing check of a pool's
// generation row changes that row, which nobody holds, so that the fenced
// transaction conflicts with a publish committed elsewhere (Galera,
// mysql.go).
type generationFenceWriter interface {
	sqlFenceGenerationWrite(t Tables, name string) stmt
}

// floorBinder is a database whose statements that create or delete a
// floored row (floored.go) carry the row's floor row themselves, so that
// each is right on its own: on a Galera node a transaction can be rolled
// back under its statements (a brute-force abort by the node's applier)
// without the statement running being told, and the statements sent
// after it then commit one by one (mysql.go).
type floorBinder interface {
	// sqlInsertAtFloors inserts unheld rows with the given names, each
	// with the epoch its floor row has when the statement runs, read
	// under a lock.
	sqlInsertAtFloors(t Tables, rows []Floored) stmt
	// sqlDeleteAtFloors deletes the rows of the lease table, aliased l,
	// that where matches and whose floor row is at or above their epoch.
	sqlDeleteAtFloors(t Tables, rows []Floored, where string, args []any) stmt
	// sqlInTransaction returns one row: 1 while the caller's transaction
	// is open, 0 once it was rolled back under it.
	sqlInTransaction() string
}

// acquireRechecker is a database whose acquire update (MySQL's second
// statement, acquireLockThenUpdate) judges again whether each lease can
// be taken, so that it is right also when the transaction was rolled
// back under it after the locking read (Galera, mysql.go).
type acquireRechecker interface {
	recheckAcquire()
}

// raceLoser is a database that tells a transaction rolled back because it
// lost to a conflicting one (a deadlock, a failed certification) from
// other errors (MySQL and MariaDB, mysql.go).
type raceLoser interface {
	lostRace(err error) bool
}

// newDialect returns the dialect of a database with the facts f, the
// runtime fragments db and the schema fragments ddl, rewrite and lock.
func newDialect(f facts, db database, ddl schemaDDL, rewrite rowRewriter, lock migrationLocker) *dialect {
	return &dialect{facts: f, database: db, ddl: ddl, rewrite: rewrite, lock: lock, incarnation: f.incarnationExpr}
}

// dialects holds the dialect of every supported database by name.
var dialects = map[string]*dialect{
	Postgres:  postgresDialect(),
	MySQL:     mysqlDialect(),
	SQLite:    sqliteDialect(),
	SQLServer: sqlserverDialect(),
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
func (d *dialect) lockFirst() bool { return !d.serialWriters }

// The statement builders of the dialect, one for each kind of statement.

// sessions builds the statements of the session table (sql_sessions.go).
func (d *dialect) sessions() sessionSQL { return sessionSQL{d} }

// leases builds the statements of the lease rows (sql_leases.go).
func (d *dialect) leases() leaseSQL { return leaseSQL{d} }

// floored builds the statements of floored rows, those of keyed locks
// (sql_floored.go).
func (d *dialect) floored() flooredSQL { return flooredSQL{d} }

// pools builds the statements of the pool rows (sql_pools.go).
func (d *dialect) pools() poolSQL { return poolSQL{d} }

// incarnations builds the statements of the incarnation row
// (incarnation.go).
func (d *dialect) incarnations() incarnationSQL { return incarnationSQL{d} }

// schema builds the statements of the schema (sql_schema.go, schema.go).
func (d *dialect) schema() schemaSQL { return schemaSQL{d} }
