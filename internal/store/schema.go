package store

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultTablePrefix is the prefix of every table leasehold creates.
const DefaultTablePrefix = "leasehold_"

// MaxTablePrefixLen bounds the prefix so every table name stays within the
// identifier limits of all supported databases (63 bytes on PostgreSQL).
const MaxTablePrefixLen = 40

// prefixPattern is deliberately narrow: the prefix becomes part of
// identifiers written into SQL, so only characters that need no quoting on
// any database are allowed.
var prefixPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidateTablePrefix checks a table prefix. The empty prefix is valid (the
// caller substitutes the default before calling).
func ValidateTablePrefix(prefix string) error {
	if len(prefix) > MaxTablePrefixLen {
		return fmt.Errorf("%w: TablePrefix %q is %d bytes long; the limit is %d", ErrInvalidPrefix, prefix, len(prefix), MaxTablePrefixLen)
	}
	if prefix != "" && !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("%w: TablePrefix %q must start with a letter or '_' and contain only ASCII letters, digits and '_'", ErrInvalidPrefix, prefix)
	}
	return nil
}

// Tables holds the unquoted table names for one prefix.
type Tables struct {
	Prefix     string
	Migrations string
	Leases     string
}

// TablesFor returns the table names for a prefix ("" means the default).
func TablesFor(prefix string) (Tables, error) {
	if prefix == "" {
		prefix = DefaultTablePrefix
	}
	if err := ValidateTablePrefix(prefix); err != nil {
		return Tables{}, err
	}
	return Tables{
		Prefix:     prefix,
		Migrations: prefix + "schema_migrations",
		Leases:     prefix + "leases",
	}, nil
}

// column describes one column of a table in the schema.
type column struct {
	name string
	typ  func(*dialect) string
	def  string // default value literal, "" for none
}

func nameCol(d *dialect) string   { return d.nameType }
func bigintCol(d *dialect) string { return d.bigintType }
func intCol(d *dialect) string    { return d.intType }

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

// Migration is one numbered step of the coordination schema.
type Migration struct {
	Version     int
	Description string
	statements  func(d *dialect, t Tables) []string
	// applied, when set, returns a query counting what the step creates.
	// It guards steps whose DDL is not idempotent on a dialect where DDL
	// is not transactional either (MySQL): a run that died between the DDL
	// and recording the version must not fail the next run.
	applied func(d *dialect, t Tables) string
	// transactional marks a step of data changes only. Where a migration
	// run is not one transaction (MySQL, whose DDL commits implicitly), the
	// step and the record of its version still run in one, so a run that
	// dies midway leaves the step either done and recorded or not begun.
	transactional bool
}

// migrations lists every schema version in order. A released step is never
// edited: changes come as a new step.
var migrations = []Migration{
	{
		Version:     1,
		Description: "create the lease table",
		statements: func(d *dialect, t Tables) []string {
			return []string{d.createTable(t.Leases, "name", []column{
				{name: "name", typ: nameCol},
				{name: "holder", typ: nameCol, def: "''"},
				{name: "epoch", typ: bigintCol, def: "0"},
				{name: "acquired_at_us", typ: bigintCol, def: "0"},
				{name: "renewed_at_us", typ: bigintCol, def: "0"},
				{name: "expires_at_us", typ: bigintCol, def: "0"},
			})}
		},
	},
	{
		Version:     2,
		Description: "add the data column for pool generations and member acknowledgements",
		statements: func(d *dialect, t Tables) []string {
			return []string{d.addDataColumn(t.Leases)}
		},
		applied: func(d *dialect, t Tables) string { return d.sqlHasDataColumn(t.Leases) },
	},
	{
		Version:     3,
		Description: "rename pool rows to keys that cannot collide",
		statements: func(d *dialect, t Tables) []string {
			return []string{d.renamePoolGenerations(t.Leases), d.renamePoolMembers(t.Leases), d.tombstoneOldPoolRows(t.Leases)}
		},
		transactional: true,
	},
}

// LatestVersion is the schema version this build of leasehold needs.
var LatestVersion = migrations[len(migrations)-1].Version

// createMigrationsTable is the DDL of the version table.
func (d *dialect) createMigrationsTable(t Tables) string {
	return d.createTable(t.Migrations, "version", []column{
		{name: "version", typ: intCol},
		{name: "description", typ: nameCol, def: "''"},
		{name: "applied_at_us", typ: bigintCol, def: "0"},
	})
}

// sqlRecordVersion records an applied step. Arguments: description.
func (d *dialect) sqlRecordVersion(t Tables, version int) string {
	return "INSERT INTO " + d.quote(t.Migrations) + " (version, description, applied_at_us) VALUES (" +
		strconv.Itoa(version) + ", ?, " + d.now + ")"
}

// sqlCurrentVersion reads the highest applied step.
func (d *dialect) sqlCurrentVersion(t Tables) string {
	return "SELECT COALESCE(MAX(version), 0) FROM " + d.quote(t.Migrations)
}

// migrationLockKey derives the name of the lock that serialises concurrent
// migrations of one schema (one prefix in one database).
func migrationLockKey(t Tables) string { return "leasehold:migrate:" + t.Prefix }

// advisoryKey maps the lock name to PostgreSQL's 64-bit advisory lock key.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// DDL returns the statements that create the latest schema from nothing,
// including the version table and its rows, for a DBA who applies schema
// changes by hand. Applying them is equivalent to running Migrate.
func DDL(dialectName, prefix string) ([]string, error) {
	d, err := lookupDialect(dialectName)
	if err != nil {
		return nil, err
	}
	t, err := TablesFor(prefix)
	if err != nil {
		return nil, err
	}
	stmts := []string{d.createMigrationsTable(t)}
	for _, m := range migrations {
		stmts = append(stmts, m.statements(d, t)...)
		stmts = append(stmts, strings.Replace(d.sqlRecordVersion(t, m.Version), "?", quoteLiteral(m.Description), 1))
	}
	return stmts, nil
}

// quoteLiteral renders a string literal; only used for the library's own
// constant descriptions when printing DDL.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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

// sqlHasDataColumn counts the data column (MySQL only; elsewhere the DDL is
// idempotent or transactional).
func (d *dialect) sqlHasDataColumn(table string) string {
	if d.name != MySQL {
		return ""
	}
	return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '" +
		table + "' AND column_name = 'data'"
}

// Schema version 3 renames the rows of pools. Earlier versions named them
//
//	pool/<key>/generation
//	pool/<key>/member/<instance>
//
// which collide when one pool's key extends another's: the member prefix
// "pool/global/a/member/" of pool "a" also covers the generation row of
// pool "a/member/x". The new keys (coordination/names.go) put '|', which no
// name contains, around <key>:
//
//	pool|<key>|generation
//	pool|<key>|member|<instance>
//
// Old rows are classified by what only one kind of row can look like:
//
//   - a generation row ends in "/generation" and was never acquired
//     (acquired_at_us = 0: generation rows are only ever published, never
//     acquired);
//   - a member row ends in "/member/<instance>", where the instance is
//     the part after the last '/' (instance ids contain no '/'), and the
//     key is what lies between "pool/" and that "/member/".
//
// The renames keep every other column, so epochs, holders, expiry and
// data carry over: generations go on growing, and a member's row stays
// live exactly until the expiry its last successful renewal set, which is
// what the revoke-then-assign barrier of the remaining members relies on.
// A row whose new key already exists is left alone. Then a tombstone takes
// each old key: held by "leasehold:renamed" (not a valid holder) until
// the year 9999. A process of an earlier version that still runs loses
// its membership at its next renewal, cannot take it or any other old row
// back, and cannot publish a generation, so it can no longer be assigned
// work (docs/operations.md).

// renamedHolder holds the tombstones of old pool rows.
const renamedHolder = "leasehold:renamed"

// tombstoneExpiry is 9999-12-31T23:59:59.999999Z in microseconds.
const tombstoneExpiry = "253402300799999999"

// Old pool rows are the names from "pool/" up to "pool0" ('0' follows
// '/'); new ones from "pool|" up to "pool}" ('}' follows '|').
const (
	oldPoolRows = "name >= 'pool/' AND name < 'pool0'"
	newPoolRows = "name >= 'pool|' AND name < 'pool}'"
)

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

// renamePoolGenerations renames "pool/<key>/generation" to
// "pool|<key>|generation" for rows never acquired.
func (d *dialect) renamePoolGenerations(table string) string {
	return d.renameUnlessTaken(table,
		func(col string) string {
			return d.concat("'pool|'", d.substr(col, "6", d.length(col)+" - 16"), "'|generation'")
		},
		func(col string) string {
			return strings.ReplaceAll(oldPoolRows, "name", col) + " AND holder <> '" + renamedHolder + "' AND acquired_at_us = 0 AND " +
				d.length(col) + " > 16 AND " + d.substr(col, d.length(col)+" - 10", "11") + " = '/generation'"
		})
}

// renamePoolMembers renames "pool/<key>/member/<instance>" to
// "pool|<key>|member|<instance>".
func (d *dialect) renamePoolMembers(table string) string {
	return d.renameUnlessTaken(table,
		func(col string) string {
			p := d.lastSlash(col)
			return d.concat("'pool|'", d.substr(col, "6", p+" - 13"), "'|member|'", d.substr(col, p+" + 1", d.length(col)+" - "+p))
		},
		func(col string) string {
			p := d.lastSlash(col)
			return strings.ReplaceAll(oldPoolRows, "name", col) + " AND holder <> '" + renamedHolder + "' AND " +
				p + " > 13 AND " + p + " < " + d.length(col) + " AND " + d.substr(col, p+" - 7", "8") + " = '/member/'"
		})
}

// tombstoneOldPoolRows puts a tombstone under the old name of every renamed
// pool row: '|' occurs in a new pool row name only as a separator, so
// replacing it with '/' gives back the old name.
func (d *dialect) tombstoneOldPoolRows(table string) string {
	q := d.quote(table)
	old := "REPLACE(renamed.name, '|', '/')"
	ins := "INSERT INTO " + q + " (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT " +
		old + ", '" + renamedHolder + "', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, " + tombstoneExpiry +
		", renamed.data FROM " + q + " AS renamed WHERE " + strings.ReplaceAll(newPoolRows, "name", "renamed.name")
	switch d.name {
	case MySQL:
		// IGNORE skips old names taken already (see renameUnlessTaken).
		return strings.Replace(ins, "INSERT INTO", "INSERT IGNORE INTO", 1)
	case SQLServer:
		return ins + " AND NOT EXISTS (SELECT 1 FROM " + q + " AS taken WHERE taken.name = " + old + ")"
	default:
		return ins + " ON CONFLICT (name) DO NOTHING"
	}
}
