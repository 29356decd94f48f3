package store

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// This file is the only place in leasehold that knows how the supported
// databases differ. Every statement the library sends is built here, from
// one template per operation, so the differences stay visible side by side:
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
// store.go sequences the statements built here and never asks which
// database it talks to; schema.go lists the migration steps.
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

// dialect holds the SQL fragments of one database.
type dialect struct {
	name string

	// now is an expression for the database clock in microseconds since
	// the Unix epoch, as a 64-bit integer.
	now string

	// quote quotes one identifier.
	quote func(string) string

	// incarnation is an expression for the current incarnation of the
	// database server, as text: it changes when a standby is promoted or
	// the database is restored, and never otherwise (incarnation.go). ""
	// where leasehold does not detect failovers.
	incarnation string

	// acquire says how an acquire reports its terms.
	acquire acquireMode

	// wake says how a release wakes the other processes on the same
	// tables (wake.go).
	wake wakeMode

	// serialWriters is true when a writing transaction excludes every
	// other writer on the whole database, not only on the rows it touches
	// (SQLite's single write lock), while readers still see the last
	// committed state (WAL). A fenced transaction then holds off the
	// holder's renewal statement for as long as it is open.
	serialWriters bool

	// Column types.
	nameType, bigintType, intType string

	// createTableSuffix is appended after the closing parenthesis of
	// CREATE TABLE.
	createTableSuffix string
}

var dialects = map[string]*dialect{
	Postgres: {
		name: Postgres,
		// statement_timestamp() is constant within one statement and, unlike
		// now(), advances inside a long transaction, which matters for the
		// fencing check that runs inside the caller's transaction.
		now:   "CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)",
		quote: quoteDouble,
		// The cluster's system identifier, which a restore into a new
		// cluster changes, and the timeline of the WAL being written,
		// which every promotion and point-in-time recovery raises. Both are
		// readable by any role, and only on a server that accepts writes.
		incarnation: "(SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || " +
			"substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)",
		acquire:    acquireReturning,
		wake:       wakeListen,
		nameType:   "VARCHAR(255) COLLATE \"C\"",
		bigintType: "BIGINT",
		intType:    "INTEGER",
	},
	MySQL: {
		name: MySQL,
		// UTC_TIMESTAMP(6) is constant within a statement and independent of
		// the session time zone; TIMESTAMPDIFF between two DATETIMEs does no
		// time-zone conversion either.
		now:     "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))",
		quote:   quoteBacktick,
		acquire: acquireLockThenUpdate,
		// Binary ASCII collation: names and holders compare byte for byte,
		// as on the other databases (MySQL's default collation ignores case).
		nameType:          "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin",
		bigintType:        "BIGINT",
		intType:           "INT",
		createTableSuffix: " ENGINE=InnoDB",
	},
	SQLite: {
		name: SQLite,
		// julianday('now') has millisecond resolution and is constant within
		// one statement. The value is stored in microseconds like the others.
		now:           "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)",
		quote:         quoteDouble,
		acquire:       acquireReturning,
		wake:          wakeLocal,
		serialWriters: true,
		nameType:      "TEXT",
		bigintType:    "INTEGER",
		intType:       "INTEGER",
	},
	SQLServer: {
		name: SQLServer,
		// DATEDIFF_BIG needs SQL Server 2016 or newer.
		now:   "DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())",
		quote: quoteBracket,
		// The name of the server instance answering: an availability
		// group's failover moves the primary to another instance.
		incarnation: "CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255))",
		acquire:     acquireReturning,
		// NVARCHAR because go-mssqldb binds Go strings as NVARCHAR: a VARCHAR
		// key compared with an NVARCHAR parameter is converted row by row and
		// loses its index seek. Binary collation: byte-for-byte comparison,
		// as on the others.
		nameType:   "NVARCHAR(255) COLLATE Latin1_General_BIN2",
		bigintType: "BIGINT",
		intType:    "INT",
	},
}

// lookupDialect returns the dialect with the given gorm name.
func lookupDialect(name string) (*dialect, error) {
	d, ok := dialects[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (supported: %s)", ErrUnsupportedDialect, name, strings.Join(Dialects, ", "))
	}
	return d, nil
}

// ----------------------------------------------------------------------
// Liveness
//
// A lease row is held by a session when session_id is set: it is live
// while that session's row is unexpired by the database clock, so one
// renewal of the session row extends every lease and pool membership of
// the process. Rows written by builds before sessions (session_id '')
// carry their own expiry and stay live until it, so a rolling upgrade
// never takes over a lease an older process still holds. Tombstones of
// renamed pool rows (schema version 3) are such rows, live until 9999.
//
// The same predicate is written once here, for SQL (heldExpr), and once in
// Row.Live, for rows read back.

// heldForever is the expires_at_us of a row held by a session: builds
// before sessions, which only read expires_at_us, see it held until it is
// released. It is 9999-12-31T23:59:59.999999Z.
const heldForever = "253402300799999999"

// sessionLive is true when the session whose id is the SQL expression id
// exists and has not expired by the database clock, less slack (an SQL
// expression in microseconds, "" for none).
func (d *dialect) sessionLive(t Tables, id, slack string) string {
	now := d.now
	if slack != "" {
		now += " - " + slack
	}
	return "EXISTS (SELECT 1 FROM " + d.quote(t.Sessions) + " s WHERE s.id = " + id + " AND s.expires_at_us >= " + now + ")"
}

// heldExpr is true when the lease row whose table or alias is l is held
// and live by the database clock.
func (d *dialect) heldExpr(t Tables, l string) string {
	return "(" + l + ".holder <> '' AND ((" + l + ".session_id = '' AND " + l + ".expires_at_us >= " + d.now + ") OR " +
		d.sessionLive(t, l+".session_id", "") + "))"
}

// sessionColumn reads a column of the row's session, or fallback for a row
// not held by a session. joined says the session table is joined as s;
// otherwise a subquery reads it, which takes no lock that lasts when the
// outer query locks the lease row (sqlFence).
func (d *dialect) sessionColumn(t Tables, l, col, fallback string, joined bool) string {
	sess := "s." + col
	if !joined {
		sess = "(SELECT s." + col + " FROM " + d.quote(t.Sessions) + " s WHERE s.id = " + l + ".session_id)"
	}
	return "CASE WHEN " + l + ".session_id = '' THEN " + l + "." + col + " ELSE COALESCE(" + sess + ", " + fallback + ") END"
}

// rowColumns is the column list read back for a lease aliased l: the
// renewal and expiry of its holder's session, the resign request and
// preference, and the database clock.
func (d *dialect) rowColumns(t Tables, joined bool) string {
	return "l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, " +
		d.sessionColumn(t, "l", "renewed_at_us", "l.renewed_at_us", joined) + ", " +
		d.sessionColumn(t, "l", "expires_at_us", "0", joined) + ", COALESCE(l.data, ''), " +
		"l.resign_epoch, l.prefer_holder, l.prefer_until_us, " + d.now + " AS now_us, " + d.incarnationColumns(t)
}

// readFrom is the FROM clause of a plain read: each lease with its
// session, joined.
func (d *dialect) readFrom(t Tables) string {
	return " FROM " + d.quote(t.Leases) + " l LEFT JOIN " + d.quote(t.Sessions) + " s ON s.id = l.session_id"
}

// ----------------------------------------------------------------------
// Sessions

// sqlCreateSession starts a session, live for ttl by the database clock.
// Where failovers are detected, it records the database incarnation it
// started in.
func (d *dialect) sqlCreateSession(t Tables, id, holder string, ttl time.Duration) stmt {
	cols, vals := "", ""
	if d.incarnation != "" {
		cols, vals = ", incarnation", ", "+d.incarnation
	}
	return stmt{"INSERT INTO " + d.quote(t.Sessions) + " (id, holder, created_at_us, renewed_at_us, expires_at_us" + cols + ") VALUES (?, ?, " +
		d.now + ", " + d.now + ", " + d.now + " + " + us(ttl) + vals + ")", []any{id, holder}}
}

// sqlRenewSession extends a session that has not expired by the database
// clock. An expired session is never revived: its leases may have been
// taken over, and are free in every reader's eyes.
//
// The same statement hands back the session's notice counter, which a
// resign request bumps (sqlNotifySession), so the holder learns of a
// request at its next renewal without a statement of its own: RETURNING
// on PostgreSQL and SQLite, OUTPUT on SQL Server. MariaDB and MySQL have
// no UPDATE ... RETURNING: there notice = LAST_INSERT_ID(notice) leaves
// the column as it is and makes its value the statement's last insert id,
// which the server sends back with the affected-row count.
func (d *dialect) sqlRenewSession(t Tables, id string, ttl time.Duration) stmt {
	set := "UPDATE " + d.quote(t.Sessions) + " SET renewed_at_us = " + d.now + ", expires_at_us = " + d.now + " + " + us(ttl)
	where := " WHERE id = ? AND expires_at_us >= " + d.now + d.sameIncarnation("")
	switch d.name {
	case MySQL:
		return stmt{set + ", notice = LAST_INSERT_ID(notice)" + where, []any{id}}
	case SQLServer:
		return stmt{set + " OUTPUT inserted.notice" + where, []any{id}}
	default:
		return stmt{set + where + " RETURNING notice", []any{id}}
	}
}

// renewReturnsRows reports whether the renewal statement returns the
// notice as a row (everywhere but MySQL, where it is the last insert id).
func (d *dialect) renewReturnsRows() bool { return d.name != MySQL }

// sqlNotifySession bumps the notice counter of a session: its holder reads
// its pending resign requests after the next renewal that returns the new
// value.
func (d *dialect) sqlNotifySession(t Tables, id string) stmt {
	return stmt{"UPDATE " + d.quote(t.Sessions) + " SET notice = notice + 1 WHERE id = ?", []any{id}}
}

// sqlReadSession reads a session's expiry with the database clock.
func (d *dialect) sqlReadSession(t Tables, id string) stmt {
	return stmt{"SELECT renewed_at_us, expires_at_us, " + d.now + " AS now_us FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlEndSession deletes a session: every lease still held by it is free at
// once.
func (d *dialect) sqlEndSession(t Tables, id string) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE id = ?", []any{id}}
}

// sqlPruneSessions deletes sessions expired for longer than grace. Their
// leases are free already; a missing session reads as an expired one.
func (d *dialect) sqlPruneSessions(t Tables, grace time.Duration) stmt {
	return stmt{"DELETE FROM " + d.quote(t.Sessions) + " WHERE expires_at_us < " + d.now + " - " + us(grace), nil}
}

// ----------------------------------------------------------------------
// Leases

// sqlEnsureRows creates the rows of leases that have never been used, and
// tolerates rows that exist or that another process inserts at the same
// moment. A row that exists unheld gets expires_at_us = now, as a new one
// does: pruning deletes unheld rows only once that is older than its
// grace, so it never deletes a row someone is about to acquire.
func (d *dialect) sqlEnsureRows(t Tables, names []string) stmt {
	q := d.quote(t.Leases)
	switch d.name {
	case MySQL:
		// Not INSERT IGNORE: that would also turn real errors into warnings.
		return stmt{"INSERT INTO " + q + " (name, expires_at_us) VALUES " + d.valuesNow(len(names)) +
			" ON DUPLICATE KEY UPDATE expires_at_us = IF(holder = '', " + d.now + ", expires_at_us)", namesArgs(names)}
	case SQLServer:
		// UPDLOCK+HOLDLOCK take a key-range lock, so two concurrent inserts
		// queue instead of one failing with a duplicate key.
		args := append(namesArgs(names), namesArgs(names)...)
		return stmt{"UPDATE " + q + " SET expires_at_us = " + d.now + " WHERE name IN (" + placeholders(len(names)) + ") AND holder = ''; " +
			"INSERT INTO " + q + " (name, expires_at_us) SELECT v.name, " + d.now + " FROM (VALUES " +
			strings.TrimSuffix(strings.Repeat("(?), ", len(names)), ", ") + ") AS v(name) WHERE NOT EXISTS (SELECT 1 FROM " + q +
			" WITH (UPDLOCK, HOLDLOCK) WHERE " + q + ".name = v.name)", args}
	case Postgres:
		// One text[] parameter (see sqlSelect).
		return stmt{"INSERT INTO " + q + " (name, expires_at_us) SELECT n, " + d.now + " FROM unnest(CAST(? AS text[])) AS n" +
			" ON CONFLICT (name) DO UPDATE SET expires_at_us = " + d.now + " WHERE " + q + ".holder = ''", []any{pgTextArray(names)}}
	default:
		return stmt{"INSERT INTO " + q + " (name, expires_at_us) VALUES " + d.valuesNow(len(names)) +
			" ON CONFLICT (name) DO UPDATE SET expires_at_us = " + d.now + " WHERE " + q + ".holder = ''", namesArgs(names)}
	}
}

// valuesNow renders "(?, NOW), (?, NOW)" for n names.
func (d *dialect) valuesNow(n int) string {
	return strings.TrimSuffix(strings.Repeat("(?, "+d.now+"), ", n), ", ")
}

// takeable is true for a lease row (table or alias l) that session may
// take: free, expired, held by a dead session, or held by session itself;
// only while session itself is live; and only when no unexpired resign
// preference (prefer_holder, until prefer_until_us by the database clock)
// names another process. Arguments: takeableArgs.
func (d *dialect) takeable(t Tables, l string) string {
	return "(NOT " + d.heldExpr(t, l) + " OR " + l + ".session_id = ?) AND " + d.sessionLive(t, "?", "") +
		" AND (" + l + ".prefer_until_us < " + d.now + " OR " + l + ".prefer_holder IN (?, ?, ?))" + d.takingAllowed(t)
}

// takeableArgs are the arguments of takeable: the session twice, then the
// three forms of the holder a preference may name (HolderForms).
func takeableArgs(session, holder string) []any {
	f := HolderForms(holder)
	return []any{session, session, f[0], f[1], f[2]}
}

// acquireSet starts a new term: the epoch goes up by one (above the
// incarnation's floor, incarnation.go) in the same statement, and a resign request or preference left from an earlier term
// is cleared. Arguments: holder, session.
func (d *dialect) acquireSet(t Tables) string {
	return "holder = ?, session_id = ?, epoch = " + d.nextEpoch(t) + ", acquired_at_us = " + d.now + ", renewed_at_us = " + d.now +
		", expires_at_us = " + heldForever + ", resign_epoch = 0, prefer_holder = '', prefer_until_us = 0"
}

// sqlAcquire takes, for the live session, every named lease that is free,
// expired, held by a dead session or by this session, and starts a new
// term of each. It returns (name, epoch) of each term started, except on
// MySQL (acquireLockThenUpdate), where sqlAcquireLock and
// sqlAcquireTerms do the same in two statements.
func (d *dialect) sqlAcquire(t Tables, session, holder string, names []string) stmt {
	q := d.quote(t.Leases)
	in, inArgs := d.nameIn(names)
	args := append([]any{holder, session}, inArgs...)
	args = append(args, takeableArgs(session, holder)...)
	where := " WHERE " + in + " AND " + d.takeable(t, q)
	if d.name == SQLServer {
		return stmt{"UPDATE " + q + " SET " + d.acquireSet(t) + " OUTPUT inserted.name, inserted.epoch" + where, args}
	}
	return stmt{"UPDATE " + q + " SET " + d.acquireSet(t) + where + " RETURNING name, epoch", args}
}

// nameIn matches the given names: one text[] parameter on PostgreSQL
// (pgNameIn), an IN list elsewhere.
func (d *dialect) nameIn(names []string) (string, []any) {
	if d.name == Postgres {
		return pgNameIn("name"), []any{pgTextArray(names)}
	}
	return "name IN (" + placeholders(len(names)) + ")", namesArgs(names)
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

// sqlLockRows locks the rows of the named leases (lockFirst) for the
// rest of the caller's transaction, in name order.
func (d *dialect) sqlLockRows(t Tables, names []string) stmt {
	in, args := d.nameIn(names)
	return d.lockRowsWhere(t, in, args)
}

// sqlLockDead locks, as sqlLockRows does, the rows under a name prefix
// (lo, hi from prefixRange) that look dead (sqlPruneDead) on the
// statement's snapshot: candidates for a prune, which sqlPruneNames then
// checks again. Live rows are neither locked nor waited for.
func (d *dialect) sqlLockDead(t Tables, lo, hi string, grace time.Duration) stmt {
	return d.lockRowsWhere(t, prefixFilter+" AND "+d.deadExpr(t, d.quote(t.Leases), grace), []any{lo, hi})
}

func (d *dialect) lockRowsWhere(t Tables, where string, args []any) stmt {
	q := d.quote(t.Leases)
	if d.name == SQLServer {
		return stmt{"SELECT name FROM " + q + " WITH (UPDLOCK, ROWLOCK) WHERE " + where + " ORDER BY name", args}
	}
	return stmt{"SELECT name FROM " + q + " WHERE " + where + " ORDER BY name FOR UPDATE", args}
}

// sqlAcquireLock is the locking read of a MySQL acquire: it locks the
// named leases this session can take and reads their epochs.
func (d *dialect) sqlAcquireLock(t Tables, session, holder string, names []string) stmt {
	q := d.quote(t.Leases)
	args := append(namesArgs(names), takeableArgs(session, holder)...)
	return stmt{"SELECT name, epoch FROM " + q + " WHERE name IN (" + placeholders(len(names)) + ") AND " +
		d.takeable(t, q) + " FOR UPDATE", args}
}

// sqlAcquireTerms is the update of a MySQL acquire: it starts a new term
// of exactly the terms sqlAcquireLock locked.
func (d *dialect) sqlAcquireTerms(t Tables, session, holder string, terms []Term) stmt {
	filter, targs := termsFilter(terms)
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET " + d.acquireSet(t) + " WHERE " + filter,
		append([]any{holder, session}, targs...)}
}

// sqlRelease gives up the given terms of a session: the holder is cleared
// and the lease is free at once. The epoch is kept, so it is never reused.
// A term that is not this session's at that epoch is left untouched.
func (d *dialect) sqlRelease(t Tables, session string, terms []Term) stmt {
	q := d.quote(t.Leases)
	set := "UPDATE " + q + " SET holder = '', session_id = '', expires_at_us = " + d.now
	if d.name == Postgres && len(terms) > 1 {
		// PostgreSQL plans a long OR list slowly; a join with the terms as
		// two arrays (one parameter each, see sqlSelect) is one hash join.
		names := make([]string, len(terms))
		epochs := make([]string, len(terms))
		for i, t := range terms {
			names[i], epochs[i] = t.Name, strconv.FormatInt(t.Epoch, 10)
		}
		return stmt{set + " FROM unnest(CAST(? AS text[]), CAST(? AS bigint[])) AS t(name, epoch) WHERE " + q +
			".session_id = ? AND " + q + ".name = t.name AND " + q + ".epoch = t.epoch",
			[]any{pgTextArray(names), "{" + strings.Join(epochs, ",") + "}", session}}
	}
	filter, args := termsFilter(terms)
	return stmt{set + " WHERE session_id = ? AND " + filter, append([]any{session}, args...)}
}

// sqlReleaseNotify is sqlRelease on PostgreSQL, in one statement that
// also notifies the listeners of the tables (wake.go) with the names of
// the leases it freed, when it freed any. The notification is sent at
// commit, so nobody is woken for a release that did not happen. It
// returns one row: the count and an empty string.
func (d *dialect) sqlReleaseNotify(t Tables, session string, terms []Term) stmt {
	up := d.sqlRelease(t, session, terms)
	q := d.quote(t.Leases)
	return stmt{"WITH r AS (" + up.q + " RETURNING " + q + ".name), a AS (SELECT count(*) AS n, string_agg(name, E'\\n') AS names FROM r) " +
		"SELECT n, CASE WHEN n = 0 THEN '' ELSE CAST(pg_notify(?, CASE WHEN octet_length(names) <= " + strconv.Itoa(maxWakePayload) +
		" THEN names ELSE '' END) AS text) END FROM a", append(up.args, wakeChannel(t))}
}

// sqlNotify notifies the listeners of the tables (PostgreSQL).
func (d *dialect) sqlNotify(t Tables, payload string) stmt {
	return stmt{"SELECT CAST(pg_notify(?, ?) AS text)", []any{wakeChannel(t), payload}}
}

// sqlListen subscribes the connection to the tables' notifications
// (PostgreSQL). The channel is the lease table's name: an identifier of
// ASCII letters, digits and '_' (TablesFor), quoted.
func (d *dialect) sqlListen(t Tables) string { return "LISTEN " + d.quote(wakeChannel(t)) }

// sqlBeginDecide begins the transaction of a decision (Store.decideTx)
// by a statement, on the listening connection (PostgreSQL).
func (d *dialect) sqlBeginDecide() string { return "BEGIN ISOLATION LEVEL READ COMMITTED" }

// sqlDatabaseFile reads the file of the main database (SQLite), "" for
// one in memory.
func (d *dialect) sqlDatabaseFile() string {
	return "SELECT file FROM pragma_database_list WHERE name = 'main'"
}

// sqlRequestResign records a resign request for one term of a lease,
// fenced by session and epoch, so it never touches a later term. prefer,
// when set, names the process that should take the lease next, and holds
// every other one off until window has passed by the database clock.
func (d *dialect) sqlRequestResign(t Tables, session string, term Term, prefer string, window time.Duration) stmt {
	until := "0"
	if prefer != "" {
		until = d.now + " + " + us(window)
	}
	e := strconv.FormatInt(term.Epoch, 10)
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET resign_epoch = " + e + ", prefer_holder = ?, prefer_until_us = " + until +
		" WHERE name = ? AND epoch = " + e + " AND session_id = ?", []any{prefer, term.Name, session}}
}

// sqlWriteLock takes, where writers exclude each other (SQLite), the
// database's write lock for the rest of the caller's transaction without
// changing a row, and returns no rows.
func (d *dialect) sqlWriteLock(t Tables) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET epoch = epoch WHERE 1 = 0 RETURNING name", nil}
}

// sqlPendingResigns reads which of the named leases held by a session have
// a resign request for their current term.
func (d *dialect) sqlPendingResigns(t Tables, session string, names []string) stmt {
	in, args := d.nameIn(names)
	return stmt{"SELECT name, epoch FROM " + d.quote(t.Leases) + " WHERE " + in +
		" AND session_id = ? AND resign_epoch = epoch AND resign_epoch > 0", append(args, session)}
}

// sqlSelect reads the named leases together with the database clock.
// PostgreSQL gets the names as one text[] parameter, matched with a
// semi-join (pgNameIn).
func (d *dialect) sqlSelect(t Tables, names []string) stmt {
	q := "SELECT " + d.rowColumns(t, true) + d.readFrom(t)
	if d.name == Postgres {
		return stmt{q + " WHERE " + pgNameIn("l.name"), []any{pgTextArray(names)}}
	}
	return stmt{q + " WHERE l.name IN (" + placeholders(len(names)) + ")", namesArgs(names)}
}

// pgNameIn matches column against the names of one text[] parameter, as
// a semi-join with the unnested array, never as "column = ANY(array)".
//
// pgx's default statement cache prepares each statement text once per
// connection, and after five executions PostgreSQL may keep a generic
// plan, made without the parameter's value. A generic plan made while the
// lease table was small (a new deployment, never analyzed) scans the table
// and, for "= ANY($1)", compares every row with every element of the
// array in turn: the array is a parameter, so it is not hashed. The plan
// stays until the table is analyzed. One process that held 10,000 leases
// and campaigned for 90,000 more then read 1,000 names in 200 to 300 ms at
// 15,000 rows, so its round spent 20 s in its reads before acquiring
// anything, and stalled (the renew section of the bench; a thousand "?"
// per statement behaved the same way, the array in a generic plan being
// of parameters). A semi-join's generic plan on a small table hashes the
// names and scans the table once, a few milliseconds at 50,000 rows (the
// test TestNamesMatchedFastOnGenericPlansOfASmallTable: 10,000 names read
// in 0.14 s, where "= ANY" took 4.3 s); with statistics it looks each
// name up in the primary key.
func pgNameIn(column string) string {
	return column + " IN (SELECT unnest(CAST(? AS text[])))"
}

// pgTextArray renders names as a PostgreSQL text[] literal, each element
// quoted, for one bound parameter.
func pgTextArray(names []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(n))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// sqlList reads every lease, or those whose name starts with a prefix:
// lo and hi are the bounds from prefixRange, or "" for all.
func (d *dialect) sqlList(t Tables, lo, hi string) stmt {
	q := "SELECT " + d.rowColumns(t, true) + d.readFrom(t)
	if lo == "" {
		return stmt{q + " ORDER BY l.name", nil}
	}
	return stmt{q + " WHERE " + strings.ReplaceAll(prefixFilter, "name", "l.name") + " ORDER BY l.name", []any{lo, hi}}
}

// sqlNow reads the database clock alone.
func (d *dialect) sqlNow() stmt {
	return stmt{"SELECT " + d.now + " AS now_us", nil}
}

// sqlFence reads one lease inside the caller's transaction and locks its
// row, and only its row, against a change of holder until that transaction
// ends: a share lock on PostgreSQL and MySQL, a held shared row lock on
// SQL Server. The session's expiry is read by a subquery, which takes no
// lock that lasts (MySQL does not lock a subquery's rows for a locking
// read of the outer query), so a fenced transaction never holds off the
// renewal of the holder's session. SQLite needs no lock hint: a writing
// transaction already excludes every other writer, and a deferred one that
// read a stale snapshot cannot commit a write.
func (d *dialect) sqlFence(t Tables, name string) stmt {
	base := "SELECT " + d.rowColumns(t, false) + " FROM " + d.quote(t.Leases) + " l"
	switch d.name {
	case Postgres:
		return stmt{base + " WHERE l.name = ? FOR SHARE OF l", []any{name}}
	case MySQL:
		return stmt{base + " WHERE l.name = ? LOCK IN SHARE MODE", []any{name}}
	case SQLServer:
		return stmt{base + " WITH (HOLDLOCK, ROWLOCK) WHERE l.name = ?", []any{name}}
	default:
		return stmt{base + " WHERE l.name = ?", []any{name}}
	}
}

// sqlSetData writes a term's data, only while the term is this live
// session's.
func (d *dialect) sqlSetData(t Tables, session string, term Term, data string) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET data = ? WHERE name = ? AND epoch = " + strconv.FormatInt(term.Epoch, 10) +
		" AND session_id = ? AND " + d.sessionLive(t, "?", ""), []any{data, term.Name, session, session}}
}

// sqlPublish is the compare-and-set that publishes a pool's next
// generation: one above from, or above the incarnation's floor, and only
// where a lease could be taken now (incarnation.go).
func (d *dialect) sqlPublish(t Tables, name string, from int64, data string) stmt {
	return stmt{"UPDATE " + d.quote(t.Leases) + " SET epoch = " + d.nextEpoch(t) + ", data = ?, renewed_at_us = " + d.now +
		" WHERE name = ? AND holder = '' AND epoch = " + strconv.FormatInt(from, 10) + d.takingAllowed(t), []any{data, name}}
}

// sqlPruneDead deletes the rows under a name prefix (lo, hi from
// prefixRange) that nobody holds or is about to hold, by the database
// clock: rows unheld (released, or created and never acquired) for longer
// than grace, rows of builds before sessions expired for longer than
// grace, and rows whose session has been expired, or gone, for longer
// than grace.
func (d *dialect) sqlPruneDead(t Tables, lo, hi string, grace time.Duration) stmt {
	q := d.quote(t.Leases)
	return stmt{"DELETE FROM " + q + " WHERE " + prefixFilter + " AND " + d.deadExpr(t, q, grace), []any{lo, hi}}
}

// sqlPruneNames deletes those of the named rows (locked by sqlLockDead)
// that are dead, as sqlPruneDead judges them.
func (d *dialect) sqlPruneNames(t Tables, names []string, grace time.Duration) stmt {
	q := d.quote(t.Leases)
	in, args := d.nameIn(names)
	return stmt{"DELETE FROM " + q + " WHERE " + in + " AND " + d.deadExpr(t, q, grace), args}
}

// deadExpr is true for a lease row (table or alias l) nobody holds or is
// about to hold, for longer than grace by the database clock.
func (d *dialect) deadExpr(t Tables, l string, grace time.Duration) string {
	old := d.now + " - " + us(grace)
	return "((" + l + ".session_id = '' AND " + l + ".expires_at_us < " + old +
		") OR (" + l + ".session_id <> '' AND NOT " + d.sessionLive(t, l+".session_id", us(grace)) + "))"
}

// ----------------------------------------------------------------------
// Schema

// column describes one column of a table in the schema.
type column struct {
	name string
	typ  func(*dialect) string
	def  string // default value literal, "" for none
}

func nameCol(d *dialect) string   { return d.nameType }
func bigintCol(d *dialect) string { return d.bigintType }
func intCol(d *dialect) string    { return d.intType }

// textCol is the type of the data column where it takes a default: not on
// MySQL, whose TEXT columns took none before 8.0.13 (see addDataColumn).
func textCol(d *dialect) string {
	if d.name == SQLServer {
		return "NVARCHAR(MAX)"
	}
	return "TEXT"
}

// createTable renders an idempotent CREATE TABLE for the dialect.
func (d *dialect) createTable(table string, pk string, cols []column) string {
	var b strings.Builder
	if d.name == SQLServer {
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
	b.WriteString(d.createTableSuffix)
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
	switch d.name {
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
	switch d.name {
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
	switch d.name {
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
	if d.name != MySQL {
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
	switch d.name {
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
	switch d.name {
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
	if d.name == SQLServer {
		return "LEN(" + s + ")"
	}
	return "LENGTH(" + s + ")"
}

// substr is the substring of s from 1-based position from, n long.
func (d *dialect) substr(s, from, n string) string {
	if d.name == SQLServer {
		return "SUBSTRING(" + s + ", " + from + ", " + n + ")"
	}
	return "SUBSTR(" + s + ", " + from + ", " + n + ")"
}

// lastSlash is the 1-based position of the last '/' in col, which must
// contain one.
func (d *dialect) lastSlash(col string) string {
	switch d.name {
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
	if d.name == MySQL {
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
	switch d.name {
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
	ins := "INSERT INTO " + q + " (version, description, applied_at_us) VALUES (" + v + ", " + description + ", " + d.now + ")"
	switch d.name {
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
	if d.name != MySQL {
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
	switch d.name {
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
	switch d.name {
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
