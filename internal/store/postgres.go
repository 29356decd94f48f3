package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/wake"
)

// postgresFacts are PostgreSQL's facts. It detects failovers
// (incarnation.go).
var postgresFacts = facts{
	name:  Postgres,
	now:   postgresNow,
	quote: quoteDouble,
	// incarnationExpr is the cluster's system identifier, which a restore
	// into a new cluster changes, and the timeline of the WAL being
	// written, which every promotion and point-in-time recovery raises.
	// Both are readable by any role, and only on a server that accepts
	// writes.
	incarnationExpr: "(SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || " +
		"substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)",
	acquire:          acquireReturning,
	renewReturnsRows: true,
	lockRows:         lockClause{suffix: " FOR UPDATE"},
	firstRows:        limitTail,
	types:            columnTypes{name: `VARCHAR(255) COLLATE "C"`, bigint: "BIGINT", integer: "INTEGER", text: "TEXT"},
	wakes:            wake.Through,
	serverConn:       "pg_backend_pid()",
	keptStatements: func(alias string) string {
		return "SELECT count(*) AS " + alias + " FROM pg_prepared_statements WHERE strpos(statement, ?) > 0"
	},
}

// postgresNow: statement_timestamp() is constant within one statement and,
// unlike now(), advances inside a long transaction, which matters for the
// fencing check that runs inside the caller's transaction.
const postgresNow = "CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)"

// postgresDialect is PostgreSQL, through pgx (gorm.io/driver/postgres).
func postgresDialect() *dialect {
	s := postgresSchema{facts: postgresFacts}
	return newDialect(postgresFacts, postgresDB{}, s)
}

// postgresDB is PostgreSQL's runtime type. It wakes the other processes
// with LISTEN/NOTIFY.
type postgresDB struct {
	returningClause
	onConflict
	plainSteps
}

var _ database = postgresDB{}

// nameIn matches col against the names of one text[] parameter
// (pgNameIn).
func (postgresDB) nameIn(col string, names []string) (string, []any) {
	return pgNameIn(col), []any{pgTextArray(names)}
}

// whereTerms: PostgreSQL plans a long OR list slowly; a join with the
// terms as two arrays (one parameter each, see sqlSelect) is one hash
// join.
func (postgresDB) whereTerms(q, session string, terms []Term) (string, []any) {
	if len(terms) <= 1 {
		return sessionTermsWhere(session, terms)
	}
	names := make([]string, len(terms))
	epochs := make([]string, len(terms))
	for i, t := range terms {
		names[i], epochs[i] = t.Name, strconv.FormatInt(t.Epoch, 10)
	}
	return " FROM unnest(CAST(? AS text[]), CAST(? AS bigint[])) AS t(name, epoch) WHERE " + q +
			".session_id = ? AND " + q + ".name = t.name AND " + q + ".epoch = t.epoch",
		[]any{pgTextArray(names), "{" + strings.Join(epochs, ",") + "}", session}
}

// sqlEnsureRows takes the names as one text[] parameter (see sqlSelect).
func (p postgresDB) sqlEnsureRows(t Tables, names []string) stmt {
	q := quoteDouble(t.Leases)
	return stmt{"INSERT INTO " + q + " (name, expires_at_us) SELECT n, " + postgresNow + " FROM unnest(CAST(? AS text[])) AS n" +
		p.touchUnheld(q, postgresNow), []any{pgTextArray(names)}}
}

// lockForShare takes a share lock on the rows of the alias alone.
func (postgresDB) lockForShare(alias string) (hint, suffix string) {
	return "", " FOR SHARE OF " + alias
}

// postgresSchema is PostgreSQL's schema: DDL that says "if not exists"
// itself, and transactional.
type postgresSchema struct {
	facts
	keyLockName
	inPlaceColumns
	guardedDDL
	onConflictDDL
	sqlStrings
	notExistsRename
}

var _ schemaType = postgresSchema{}

func (postgresSchema) createTableIf(string) string { return createTableIfNotExists }

func (p postgresSchema) addColumn(table string, c column) string {
	return alterAdd(p.facts, table, "ADD COLUMN IF NOT EXISTS ", []column{c})
}

func (p postgresSchema) addColumns(table string, cols []column) []string {
	return []string{alterAdd(p.facts, table, "ADD COLUMN IF NOT EXISTS ", cols)}
}

func (postgresSchema) hasColumn(_, _ string) string { return "" }

func (p postgresSchema) addDataColumn(table string) string {
	return "ALTER TABLE " + p.quote(table) + " ADD COLUMN IF NOT EXISTS data TEXT NOT NULL DEFAULT ''"
}

func (postgresSchema) concat(parts ...string) string { return strings.Join(parts, " || ") }

func (postgresSchema) lastSlash(col string) string {
	return "(LENGTH(" + col + ") - STRPOS(REVERSE(" + col + "), '/') + 1)"
}

// migrationLock is a transaction-level advisory lock, waited for up to
// timeout.
func (postgresSchema) migrationLock(t Tables, timeout time.Duration) lockSQL {
	return lockSQL{
		setup:   "SET LOCAL lock_timeout = " + strconv.FormatInt(timeout.Milliseconds(), 10),
		acquire: "SELECT pg_advisory_xact_lock(" + strconv.FormatInt(advisoryKey(migrationLockKey(t)), 10) + ")",
	}
}

// withMigrationLock: DDL is transactional on PostgreSQL: lock, migrate and
// record in one transaction; the lock ends with it.
func (p postgresSchema) withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error {
	lock := p.migrationLock(t, timeout)
	return db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(lock.setup).Error; err != nil {
			return err
		}
		if err := tx.Exec(lock.acquire).Error; err != nil {
			return fmt.Errorf("%w: %w", ErrMigrationLock, err)
		}
		return apply(tx, inRun)
	})
}

// The wake-ups through the database (wake.go). The notifications are sent
// at commit, so nobody is woken for a change that did not happen.

// releaseNotify is release in one statement that also notifies the
// listeners of the tables with the names of the leases it freed. Its one
// row is the count and an empty string.
func (postgresDB) releaseNotify(t Tables, release stmt) counted {
	q := quoteDouble(t.Leases)
	return counted{stmt{"WITH r AS (" + release.q + " RETURNING " + q + ".name), a AS (SELECT count(*) AS n, string_agg(name, E'\\n') AS names FROM r) " +
		"SELECT n, CASE WHEN n = 0 THEN '' ELSE CAST(pg_notify(?, CASE WHEN octet_length(names) <= " + strconv.Itoa(wake.MaxPayload) +
		" THEN names ELSE '' END) AS text) END FROM a", append(release.args, wakeChannel(t))}, true}
}

// writeNotify is write in one statement that also notifies the listeners
// of the tables with payload when it changed a row. Its one row is the
// count and an empty string.
func (postgresDB) writeNotify(t Tables, write stmt, payload string) counted {
	return counted{stmt{"WITH w AS (" + write.q + " RETURNING 1), a AS (SELECT count(*) AS n FROM w) " +
		"SELECT n, CASE WHEN n = 0 THEN '' ELSE CAST(pg_notify(?, ?) AS text) END FROM a",
		append(slices.Clone(write.args), wakeChannel(t), payload)}, true}
}

func (postgresDB) sqlNotify(channel, payload string) stmt { return pgNotify(channel, payload) }

// pgNotify notifies the listeners of channel.
func pgNotify(channel, payload string) stmt {
	return stmt{"SELECT CAST(pg_notify(?, ?) AS text)", []any{channel, payload}}
}

// pgListen subscribes the connection to channel, an identifier of ASCII
// letters, digits and '_' (wakeChannel, probeChannel).
func pgListen(channel string) string { return "LISTEN " + quoteDouble(channel) }

// pgUnlisten ends the connection's subscription to channel.
func pgUnlisten(channel string) string { return "UNLISTEN " + quoteDouble(channel) }

// pgBeginDecide begins the transaction of a decision (gate.decideTx) on
// the listening connection.
const pgBeginDecide = "BEGIN ISOLATION LEVEL READ COMMITTED"

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

// sqlCountTables is the statement of gorm's HasTable on PostgreSQL.
func (postgresDB) sqlCountTables(table string) stmt {
	return stmt{"SELECT count(*) FROM information_schema.tables WHERE table_schema = CURRENT_SCHEMA() AND table_name = ? AND table_type = 'BASE TABLE'",
		[]any{table}}
}
