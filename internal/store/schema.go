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
