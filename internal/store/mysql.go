package store

// mysqlDB is MySQL and MariaDB (gorm.io/driver/mysql). It has no UPDATE ...
// RETURNING, detects no failovers (incarnation.go), and its followers
// poll.
type mysqlDB struct {
	inLists
}

var _ database = mysqlDB{}

func (mysqlDB) name() string { return MySQL }

// now: UTC_TIMESTAMP(6) is constant within a statement and independent of
// the session time zone; TIMESTAMPDIFF between two DATETIMEs does no
// time-zone conversion either.
func (mysqlDB) now() string {
	return "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
}

func (mysqlDB) quote(ident string) string { return quoteBacktick(ident) }

func (mysqlDB) incarnationExpr() string { return "" }

func (mysqlDB) acquire() acquireMode { return acquireLockThenUpdate }

func (mysqlDB) serialWriters() bool { return false }

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

func (mysqlDB) renewReturnsRows() bool { return false }

// sqlEnsureRows: not INSERT IGNORE, which would also turn real errors into
// warnings.
func (m mysqlDB) sqlEnsureRows(t Tables, names []string) stmt {
	return stmt{"INSERT INTO " + m.quote(t.Leases) + " (name, expires_at_us) VALUES " + valuesNow(m.now(), len(names)) +
		" ON DUPLICATE KEY UPDATE expires_at_us = IF(holder = '', " + m.now() + ", expires_at_us)", namesArgs(names)}
}

func (mysqlDB) lockForUpdate() (hint, suffix string) { return "", " FOR UPDATE" }

func (mysqlDB) lockForShare(string) (hint, suffix string) { return "", " LOCK IN SHARE MODE" }

func (mysqlDB) insertOnceConcurrent(into, values, _, key, _ string) string {
	return into + "VALUES (" + values + ") ON DUPLICATE KEY UPDATE " + key + " = " + key
}

// nameType: binary ASCII collation, so that names and holders compare byte
// for byte, as on the other databases (MySQL's default collation ignores
// case).
func (mysqlDB) nameType() string          { return "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin" }
func (mysqlDB) bigintType() string        { return "BIGINT" }
func (mysqlDB) intType() string           { return "INT" }
func (mysqlDB) createTableSuffix() string { return " ENGINE=InnoDB" }
