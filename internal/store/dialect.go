package store

import (
	"fmt"
	"strconv"
	"strings"
)

// This file is the only place in leasehold that knows how the supported
// databases differ. Every statement the library sends is built here, from
// one template per operation, so the differences stay visible side by side:
//
//   - the database clock, read as microseconds since the Unix epoch;
//   - how an insert-if-absent tolerates a concurrent insert;
//   - how the acquire statement hands back the new epoch (RETURNING,
//     OUTPUT, or, since MariaDB has no UPDATE ... RETURNING, a read of the
//     row in the acquire's own transaction);
//   - how a fencing read locks the lease row inside the caller's
//     transaction;
//   - how concurrent migrations are serialised;
//   - whether a writing transaction excludes every other writer on the
//     whole database (SQLite), so that a fenced transaction keeps the
//     holder's renewal out until it ends;
//   - the column types of the schema.
//
// Integers that come from the library itself (TTLs, epochs read from the
// database) are written into the SQL as literals. Strings (names, holders)
// are always bound parameters written as '?'; gorm rewrites them to the
// dialect's placeholder ($1, @p1) on the way out.

// Dialect names as reported by gorm's Dialector.Name().
const (
	Postgres  = "postgres"
	MySQL     = "mysql"
	SQLite    = "sqlite"
	SQLServer = "sqlserver"
)

// Dialects lists the supported dialect names.
var Dialects = []string{Postgres, MySQL, SQLite, SQLServer}

// acquireResult says how the acquire statement reports the new epoch.
type acquireResult int

const (
	// resultRows: the statement returns a one-column result set (RETURNING
	// or OUTPUT) with the new epoch, or no row when the acquire lost.
	resultRows acquireResult = iota
	// resultReadBack: the statement returns nothing; it runs in an explicit
	// transaction that reads the new epoch back (sqlAcquiredEpoch) under
	// the row lock the UPDATE took, then commits (MySQL, MariaDB).
	resultReadBack
	// resultRowsInTx: as resultRows, but the statement runs inside an
	// explicit transaction that commits only after the epoch has reached
	// the client (PostgreSQL). A statement that waits on a row lock does
	// not notice that its client gave up: in autocommit it would run on
	// and commit once the lock is freed, taking a term nobody runs.
	resultRowsInTx
)

// dialect holds the SQL fragments of one database.
type dialect struct {
	name string

	// now is an expression for the database clock in microseconds since
	// the Unix epoch, as a 64-bit integer.
	now string

	// quote quotes one identifier.
	quote func(string) string

	// acquireResult says how the new epoch comes back from acquire.
	acquireResult acquireResult

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
		now:           "CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)",
		quote:         quoteDouble,
		acquireResult: resultRowsInTx,
		nameType:      "VARCHAR(255) COLLATE \"C\"",
		bigintType:    "BIGINT",
		intType:       "INTEGER",
	},
	MySQL: {
		name: MySQL,
		// UTC_TIMESTAMP(6) is constant within a statement and independent of
		// the session time zone; TIMESTAMPDIFF between two DATETIMEs does no
		// time-zone conversion either.
		now:           "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))",
		quote:         quoteBacktick,
		acquireResult: resultReadBack,
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
		acquireResult: resultRows,
		serialWriters: true,
		nameType:      "TEXT",
		bigintType:    "INTEGER",
		intType:       "INTEGER",
	},
	SQLServer: {
		name: SQLServer,
		// DATEDIFF_BIG needs SQL Server 2016 or newer.
		now:           "DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())",
		quote:         quoteBracket,
		acquireResult: resultRows,
		// NVARCHAR because go-mssqldb binds Go strings as NVARCHAR: a VARCHAR
		// key compared with an NVARCHAR parameter is converted row by row and
		// loses its index seek. Binary collation: byte-for-byte comparison,
		// as on the others.
		nameType:   "NVARCHAR(255) COLLATE Latin1_General_BIN2",
		bigintType: "BIGINT",
		intType:    "INT",
	},
}

func quoteDouble(s string) string   { return `"` + s + `"` }
func quoteBacktick(s string) string { return "`" + s + "`" }
func quoteBracket(s string) string  { return "[" + s + "]" }

// lookupDialect returns the dialect with the given gorm name.
func lookupDialect(name string) (*dialect, error) {
	d, ok := dialects[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (supported: %s)", ErrUnsupportedDialect, name, strings.Join(Dialects, ", "))
	}
	return d, nil
}

// Term identifies one term of one lease: the name and the epoch it was
// acquired with.
type Term struct {
	Name  string
	Epoch int64
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// termFilter returns the WHERE clause that matches exactly the given terms
// of one holder, and its arguments. For one term it is a plain equality; for
// several, an IN list on the primary key plus a CASE that gives each name
// its own epoch, so one statement covers any number of leases and still
// checks every epoch.
func (d *dialect) termFilter(holder string, terms []Term) (string, []any) {
	args := []any{holder}
	if len(terms) == 1 {
		args = append(args, terms[0].Name)
		return "holder = ? AND name = ? AND epoch = " + strconv.FormatInt(terms[0].Epoch, 10), args
	}
	var b strings.Builder
	b.WriteString("holder = ? AND name IN (")
	b.WriteString(placeholders(len(terms)))
	b.WriteString(") AND epoch = CASE name")
	for _, t := range terms {
		args = append(args, t.Name)
	}
	for _, t := range terms {
		b.WriteString(" WHEN ? THEN ")
		b.WriteString(strconv.FormatInt(t.Epoch, 10))
		args = append(args, t.Name)
	}
	b.WriteString(" END")
	return b.String(), args
}

// sqlInsertIfAbsent creates the row of a lease that has never been used,
// and does nothing (and does not fail) when it exists, also when another
// process inserts it at the same moment.
func (d *dialect) sqlInsertIfAbsent(table string) (string, int) {
	switch d.name {
	case MySQL:
		// Not INSERT IGNORE: that would also turn real errors into warnings.
		return "INSERT INTO " + table + " (name) VALUES (?) ON DUPLICATE KEY UPDATE name = name", 1
	case SQLServer:
		// UPDLOCK+HOLDLOCK take a key-range lock, so two concurrent inserts
		// queue instead of one failing with a duplicate key.
		return "INSERT INTO " + table + " (name) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM " + table +
			" WITH (UPDLOCK, HOLDLOCK) WHERE name = ?)", 2
	default:
		return "INSERT INTO " + table + " (name) VALUES (?) ON CONFLICT (name) DO NOTHING", 1
	}
}

// sqlAcquire takes a lease that is free, expired or already ours, and
// always starts a new term: the epoch goes up by one in the same statement.
// Arguments: holder, name, holder.
func (d *dialect) sqlAcquire(table string, ttlMicros int64) string {
	ttl := strconv.FormatInt(ttlMicros, 10)
	set := "holder = ?, epoch = epoch + 1, acquired_at_us = " + d.now + ", renewed_at_us = " + d.now +
		", expires_at_us = " + d.now + " + " + ttl
	where := " WHERE name = ? AND (holder = '' OR holder = ? OR expires_at_us < " + d.now + ")"
	switch d.name {
	case SQLServer:
		return "UPDATE " + table + " SET " + set + " OUTPUT inserted.epoch" + where
	case MySQL:
		return "UPDATE " + table + " SET " + set + where
	default:
		return "UPDATE " + table + " SET " + set + where + " RETURNING epoch"
	}
}

// sqlAcquiredEpoch reads the epoch an acquire just set, inside the
// acquire's transaction, where the UPDATE's row lock keeps it from moving.
// Used where the acquire statement cannot return it (resultReadBack).
// Arguments: name.
func (d *dialect) sqlAcquiredEpoch(table string) string {
	return "SELECT epoch FROM " + table + " WHERE name = ?"
}

// sqlRenew extends every given term that this holder still holds and that
// has not expired by the database clock. It renews all of them in one
// statement; the caller learns which ones from the affected-row count and,
// only when that falls short, one read.
func (d *dialect) sqlRenew(table string, ttlMicros int64, holder string, terms []Term) (string, []any) {
	filter, args := d.termFilter(holder, terms)
	return "UPDATE " + table + " SET renewed_at_us = " + d.now + ", expires_at_us = " + d.now + " + " +
		strconv.FormatInt(ttlMicros, 10) + " WHERE " + filter + " AND expires_at_us >= " + d.now, args
}

// sqlRelease gives up the given terms: the holder is cleared and the lease
// expires now, so a follower can take it on its next attempt. The epoch is
// kept, so it is never reused.
func (d *dialect) sqlRelease(table, holder string, terms []Term) (string, []any) {
	filter, args := d.termFilter(holder, terms)
	return "UPDATE " + table + " SET holder = '', expires_at_us = " + d.now + " WHERE " + filter, args
}

// rowColumns is the column list read back for a lease, ending with the
// database clock.
func (d *dialect) rowColumns() string {
	return "name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), " + d.now + " AS now_us"
}

// sqlSelect reads the given leases together with the database clock.
func (d *dialect) sqlSelect(table string, n int) string {
	return "SELECT " + d.rowColumns() + " FROM " + table + " WHERE name IN (" + placeholders(n) + ")"
}

// sqlList reads every lease, or those whose name starts with a prefix.
// Arguments with a prefix: the bounds from prefixRange.
func (d *dialect) sqlList(table string, withPrefix bool) string {
	q := "SELECT " + d.rowColumns() + " FROM " + table
	if withPrefix {
		q += " WHERE " + prefixFilter
	}
	return q + " ORDER BY name"
}

// sqlNow reads the database clock alone.
func (d *dialect) sqlNow() string {
	return "SELECT " + d.now + " AS now_us"
}

// sqlFence reads one lease inside the caller's transaction and locks it
// against a change of holder until that transaction ends: a share lock on
// PostgreSQL and MySQL, a held shared row lock on SQL Server. SQLite needs
// no lock hint: a writing transaction already excludes every other writer,
// and a deferred one that read a stale snapshot cannot commit a write.
func (d *dialect) sqlFence(table string) string {
	base := "SELECT " + d.rowColumns() + " FROM " + table
	switch d.name {
	case Postgres:
		return base + " WHERE name = ? FOR SHARE"
	case MySQL:
		return base + " WHERE name = ? LOCK IN SHARE MODE"
	case SQLServer:
		return base + " WITH (HOLDLOCK, ROWLOCK) WHERE name = ?"
	default:
		return base + " WHERE name = ?"
	}
}

// prefixFilter matches the names that start with a prefix, as a range of
// the primary key: "name >= lo AND name < hi" with the bounds from
// prefixRange. Every name column compares byte for byte (see the dialects'
// nameType), so the range is exact on every database. LIKE is not: on
// SQLite it ignores the case of ASCII letters, so the prefix of pool "a"
// would also match the rows of pool "A".
const prefixFilter = "name >= ? AND name < ?"

// prefixRange returns the bounds of prefixFilter for a non-empty prefix:
// the prefix itself, and the smallest string above every string that
// starts with it (the prefix with its last byte incremented, after
// dropping trailing 0xff bytes). Names are ASCII, so a prefix made only of
// 0xff bytes is refused.
func prefixRange(prefix string) (lo, hi string, err error) {
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", "", fmt.Errorf("leasehold: name prefix %q has no upper bound", prefix)
	}
	b[len(b)-1]++
	return prefix, string(b), nil
}

// sqlSetData writes a term's data, only while the term is live.
func (d *dialect) sqlSetData(table, holder string, t Term, data string) (string, []any) {
	filter, args := d.termFilter(holder, []Term{t})
	return "UPDATE " + table + " SET data = ? WHERE " + filter + " AND expires_at_us >= " + d.now,
		append([]any{data}, args...)
}

// sqlPublish is the compare-and-set that publishes a pool's next
// generation. Arguments: data, name.
func (d *dialect) sqlPublish(table string, from int64) string {
	return "UPDATE " + table + " SET epoch = epoch + 1, data = ?, renewed_at_us = " + d.now +
		" WHERE name = ? AND holder = '' AND epoch = " + strconv.FormatInt(from, 10)
}

// sqlPruneDead deletes the rows under a name prefix that are released, or
// expired for longer than graceMicros, by the database clock. Arguments:
// the bounds from prefixRange.
func (d *dialect) sqlPruneDead(table string, graceMicros int64) string {
	return "DELETE FROM " + table + " WHERE " + prefixFilter + " AND expires_at_us < " + d.now +
		" AND (holder = '' OR expires_at_us < " + d.now + " - " + strconv.FormatInt(graceMicros, 10) + ")"
}
