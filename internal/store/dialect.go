package store

import (
	"fmt"
	"strings"

	"github.com/leasehold/leasehold/internal/wake"
)

// How the supported databases differ
//
// Each database has a file of its own (postgres.go, mysql.go, galera.go,
// sqlite.go, sqlserver.go) holding three parts, put together by a dialect:
//
//   - facts: plain values every statement builder may read (its clock, its
//     quoting, its failover incarnation, how an acquire reports its
//     epochs, its column types);
//   - its runtime type, implementing database: the fragments of the shared
//     statements that differ, and the steps only some database takes
//     (steps);
//   - its schema type, implementing schemaDDL, rowRewriter and
//     migrationLocker (sql_schema.go).
//
// Every statement is built once for all databases, by the builders below
// (sessionSQL, leaseSQL, flooredSQL, poolSQL, incarnationSQL, schemaSQL),
// which ask the dialect for what differs. The Store runs the same sequence
// of statements on every database and never asks which one it talks to.
//
// Integers of the library's own (TTLs, epochs) are SQL literals; strings
// are always bound parameters, written '?'.

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
// Either way the acquire runs in a transaction that commits only after the
// epochs reached the client.
type acquireMode int

const (
	// acquireReturning: one UPDATE returns (name, epoch) of every lease it
	// took (OUTPUT on SQL Server).
	acquireReturning acquireMode = iota
	// acquireLockThenUpdate: a locking read finds the leases that can be
	// taken and their epochs, and an UPDATE takes exactly those (MySQL and
	// MariaDB, which have no UPDATE ... RETURNING).
	acquireLockThenUpdate
)

// facts are what one database is: values every statement builder may read.
type facts struct {
	name string // gorm's Dialector.Name()
	// now is the database clock in microseconds since the Unix epoch, as a
	// 64-bit integer.
	now   string
	quote func(ident string) string
	// incarnationExpr names the server incarnation answering, as text
	// (incarnation.go); "" where failovers are not detected.
	incarnationExpr string
	acquire         acquireMode
	// recheckAcquire makes the acquire's update repeat the conditions of
	// its locking read (Galera).
	recheckAcquire bool
	// serialWriters: a writing transaction excludes every other writer on
	// the whole database, while readers see the last commit (SQLite).
	serialWriters bool
	// renewReturnsRows: the renewal returns the notice as a row; on MySQL
	// it is the last insert id.
	renewReturnsRows bool
	// lockRows is how a read locks its rows for the rest of the
	// transaction against every other writer (sqlLockRows).
	lockRows lockClause
	// firstRows limits a SELECT to its first n rows: top follows SELECT,
	// tail ends the statement.
	firstRows func(n int) (top, tail string)
	types     columnTypes
	// tableSuffix follows the closing parenthesis of CREATE TABLE.
	tableSuffix string
	// batchEnd follows each statement of a script (Script).
	batchEnd string
	// rebuildsTables: ALTER TABLE cannot add a column only if it is
	// missing, so DDLFrom rebuilds tables instead (SQLite).
	rebuildsTables bool
	// wakes is how the processes on the database wake each other.
	wakes wake.Means
	// databaseFile reads the path of the database file, where wakes is
	// wake.Sockets.
	databaseFile string
	// busyTimeout reads how long, in milliseconds, a connection waits for
	// a lock another holds before it fails (SQLite; CheckBusyTimeout).
	busyTimeout string
	// serverConn is the id of the server connection a statement runs on,
	// and keptStatements(alias) counts, as alias, the prepared statements
	// the server keeps for the connection whose text contains '?': the
	// start-up check for a transaction pooler (pooler.go; PostgreSQL).
	serverConn     string
	keptStatements func(alias string) string
}

// lockClause is how a read locks its rows: a table hint (after the table's
// name) and a suffix (at the end of the statement).
type lockClause struct{ hint, suffix string }

// columnTypes are the column types of the schema: of names, of 64-bit and
// 32-bit integers, and of the data column where it takes a default.
type columnTypes struct{ name, bigint, integer, text string }

// database is what one database's statements do their own way while the
// library runs.
type database interface {
	// returning makes an UPDATE hand back the columns cols of the rows it
	// changes: afterSet follows its SET clause, afterWhere its WHERE.
	returning(cols ...string) (afterSet, afterWhere string)
	// nameIn matches the column col against names.
	nameIn(col string, names []string) (string, []any)
	// whereTerms follows the SET clause of an UPDATE of the lease table q
	// (quoted) that matches exactly the given terms of session.
	whereTerms(q, session string, terms []Term) (string, []any)
	// sqlEnsureRows creates the rows of leases never used, tolerating rows
	// that exist or are inserted at the same moment; an unheld existing
	// row gets expires_at_us = now, as a new one does.
	sqlEnsureRows(t Tables, names []string) stmt
	// lockForShare is the hint and suffix of a read of the table aliased
	// alias that locks its rows against a change until the transaction
	// ends (sqlFence).
	lockForShare(alias string) (hint, suffix string)
	// insertOnceConcurrent is an INSERT (into: "INSERT INTO q (cols) ",
	// values: its values) into the table q (quoted) that does nothing when
	// a row with key = value exists, also one inserted at the same moment.
	insertOnceConcurrent(into, values, q, key, value string) string
	// sqlCountTables counts the base tables named table; empty where
	// gorm's HasTable tells (all but PostgreSQL).
	sqlCountTables(table string) stmt
	steps
}

// steps are the statements that only some database sends or changes, in
// sequences that every database runs. plainSteps are their neutral forms,
// which every other database embeds: an empty statement sends nothing
// (execStep), a statement handed in comes back as it is.
type steps interface {
	clusterSteps
	wakeSteps
}

// clusterSteps are the steps of a multi-primary cluster (Galera), and
// MySQL's lost races.
type clusterSteps interface {
	// sqlMarkDeadSessions follows an acquire's lock: it changes the row of
	// every dead session holding one of names, but session (Galera).
	sqlMarkDeadSessions(t Tables, session string, names []string) stmt
	// sqlFenceWrite precedes a fencing read: it changes the lease row read
	// (Galera), or takes the write lock (SQLite).
	sqlFenceWrite(t Tables, name string) stmt
	// sqlFenceGenerationWrite precedes a fencing read of a pool's
	// generation row: it changes that row (Galera), or takes the write
	// lock (SQLite).
	sqlFenceGenerationWrite(t Tables, name string) stmt
	// insertAtFloors is plain, the insert of new floored rows at the
	// epochs of their floor rows (Galera: read by the insert itself).
	insertAtFloors(t Tables, rows []Floored, plain stmt) stmt
	// deleteAtFloors is plain, a delete of floored rows (Galera: one that
	// deletes the rows aliased l that where matches only while their
	// floor rows are at or above their epochs).
	deleteAtFloors(t Tables, rows []Floored, where string, args []any, plain stmt) stmt
	// sqlInTransaction ends a transaction of floored rows: one row, 1
	// while the transaction is open (Galera).
	sqlInTransaction() string
	// lostRace reports whether err is a transaction rolled back whole
	// because it lost to a conflicting one, which is sent again (MySQL).
	lostRace(err error) bool
}

// wakeSteps wake the other processes through the database (PostgreSQL).
type wakeSteps interface {
	// releaseNotify is release, the release of leases, as one statement
	// that also wakes the processes waiting for them (PostgreSQL).
	releaseNotify(t Tables, release stmt) counted
	// writeNotify is write, an UPDATE, as one statement that also wakes
	// the processes of payload when it changed a row (PostgreSQL).
	writeNotify(t Tables, write stmt, payload string) counted
	// sqlNotify wakes the processes listening on channel (PostgreSQL).
	sqlNotify(channel, payload string) stmt
}

// plainSteps are the neutral forms of steps.
type plainSteps struct{}

func (plainSteps) sqlMarkDeadSessions(Tables, string, []string) stmt { return stmt{} }
func (plainSteps) sqlFenceWrite(Tables, string) stmt                 { return stmt{} }
func (plainSteps) sqlFenceGenerationWrite(Tables, string) stmt       { return stmt{} }
func (plainSteps) insertAtFloors(_ Tables, _ []Floored, plain stmt) stmt {
	return plain
}
func (plainSteps) deleteAtFloors(_ Tables, _ []Floored, _ string, _ []any, plain stmt) stmt {
	return plain
}
func (plainSteps) sqlInTransaction() string                           { return "" }
func (plainSteps) lostRace(error) bool                                { return false }
func (plainSteps) releaseNotify(_ Tables, release stmt) counted       { return counted{stmt: release} }
func (plainSteps) writeNotify(_ Tables, write stmt, _ string) counted { return counted{stmt: write} }
func (plainSteps) sqlNotify(string, string) stmt                      { return stmt{} }
func (plainSteps) sqlCountTables(string) stmt                         { return stmt{} }

// dialect is the SQL of one database: its facts, its runtime type and its
// schema type.
type dialect struct {
	facts
	database

	// ddl, rewrite, rebuild and lock are the schema type's roles
	// (sql_schema.go).
	ddl     schemaDDL
	rewrite rowRewriter
	rebuild tableRebuilder
	lock    migrationLocker

	// incarnation is incarnationExpr, or "" once ProbeFailover found that
	// the server cannot say it.
	incarnation string
	// cluster, when set, is the start-up probe (ProbeFailover) of a server
	// that may be a node of a cluster with a dialect of its own (Galera).
	cluster *clusterProbe
}

// clusterProbe finds out at start-up whether the server is a node of a
// multi-primary cluster.
type clusterProbe struct {
	// sql returns one row (name, value), or none.
	sql string
	// dialect is the cluster's dialect for the value read, or nil.
	dialect func(value string) *dialect
}

// newDialect returns the dialect of the facts f, the runtime type db and
// the schema type s.
func newDialect(f facts, db database, s schemaType) *dialect {
	return &dialect{facts: f, database: db, ddl: s, rewrite: s, rebuild: s, lock: s, incarnation: f.incarnationExpr}
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

// lockFirst reports whether an acquire or a prune locks its rows in a
// statement of its own, in name order, before a second statement decides
// under READ COMMITTED: everywhere but SQLite, whose statements never wait
// on a row.
func (d *dialect) lockFirst() bool { return !d.serialWriters }

func (d *dialect) sessions() sessionSQL         { return sessionSQL{d} }
func (d *dialect) leases() leaseSQL             { return leaseSQL{d} }
func (d *dialect) floored() flooredSQL          { return flooredSQL{d} }
func (d *dialect) pools() poolSQL               { return poolSQL{d} }
func (d *dialect) incarnations() incarnationSQL { return incarnationSQL{d} }
func (d *dialect) schema() schemaSQL            { return schemaSQL{d} }
