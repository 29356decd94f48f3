package store

// sqliteDB is SQLite (gorm.io/driver/sqlite, over the cgo or the pure-Go
// driver). One writer runs at a time, it detects no failovers
// (incarnation.go), and the processes that share its file wake each other
// through sockets next to it (fileDatabase, wake_local.go).
type sqliteDB struct {
	returningClause
	onConflict
	inLists
}

var (
	_ database     = sqliteDB{}
	_ fileDatabase = sqliteDB{}
)

func (sqliteDB) name() string { return SQLite }

// now: julianday('now') has millisecond resolution and is constant within
// one statement. The value is stored in microseconds like the others.
func (sqliteDB) now() string {
	return "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)"
}

func (sqliteDB) quote(ident string) string { return quoteDouble(ident) }

func (sqliteDB) incarnationExpr() string { return "" }

func (sqliteDB) acquire() acquireMode { return acquireReturning }

func (sqliteDB) serialWriters() bool { return true }

func (s sqliteDB) sqlEnsureRows(t Tables, names []string) stmt {
	q := s.quote(t.Leases)
	return stmt{"INSERT INTO " + q + " (name, expires_at_us) VALUES " + valuesNow(s.now(), len(names)) + s.touchUnheld(q, s.now()),
		namesArgs(names)}
}

// lockForUpdate is empty: a writing transaction holds the database's
// write lock (sqlWriteLock), which excludes every other writer, and
// statements never wait on a row (lockFirst is false).
func (sqliteDB) lockForUpdate() (hint, suffix string) { return "", "" }

// lockForShare is empty: a writing transaction already excludes every
// other writer, and a deferred one that read a stale snapshot cannot
// commit a write (sqlFence).
func (sqliteDB) lockForShare(string) (hint, suffix string) { return "", "" }

func (sqliteDB) nameType() string          { return "TEXT" }
func (sqliteDB) bigintType() string        { return "INTEGER" }
func (sqliteDB) intType() string           { return "INTEGER" }
func (sqliteDB) createTableSuffix() string { return "" }

// sqlDatabaseFile reads the file of the main database, "" for one in
// memory.
func (sqliteDB) sqlDatabaseFile() string {
	return "SELECT file FROM pragma_database_list WHERE name = 'main'"
}
