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
	// The cluster's system identifier and the timeline of the WAL being
	// written.
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

// postgresNow: statement_timestamp() is constant within one statement and
// advances inside a long transaction, such as the caller's fenced one.
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

// whereTerms: a join with the terms as two array parameters, one hash
// join where a long OR list plans slowly.
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

// postgresSchema is PostgreSQL's schema: DDL that says "if not exists",
// and transactional.
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

// withMigrationLock: lock, migrate and record in one transaction.
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

// The wake-ups through the database (wake.go), sent at commit.

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
// a semi-join with the unnested array, whose generic plan stays fast on a
// table that was small when it was planned (never "= ANY(array)").
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
