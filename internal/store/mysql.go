package store

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gorm.io/gorm"
)

// mysqlFacts are the facts of MySQL and MariaDB. They have no UPDATE ...
// RETURNING. MariaDB detects failovers (incarnation.go); MySQL cannot
// evaluate the expression, and runs without (Failover.ProbeFailover).
var mysqlFacts = facts{
	name:            MySQL,
	now:             mysqlNow,
	quote:           quoteBacktick,
	incarnationExpr: mariadbIncarnation,
	acquire:         acquireLockThenUpdate,
	// renewReturnsRows: the notice is the statement's last insert id
	// instead (see mysqlDB.returning).
	renewReturnsRows: false,
	lockRows:         lockClause{suffix: " FOR UPDATE"},
	firstRows:        limitTail,
	// types: binary ASCII collation for names, so that names and holders
	// compare byte for byte, as on the other databases (MySQL's default
	// collation ignores case).
	types:       columnTypes{name: "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin", bigint: "BIGINT", integer: "INT", text: "TEXT"},
	tableSuffix: " ENGINE=InnoDB",
}

// mysqlNow: UTC_TIMESTAMP(6) is constant within a statement and
// independent of the session time zone; TIMESTAMPDIFF between two DATETIMEs
// does no time-zone conversion either.
const mysqlNow = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"

// mariadbIncarnation is the MariaDB server answering: its server_id, or
// "galera" on a Galera cluster node.
//
// A failover of MariaDB's replication promotes a replica, and a primary
// and its replicas have distinct server_ids: replication refuses to run
// between two servers with the same one. So every promotion changes the
// server_id answering, and a restart of the same server does not (it is
// in the configuration). @@server_id is a plain global variable, which
// any user may read, at no cost in the statements that carry it.
//
// No promotion marker is added. A failover from A to B and back to A
// reads A, B, A, and each change is noticed, since the row names the
// incarnation last recorded: on A again it names B. It is missed only if
// no process ran a single statement on B in its whole time as primary (no
// renewal, campaign round or pool read, each of which records B), and
// then B granted no term either: nothing can be taken before B is
// recorded. The one marker MariaDB offers, @@gtid_slave_pos (the last
// transaction the server applied as a replica, which a promotion
// freezes), also moves with every write on the active primary of a
// circular (active-passive master-master) setup, which replicates its own
// writes back: every write would start a hold-off, and no lease could be
// taken.
//
// A Galera cluster is synchronous and every node may take writes, so a
// client that moves between nodes loses nothing, and the nodes' distinct
// server_ids must not read as failovers: all its nodes are one
// incarnation (wsrep_on). On MySQL, which has no wsrep_on, the expression
// fails and the store runs without failover detection (ProbeFailover);
// MySQL's failover is not defended.
const mariadbIncarnation = "IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR))"

// mysqlDialect is MySQL and MariaDB (gorm.io/driver/mysql).
func mysqlDialect() *dialect {
	s := mysqlSchema{facts: mysqlFacts}
	d := newDialect(mysqlFacts, mysqlDB{}, s, s, s)
	d.cluster = mysqlCluster{}
	return d
}

// mysqlDB is the runtime fragments of MySQL and MariaDB. Their processes
// wake each other with peer wake-ups (wake.go).
type mysqlDB struct {
	inLists
}

var _ database = mysqlDB{}

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
	sqlStrings
}

var (
	_ schemaDDL       = mysqlSchema{}
	_ rowRewriter     = mysqlSchema{}
	_ migrationLocker = mysqlSchema{}
)

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

// addDataColumn: a nullable MEDIUMTEXT, since TEXT columns take no default
// before MySQL 8.0.13; reads use COALESCE.
func (m mysqlSchema) addDataColumn(table string) string {
	return "ALTER TABLE " + m.quote(table) + " ADD COLUMN data MEDIUMTEXT NULL"
}

// unlessCounted: MySQL cannot say "if not exists" in ALTER TABLE ... ADD
// COLUMN, so a prepared statement is either s or DO 0. The statements must
// run on one connection (a session variable carries the choice).
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

// renameUnlessTaken: MySQL cannot read the table it updates in a
// subquery. IGNORE skips the rows whose new name is taken; it can hide
// nothing else here, since the new name has the old one's length and no
// other column changes.
func (mysqlSchema) renameUnlessTaken(q string, newName, where func(col string) string) string {
	return "UPDATE IGNORE " + q + " SET name = " + newName("name") + " WHERE " + where("name")
}

// insertUnlessTaken: IGNORE skips names taken already (see
// renameUnlessTaken).
func (mysqlSchema) insertUnlessTaken(ins, _, _ string) string {
	return strings.Replace(ins, "INSERT INTO", "INSERT IGNORE INTO", 1)
}

// migrationLock is a named lock (GET_LOCK), held by a connection.
func (mysqlSchema) migrationLock(Tables, time.Duration) lockSQL {
	return lockSQL{acquire: "SELECT GET_LOCK(?, ?)", release: "SELECT RELEASE_LOCK(?)"}
}

// withMigrationLock: DDL commits implicitly on MySQL, so a transaction
// cannot hold the lock: a named lock on one pinned connection does. It is
// released explicitly, and by the server if the connection dies. A step of
// data changes runs in a transaction begun and ended by statements on that
// connection: gorm would take the pinned connection for a transaction
// already and only set a savepoint.
func (m mysqlSchema) withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error {
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

// MariaDB Galera Cluster
//
// Galera replicates every transaction's changed rows to every node and
// certifies write-write conflicts at commit: of two transactions on
// different nodes that change one row, the one ordered second fails with
// ER_LOCK_DEADLOCK (1213) and is rolled back. Row locks (FOR UPDATE, LOCK
// IN SHARE MODE) are local to a node, a node's reads may lag the others'
// commits, and a statement that changes no row value replicates nothing
// and is certified against nothing. So on a cluster every decision the
// library takes from a read of another process's rows writes a row that
// process's conflicting write also changes:
//
//   - an acquire that finds a lease held by a dead session changes that
//     session's row (sqlMarkDeadSessions), which the session's renewal
//     also changes: a renewal committed on another node that this node has
//     not seen yet and the takeover cannot both commit;
//   - a fencing check changes the lease row it checks (sqlFenceWrite),
//     which a takeover also changes: a fenced transaction and a takeover
//     on another node cannot both commit;
//   - a pool's fencing check changes the generation row it checks
//     (sqlFenceGenerationWrite), which a publish of the next generation
//     also changes: a fenced transaction of a member and a rebalance on
//     another node cannot both commit.
//
// A node's applier that needs a row lock held by a local transaction
// aborts that transaction (a brute-force abort). The abort is not always
// reported to the statement running when it lands: the transaction is
// then rolled back, and the statements the client sends after it run and
// commit one by one. So the statements that create and delete the rows
// of keyed locks carry their floor rows themselves (floorBinder): a
// create takes its epoch from the floor row as it inserts, a delete
// deletes only a row whose floor row is at or above its epoch. Each is
// right alone; the transaction then checks that it is still open at its
// end, and runs again if it is not (ErrRolledBackUnderneath). Likewise
// the acquire's update repeats the conditions of its locking read
// (acquireRechecker).
//
// Detected once, by the store's start-up probe (ProbeFailover), from
// @@wsrep_on.

// mysqlCluster is the start-up probe of MySQL and MariaDB: a Galera node
// (wsrep on) gets galeraDialect. SHOW VARIABLES answers on MySQL too, with
// no row.
type mysqlCluster struct{}

func (mysqlCluster) sqlProbeCluster() string { return "SHOW VARIABLES LIKE 'wsrep_on'" }

func (mysqlCluster) clusterDialect(value string) *dialect {
	if !strings.EqualFold(value, "ON") {
		return nil
	}
	return galeraDialect()
}

// galeraDialect is MariaDB on a Galera cluster: MySQL's, with the writes
// that make decisions conflict at certification (see above).
func galeraDialect() *dialect {
	s := mysqlSchema{facts: mysqlFacts}
	return newDialect(mysqlFacts, galeraDB{}, s, s, s)
}

// galeraDB is the runtime fragments of a Galera cluster: MySQL's, the
// writes of deadSessionMarker and fenceWriter, the floored rows'
// statements of floorBinder and the acquire of acquireRechecker.
type galeraDB struct{ mysqlDB }

var (
	_ deadSessionMarker     = galeraDB{}
	_ fenceWriter           = galeraDB{}
	_ generationFenceWriter = galeraDB{}
	_ floorBinder           = galeraDB{}
	_ acquireRechecker      = galeraDB{}
)

// sqlMarkDeadSessions changes the row of every dead session that holds one
// of the named leases, other than session: its expiry moves back by one
// microsecond, so it stays dead and the row changes (a statement that
// changes nothing is not certified). A renewal of such a session that
// committed on another node conflicts with it at certification.
func (galeraDB) sqlMarkDeadSessions(t Tables, session string, names []string) stmt {
	return stmt{"UPDATE " + quoteBacktick(t.Sessions) + " s JOIN " + quoteBacktick(t.Leases) + " l ON l.session_id = s.id" +
		" SET s.expires_at_us = s.expires_at_us - 1" +
		" WHERE l.name IN (" + placeholders(len(names)) + ") AND l.session_id <> ? AND s.expires_at_us < " + mysqlNow,
		append(namesArgs(names), session)}
}

// sqlFenceWrite changes the lease row a fencing check reads, when a
// session holds it: renewed_at_us, which the reads of a row held by a
// session take from the session's row instead, moves forward by at least
// one microsecond, so the row always changes. A takeover on another node,
// which changes the row too, conflicts with the fenced transaction at
// certification. An unheld row is left alone: a pool's generation row has
// a statement of its own (sqlFenceGenerationWrite).
func (galeraDB) sqlFenceWrite(t Tables, name string) stmt {
	return stmt{"UPDATE " + quoteBacktick(t.Leases) + " SET renewed_at_us = GREATEST(" + mysqlNow + ", renewed_at_us + 1)" +
		" WHERE name = ? AND session_id <> ''", []any{name}}
}

// sqlFenceGenerationWrite changes a pool's generation row, which nobody
// holds, as a pool's fencing check reads it: renewed_at_us, the time of
// the last publish, moves forward by at least one microsecond, so the row
// always changes, and the generation and its data stay. A publish on
// another node, which changes the row too, conflicts with the fenced
// transaction at certification. So do the fenced transactions of the
// pool's members on different nodes with each other: the price of a
// generation that no member can read stale.
func (galeraDB) sqlFenceGenerationWrite(t Tables, name string) stmt {
	return stmt{"UPDATE " + quoteBacktick(t.Leases) + " SET renewed_at_us = GREATEST(" + mysqlNow + ", renewed_at_us + 1)" +
		" WHERE name = ? AND holder = ''", []any{name}}
}

// recheckAcquire: the acquire's update repeats the conditions of its
// locking read. A renewal of a session the acquire judged dead, applied
// on this node after the acquire changed that session's row, aborts the
// acquire; the update, run alone after an abort no statement reported,
// then takes nothing from the session now live.
func (galeraDB) recheckAcquire() {}

// sqlInsertAtFloors inserts the rows with the epochs of their floor
// rows, read in the statement itself under a lock: a floor row that a
// release committed on this node before has been raised already, and
// one that a release is raising waits for it. So a create rolled back
// under its transaction, whose insert then runs alone, still inserts no
// row below its floor. A row whose floor row is missing is not inserted.
func (galeraDB) sqlInsertAtFloors(t Tables, rows []Floored) stmt {
	q := quoteBacktick(t.Leases)
	vals := make([]string, len(rows))
	args := make([]any, 0, 2*len(rows))
	for i, r := range rows {
		vals[i] = "SELECT ?, ?"
		if i == 0 {
			vals[i] = "SELECT ? AS name, ? AS floor_name"
		}
		args = append(args, r.Name, r.Floor)
	}
	return stmt{"INSERT INTO " + q + " (name, epoch, expires_at_us) SELECT v.name, f.epoch, " + mysqlNow +
		" FROM (" + strings.Join(vals, " UNION ALL ") + ") v JOIN " + q + " f ON f.name = v.floor_name FOR UPDATE", args}
}

// sqlDeleteAtFloors deletes the rows where matches (on l) whose floor
// rows (f) are at or above their epochs, as the transaction raised them
// before: a release or a prune rolled back under its transaction, whose
// delete then runs alone without the raise, deletes nothing.
func (galeraDB) sqlDeleteAtFloors(t Tables, rows []Floored, where string, args []any) stmt {
	q := quoteBacktick(t.Leases)
	var b strings.Builder
	b.WriteString("DELETE l FROM " + q + " l JOIN " + q + " f ON f.name = CASE l.name")
	joinArgs := make([]any, 0, 2*len(rows)+len(args))
	for _, r := range rows {
		b.WriteString(" WHEN ? THEN ?")
		joinArgs = append(joinArgs, r.Name, r.Floor)
	}
	b.WriteString(" END WHERE " + where + " AND f.epoch >= l.epoch")
	return stmt{b.String(), append(joinArgs, args...)}
}

// sqlInTransaction: @@in_transaction is 0 once the transaction was rolled
// back under the client, whose statements then commit one by one.
func (galeraDB) sqlInTransaction() string { return "SELECT @@in_transaction" }

// ErrRolledBackUnderneath is a transaction found rolled back under its
// statements at its end (floorBinder): nothing it meant to do is known to
// have happened, and it runs again, as one that lost a race.
var ErrRolledBackUnderneath = errors.New("leasehold: the transaction was rolled back under its statements (a brute-force abort on a Galera node that no statement reported)")

// lostRace reports whether err is a transaction that lost to a
// conflicting one: a deadlock, or on a Galera cluster a failed
// certification (both ER_LOCK_DEADLOCK, 1213), or a brute-force abort
// found at its end (ErrRolledBackUnderneath). The transaction was rolled
// back whole: it changed nothing, or, in the last case, only what
// statements correct on their own did.
func (mysqlDB) lostRace(err error) bool {
	if errors.Is(err, ErrRolledBackUnderneath) {
		return true
	}
	n, ok := MySQLErrorNumber(err)
	return ok && n == 1213
}

// MySQLLostRace is lostRace on MySQL and MariaDB, for the store's tests
// that build the driver's errors (tests/store), outside this module.
func MySQLLostRace(err error) bool { return mysqlDB{}.lostRace(err) }

// The MySQL driver's error, read without linking the driver.
//
// gorm.io/driver/mysql runs on github.com/go-sql-driver/mysql, whose
// server errors are a *mysql.MySQLError with the server's error number in
// its exported Number field. The store needs that number (mysql.go,
// lostRace) and nothing else of the driver. Naming the type would link the
// driver into every program that imports the library, on any database, and
// register "mysql" with database/sql there; so the store recognises the
// type by its package path and name, and reads the field by reflection.
// TestMySQLErrorNumberReadsTheDriversType (tests/store) holds these
// names to the driver's.

// MySQLDriverPackage and MySQLErrorType name the driver's error type.
const (
	MySQLDriverPackage = "github.com/go-sql-driver/mysql"
	MySQLErrorType     = "MySQLError"
)

// MySQLErrorNumber returns the server's error number of the first MySQL
// driver error in err's chain, searched as errors.As does (Unwrap() error
// and Unwrap() []error, depth first), and whether there was one.
func MySQLErrorNumber(err error) (uint16, bool) {
	for err != nil {
		if n, ok := mysqlNumberOf(err); ok {
			return n, true
		}
		// This is the walk errors.As makes, for a type it cannot name.
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

// mysqlNumberOf returns err's Number if err itself is a *MySQLError of the
// driver.
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
