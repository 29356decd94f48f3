package store

import "strings"

// sqlserverDB is SQL Server 2016 or newer (gorm.io/driver/sqlserver). It
// detects failovers by the instance answering (incarnation.go), and its
// followers poll.
type sqlserverDB struct {
	inLists
}

var _ database = sqlserverDB{}

func (sqlserverDB) name() string { return SQLServer }

// now: DATEDIFF_BIG needs SQL Server 2016 or newer.
func (sqlserverDB) now() string { return "DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())" }

func (sqlserverDB) quote(ident string) string { return quoteBracket(ident) }

// incarnationExpr is the name of the server instance answering: an
// availability group's failover moves the primary to another instance.
func (sqlserverDB) incarnationExpr() string {
	return "CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255))"
}

func (sqlserverDB) acquire() acquireMode { return acquireReturning }

func (sqlserverDB) serialWriters() bool { return false }

// returning hands back the changed rows with OUTPUT, between the SET and
// the WHERE clauses.
func (sqlserverDB) returning(cols ...string) (afterSet, afterWhere string) {
	return " OUTPUT inserted." + strings.Join(cols, ", inserted."), ""
}

func (sqlserverDB) renewReturnsRows() bool { return true }

// sqlEnsureRows: UPDLOCK+HOLDLOCK take a key-range lock, so two concurrent
// inserts queue instead of one failing with a duplicate key.
func (s sqlserverDB) sqlEnsureRows(t Tables, names []string) stmt {
	q := s.quote(t.Leases)
	args := append(namesArgs(names), namesArgs(names)...)
	return stmt{"UPDATE " + q + " SET expires_at_us = " + s.now() + " WHERE name IN (" + placeholders(len(names)) + ") AND holder = ''; " +
		"INSERT INTO " + q + " (name, expires_at_us) SELECT v.name, " + s.now() + " FROM (VALUES " +
		strings.TrimSuffix(strings.Repeat("(?), ", len(names)), ", ") + ") AS v(name) WHERE NOT EXISTS (SELECT 1 FROM " + q +
		" WITH (UPDLOCK, HOLDLOCK) WHERE " + q + ".name = v.name)", args}
}

func (sqlserverDB) lockForUpdate() (hint, suffix string) { return " WITH (UPDLOCK, ROWLOCK)", "" }

// lockForShare holds a shared row lock until the transaction ends.
func (sqlserverDB) lockForShare(string) (hint, suffix string) { return " WITH (HOLDLOCK, ROWLOCK)", "" }

// insertOnceConcurrent: UPDLOCK+HOLDLOCK take a key-range lock, so two
// concurrent inserts queue instead of one failing with a duplicate key.
func (sqlserverDB) insertOnceConcurrent(into, values, q, key, value string) string {
	return into + "SELECT " + values + " WHERE NOT EXISTS (SELECT 1 FROM " + q + " WITH (UPDLOCK, HOLDLOCK) WHERE " + key + " = " +
		value + ")"
}

// nameType is NVARCHAR because go-mssqldb binds Go strings as NVARCHAR: a
// VARCHAR key compared with an NVARCHAR parameter is converted row by row
// and loses its index seek. Binary collation: byte-for-byte comparison,
// as on the others.
func (sqlserverDB) nameType() string          { return "NVARCHAR(255) COLLATE Latin1_General_BIN2" }
func (sqlserverDB) bigintType() string        { return "BIGINT" }
func (sqlserverDB) intType() string           { return "INT" }
func (sqlserverDB) createTableSuffix() string { return "" }
