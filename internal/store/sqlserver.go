package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// sqlserverFacts are the facts of SQL Server 2016 or newer
// (gorm.io/driver/sqlserver).
var sqlserverFacts = facts{
	name:  SQLServer,
	now:   sqlserverNow,
	quote: quoteBracket,
	// The name of the server instance answering.
	incarnationExpr:  "CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255))",
	acquire:          acquireReturning,
	renewReturnsRows: true,
	lockRows:         lockClause{hint: " WITH (UPDLOCK, ROWLOCK)"},
	firstRows:        sqlserverTop,
	// NVARCHAR names, as go-mssqldb binds strings; binary collation.
	types:    columnTypes{name: "NVARCHAR(255) COLLATE Latin1_General_BIN2", bigint: "BIGINT", integer: "INT", text: "NVARCHAR(MAX)"},
	batchEnd: "GO\n",
}

// sqlserverNow: DATEDIFF_BIG needs SQL Server 2016 or newer.
const sqlserverNow = "DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())"

// sqlserverTop limits a SELECT to its first n rows with TOP.
func sqlserverTop(n int) (top, tail string) { return "TOP (" + strconv.Itoa(n) + ") ", "" }

// sqlserverDialect is SQL Server.
func sqlserverDialect() *dialect {
	s := sqlserverSchema{facts: sqlserverFacts}
	return newDialect(sqlserverFacts, sqlserverDB{}, s)
}

// sqlserverDB is SQL Server's runtime type.
type sqlserverDB struct {
	inLists
	plainSteps
}

var _ database = sqlserverDB{}

// returning hands back the changed rows with OUTPUT, between the SET and
// the WHERE clauses.
func (sqlserverDB) returning(cols ...string) (afterSet, afterWhere string) {
	return " OUTPUT inserted." + strings.Join(cols, ", inserted."), ""
}

// sqlEnsureRows: UPDLOCK+HOLDLOCK make concurrent inserts queue.
func (sqlserverDB) sqlEnsureRows(t Tables, names []string) stmt {
	q := quoteBracket(t.Leases)
	args := append(namesArgs(names), namesArgs(names)...)
	return stmt{"UPDATE " + q + " SET expires_at_us = " + sqlserverNow + " WHERE name IN (" + placeholders(len(names)) + ") AND holder = ''; " +
		"INSERT INTO " + q + " (name, expires_at_us) SELECT v.name, " + sqlserverNow + " FROM (VALUES " +
		strings.TrimSuffix(strings.Repeat("(?), ", len(names)), ", ") + ") AS v(name) WHERE NOT EXISTS (SELECT 1 FROM " + q +
		" WITH (UPDLOCK, HOLDLOCK) WHERE " + q + ".name = v.name)", args}
}

// lockForShare holds a shared row lock until the transaction ends.
func (sqlserverDB) lockForShare(string) (hint, suffix string) { return " WITH (HOLDLOCK, ROWLOCK)", "" }

// insertOnceConcurrent: UPDLOCK+HOLDLOCK make concurrent inserts queue.
func (sqlserverDB) insertOnceConcurrent(into, values, q, key, value string) string {
	return into + "SELECT " + values + " WHERE NOT EXISTS (SELECT 1 FROM " + q + " WITH (UPDLOCK, HOLDLOCK) WHERE " + key + " = " +
		value + ")"
}

// sqlserverSchema is SQL Server's schema: DDL guarded by IF, and
// transactional.
type sqlserverSchema struct {
	facts
	keyLockName
	inPlaceColumns
	guardedDDL
	notExistsRename
}

var _ schemaType = sqlserverSchema{}

func (sqlserverSchema) createTableIf(table string) string {
	return "IF OBJECT_ID(N'" + table + "', N'U') IS NULL CREATE TABLE "
}

// unicodeColumnDef is columnDef with a Unicode literal (N'...') as the
// default.
func (s sqlserverSchema) unicodeColumnDef(c column) string {
	return strings.Replace(columnDef(s.types, c), " DEFAULT '", " DEFAULT N'", 1)
}

func (s sqlserverSchema) addColumn(table string, c column) string {
	return "IF COL_LENGTH(N'" + table + "', N'" + c.name + "') IS NULL ALTER TABLE " + s.quote(table) + " ADD " + s.unicodeColumnDef(c)
}

// addColumns guards every column by the first one's absence (the
// migration is one transaction).
func (s sqlserverSchema) addColumns(table string, cols []column) []string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = s.unicodeColumnDef(c)
	}
	return []string{"IF COL_LENGTH(N'" + table + "', N'" + cols[0].name + "') IS NULL ALTER TABLE " + s.quote(table) + " ADD " +
		strings.Join(parts, ", ")}
}

func (sqlserverSchema) hasColumn(_, _ string) string { return "" }

func (s sqlserverSchema) addDataColumn(table string) string {
	return "IF COL_LENGTH(N'" + table + "', N'data') IS NULL ALTER TABLE " + s.quote(table) + " ADD data NVARCHAR(MAX) NOT NULL DEFAULT N''"
}

func (sqlserverSchema) insertOnce(ins, q, key, value string) string {
	return "IF NOT EXISTS (SELECT 1 FROM " + q + " WHERE " + key + " = " + value + ") " + ins
}

func (sqlserverSchema) concat(parts ...string) string { return strings.Join(parts, " + ") }

func (sqlserverSchema) length(s string) string { return "LEN(" + s + ")" }

func (sqlserverSchema) substr(s, from, n string) string {
	return "SUBSTRING(" + s + ", " + from + ", " + n + ")"
}

func (sqlserverSchema) lastSlash(col string) string {
	return "(LEN(" + col + ") - CHARINDEX('/', REVERSE(" + col + ")) + 1)"
}

func (sqlserverSchema) insertUnlessTaken(ins, q, name string) string {
	return ins + " AND NOT EXISTS (SELECT 1 FROM " + q + " AS taken WHERE taken.name = " + name + ")"
}

// migrationLock is an application lock (sp_getapplock) owned by the
// migration's transaction, waited for up to timeout; it returns a status.
func (sqlserverSchema) migrationLock(_ Tables, timeout time.Duration) lockSQL {
	return lockSQL{acquire: "DECLARE @r INT; EXEC @r = sp_getapplock @Resource = ?, @LockMode = 'Exclusive', " +
		"@LockOwner = 'Transaction', @LockTimeout = " + strconv.FormatInt(timeout.Milliseconds(), 10) + "; SELECT @r"}
}

// withMigrationLock locks, migrates and records in one transaction; the
// lock ends with it.
func (s sqlserverSchema) withMigrationLock(db *gorm.DB, t Tables, timeout time.Duration, apply migrationApply) error {
	lock := s.migrationLock(t, timeout)
	return db.Transaction(func(tx *gorm.DB) error {
		var rc int
		if err := scanRow(tx, stmt{lock.acquire, []any{s.lockName(t, "")}}, &rc); err != nil {
			return fmt.Errorf("%w: %w", ErrMigrationLock, err)
		}
		if rc < 0 {
			return fmt.Errorf("%w: sp_getapplock returned %d", ErrMigrationLock, rc)
		}
		return apply(tx, inRun)
	})
}
