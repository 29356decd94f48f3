package store

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// DefaultTablePrefix is the prefix of every table leasehold creates.
const DefaultTablePrefix = "leasehold_"

// MaxTablePrefixLen bounds the prefix so every table name stays within the
// identifier limits of all supported databases (63 bytes on PostgreSQL).
const MaxTablePrefixLen = 40

// prefixPattern allows only what needs no quoting on any database.
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
	Sessions   string
	// Incarnation holds one row: the database incarnation (incarnation.go)
	// the lease rows were last known to live in.
	Incarnation string
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
		Prefix:      prefix,
		Migrations:  prefix + "schema_migrations",
		Leases:      prefix + "leases",
		Sessions:    prefix + "sessions",
		Incarnation: prefix + "incarnation",
	}, nil
}

// Migration is one numbered step of the coordination schema.
type Migration struct {
	Version     int
	Description string
	statements  func(s schemaSQL, t Tables) []string
	// applied, when set, returns a query counting what the step creates,
	// where its DDL is neither idempotent nor transactional (MySQL).
	applied func(s schemaSQL, t Tables) string
	// columns are the columns the step creates a table with or adds to it,
	// which DDLFrom creates or rebuilds tables with where rebuildsTables.
	columns *tableColumns
	// transactional marks a step of data changes only, which runs in one
	// transaction with the record of its version.
	transactional bool
}

// migrations lists every schema version in order. A released step is never
// edited: changes come as a new step.
var migrations = []Migration{
	{
		Version:     1,
		Description: "create the lease table",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.createTable(t.Leases, "name", leaseColumns1)}
		},
		columns: &tableColumns{leaseTable, leaseColumns1},
	},
	{
		Version:     2,
		Description: "add the data column for pool generations and member acknowledgements",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.ddl.addDataColumn(t.Leases)}
		},
		applied: func(s schemaSQL, t Tables) string { return s.ddl.hasDataColumnAsReleased(t.Leases) },
		columns: &tableColumns{leaseTable, []column{{name: "data", typ: textCol, def: "''"}}},
	},
	{
		Version:     3,
		Description: "rename pool rows to keys that cannot collide",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.renamePoolGenerations(t.Leases), s.renamePoolMembers(t.Leases), s.tombstoneOldPoolRows(t.Leases)}
		},
		transactional: true,
	},
	{
		Version:     4,
		Description: "create the session table",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.createTable(t.Sessions, "id", sessionColumns)}
		},
		columns: &tableColumns{sessionTable, sessionColumns},
	},
	{
		Version:     5,
		Description: "add the session column to the lease table",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.ddl.addColumn(t.Leases, sessionIDColumn)}
		},
		applied: func(s schemaSQL, t Tables) string { return s.ddl.hasColumn(t.Leases, sessionIDColumn.name) },
		columns: &tableColumns{leaseTable, []column{sessionIDColumn}},
	},
	{
		Version:     6,
		Description: "add the resign request columns to the lease table",
		statements: func(s schemaSQL, t Tables) []string {
			return s.ddl.addColumns(t.Leases, resignColumns)
		},
		applied: func(s schemaSQL, t Tables) string { return s.ddl.hasColumn(t.Leases, resignColumns[0].name) },
		columns: &tableColumns{leaseTable, resignColumns},
	},
	{
		Version:     7,
		Description: "add the notice counter to the session table",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.ddl.addColumn(t.Sessions, noticeColumn)}
		},
		applied: func(s schemaSQL, t Tables) string { return s.ddl.hasColumn(t.Sessions, noticeColumn.name) },
		columns: &tableColumns{sessionTable, []column{noticeColumn}},
	},
	{
		Version:     8,
		Description: "create the incarnation table",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.createTable(t.Incarnation, "id", incarnationColumns)}
		},
		columns: &tableColumns{incarnationTable, incarnationColumns},
	},
	{
		Version:     9,
		Description: "add the incarnation column to the session table",
		statements: func(s schemaSQL, t Tables) []string {
			return []string{s.ddl.addColumn(t.Sessions, sessionIncarnationColumn)}
		},
		applied: func(s schemaSQL, t Tables) string { return s.ddl.hasColumn(t.Sessions, sessionIncarnationColumn.name) },
		columns: &tableColumns{sessionTable, []column{sessionIncarnationColumn}},
	},
	{
		Version:     10,
		Description: "add the peer wake-up columns to the session table",
		statements: func(s schemaSQL, t Tables) []string {
			return s.ddl.addColumns(t.Sessions, wakeColumns)
		},
		applied: func(s schemaSQL, t Tables) string { return s.ddl.hasColumn(t.Sessions, wakeColumns[0].name) },
		columns: &tableColumns{sessionTable, wakeColumns},
	},
}

// tableColumns names a table and columns of it.
type tableColumns struct {
	table func(Tables) string
	cols  []column
}

func leaseTable(t Tables) string       { return t.Leases }
func sessionTable(t Tables) string     { return t.Sessions }
func incarnationTable(t Tables) string { return t.Incarnation }

// tableAt is a table of the schema and its columns at some version, in the
// order the steps added them; no columns when the table does not exist.
type tableAt struct {
	name    string
	pk      string
	cols    []column
	created []column // the columns of the step that created it
}

// tablesAt lists the tables that migration steps create, with their
// columns at version, in the order the steps created them.
func tablesAt(t Tables, version int) []tableAt {
	var out []tableAt
	for _, m := range migrations {
		if m.columns == nil {
			continue
		}
		name := m.columns.table(t)
		i := slices.IndexFunc(out, func(ta tableAt) bool { return ta.name == name })
		if i < 0 {
			// The step that creates a table lists its key column first.
			out = append(out, tableAt{name: name, pk: m.columns.cols[0].name, created: m.columns.cols})
			i = len(out) - 1
		}
		if m.Version <= version {
			out[i].cols = append(out[i].cols, m.columns.cols...)
		}
	}
	return out
}

// LatestVersion is the schema version this build of leasehold needs.
var LatestVersion = migrations[len(migrations)-1].Version

// DDL is DDLFrom from version 0: the latest schema from nothing.
func DDL(dialectName, prefix string) ([]string, error) {
	return DDLFrom(dialectName, prefix, 0)
}

// DDLFrom returns the statements that take a schema at version from (0:
// no tables) to LatestVersion, with the rows of the version table, for a
// DBA who applies schema changes by hand. Applying them has the effect of
// Migrate, and applying them again changes nothing. On SQLite a missing
// table is created in its latest form and a table that lacks columns is
// rebuilt, rows kept, in one transaction (BEGIN IMMEDIATE ... COMMIT), so
// a from above the real version loses no row there; elsewhere such a from
// leaves out the steps between.
//
// The statements must run on one connection, in order; a caller that stops
// at a failed statement must roll back.
func DDLFrom(dialectName, prefix string, from int) ([]string, error) {
	d, err := lookupDialect(dialectName)
	if err != nil {
		return nil, err
	}
	sq := d.schema()
	t, err := TablesFor(prefix)
	if err != nil {
		return nil, err
	}
	if from < 0 || from > LatestVersion {
		return nil, fmt.Errorf("%w: schema version %d out of range: From must be 0 to %d", ErrInvalidConfig, from, LatestVersion)
	}
	stmts := []string{sq.createMigrationsTable(t)}
	rebuild := false
	rebuilds := d.rebuildsTables
	if rebuilds {
		was := tablesAt(t, from)
		for i, ta := range tablesAt(t, LatestVersion) {
			switch had := was[i].cols; {
			case len(had) == 0:
				stmts = append(stmts, sq.createTable(ta.name, ta.pk, ta.cols))
			case len(had) < len(ta.cols):
				// One rebuild per step that added columns, whatever
				// from says.
				rebuild = true
				before := ta.created
				for v := 1; v <= LatestVersion; v++ {
					if cols := tablesAt(t, v)[i].cols; len(cols) > len(before) {
						stmts = append(stmts, d.rebuild.rebuildTable(ta.name, ta.pk, before, cols)...)
						before = cols
					}
				}
			}
		}
		if rebuild {
			stmts = append([]string{"BEGIN IMMEDIATE"}, stmts...)
		}
	}
	for _, m := range migrations {
		if m.Version <= from {
			continue
		}
		var check string
		if m.applied != nil {
			check = m.applied(sq, t)
		}
		switch {
		case rebuilds && m.columns != nil:
			// Created or rebuilt above.
		case check != "":
			for _, s := range m.statements(sq, t) {
				stmts = append(stmts, d.ddl.unlessCounted(check, s)...)
			}
		default:
			stmts = append(stmts, m.statements(sq, t)...)
		}
		stmts = append(stmts, sq.recordVersionOnce(t, m.Version, quoteLiteral(m.Description)))
	}
	if rebuild {
		stmts = append(stmts, "COMMIT")
	}
	return stmts, nil
}

// Script is DDLFrom as one script for a dialect's command-line client, each
// statement ending with ';' (and GO on SQL Server).
func Script(dialectName, prefix string, from int) (string, error) {
	d, err := lookupDialect(dialectName)
	if err != nil {
		return "", err
	}
	stmts, err := DDLFrom(dialectName, prefix, from)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if from == 0 {
		fmt.Fprintf(&b, "-- leasehold coordination schema version %d for %s\n", LatestVersion, dialectName)
	} else {
		fmt.Fprintf(&b, "-- leasehold coordination schema for %s, from version %d to %d\n", dialectName, from, LatestVersion)
	}
	b.WriteString("-- Every statement is safe to apply again.\n")
	if slices.Contains(stmts, "BEGIN IMMEDIATE") {
		b.WriteString("-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.\n")
	}
	for _, s := range stmts {
		b.WriteString(s)
		b.WriteString(";\n")
		b.WriteString(d.batchEnd)
	}
	return b.String(), nil
}

// Schema version 3 renames the pool rows "pool/<key>/generation" and
// "pool/<key>/member/<instance>", which collide when one pool's key
// extends another's, to "pool|<key>|generation" and
// "pool|<key>|member|<instance>", every other column kept, and puts a
// tombstone, held until 9999, under each old name.

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

// renamePoolGenerations renames "pool/<key>/generation" to
// "pool|<key>|generation" for rows never acquired.
func (d schemaSQL) renamePoolGenerations(table string) string {
	r := d.rewrite
	return r.renameUnlessTaken(d.quote(table),
		func(col string) string {
			return r.concat("'pool|'", r.substr(col, "6", r.length(col)+" - 16"), "'|generation'")
		},
		func(col string) string {
			return strings.ReplaceAll(oldPoolRows, "name", col) + " AND holder <> '" + renamedHolder + "' AND acquired_at_us = 0 AND " +
				r.length(col) + " > 16 AND " + r.substr(col, r.length(col)+" - 10", "11") + " = '/generation'"
		})
}

// renamePoolMembers renames "pool/<key>/member/<instance>" to
// "pool|<key>|member|<instance>".
func (d schemaSQL) renamePoolMembers(table string) string {
	r := d.rewrite
	return r.renameUnlessTaken(d.quote(table),
		func(col string) string {
			p := r.lastSlash(col)
			return r.concat("'pool|'", r.substr(col, "6", p+" - 13"), "'|member|'", r.substr(col, p+" + 1", r.length(col)+" - "+p))
		},
		func(col string) string {
			p := r.lastSlash(col)
			return strings.ReplaceAll(oldPoolRows, "name", col) + " AND holder <> '" + renamedHolder + "' AND " +
				p + " > 13 AND " + p + " < " + r.length(col) + " AND " + r.substr(col, p+" - 7", "8") + " = '/member/'"
		})
}

// tombstoneOldPoolRows puts a tombstone under the old name of every renamed
// pool row: '|' occurs in a new pool row name only as a separator, so
// replacing it with '/' gives back the old name.
func (d schemaSQL) tombstoneOldPoolRows(table string) string {
	q := d.quote(table)
	old := "REPLACE(renamed.name, '|', '/')"
	ins := "INSERT INTO " + q + " (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT " +
		old + ", '" + renamedHolder + "', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, " + tombstoneExpiry +
		", renamed.data FROM " + q + " AS renamed WHERE " + strings.ReplaceAll(newPoolRows, "name", "renamed.name")
	return d.rewrite.insertUnlessTaken(ins, q, old)
}
