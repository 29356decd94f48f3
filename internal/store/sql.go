package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func quoteDouble(s string) string   { return `"` + s + `"` }
func quoteBacktick(s string) string { return "`" + s + "`" }
func quoteBracket(s string) string  { return "[" + s + "]" }

// quoteLiteral renders a string literal of the library's own text.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func namesArgs(names []string) []any {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return args
}

// us renders a duration in microseconds as an SQL literal.
func us(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

// termsFilter matches exactly the given terms: "(name = ? AND epoch = 7)
// OR ...".
func termsFilter(terms []Term) (string, []any) { return termsFilterOf("", terms) }

// termsFilterOf is termsFilter for the rows of the table aliased alias
// ("" for none).
func termsFilterOf(alias string, terms []Term) (string, []any) {
	col := func(c string) string { return c }
	if alias != "" {
		col = func(c string) string { return alias + "." + c }
	}
	parts := make([]string, len(terms))
	args := make([]any, len(terms))
	for i, t := range terms {
		parts[i] = "(" + col("name") + " = ? AND " + col("epoch") + " = " + strconv.FormatInt(t.Epoch, 10) + ")"
		args[i] = t.Name
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// prefixFilter matches the names that start with a prefix, byte for byte,
// as a range of the primary key with the bounds from prefixRange (LIKE
// ignores case on SQLite).
const prefixFilter = "name >= ? AND name < ?"

// prefixRange returns the bounds of prefixFilter for a non-empty prefix:
// the prefix, and the smallest string above all that start with it. A
// prefix of 0xff bytes only is refused.
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

// limitTail limits a SELECT to its first n rows with LIMIT.
func limitTail(n int) (top, tail string) { return "", " LIMIT " + strconv.Itoa(n) }

// valuesNow renders "(?, NOW), (?, NOW)" for n names, with the database
// clock now.
func valuesNow(now string, n int) string {
	return strings.TrimSuffix(strings.Repeat("(?, "+now+"), ", n), ", ")
}

// sessionTermsWhere is the WHERE clause that matches exactly the given
// terms of session.
func sessionTermsWhere(session string, terms []Term) (string, []any) {
	filter, args := termsFilter(terms)
	return " WHERE session_id = ? AND " + filter, append([]any{session}, args...)
}

// Implementations that several databases embed.

// returningClause hands back the rows an UPDATE changes with RETURNING
// after the WHERE clause (PostgreSQL, SQLite).
type returningClause struct{}

func (returningClause) returning(cols ...string) (afterSet, afterWhere string) {
	return "", " RETURNING " + strings.Join(cols, ", ")
}

// inLists matches names with an IN list and terms with an OR list, one
// bound parameter per name (MySQL, SQLite, SQL Server).
type inLists struct{}

func (inLists) nameIn(col string, names []string) (string, []any) {
	return col + " IN (" + placeholders(len(names)) + ")", namesArgs(names)
}

func (inLists) whereTerms(_, session string, terms []Term) (string, []any) {
	return sessionTermsWhere(session, terms)
}

// onConflict updates or skips the row an INSERT finds taken with ON
// CONFLICT (PostgreSQL, SQLite).
type onConflict struct{}

func (onConflict) insertOnceConcurrent(into, values, _, key, _ string) string {
	return onConflictDoNothing(into+"VALUES ("+values+")", key)
}

// touchUnheld ends an INSERT into the lease table q (quoted) of rows that
// may exist: an unheld one gets expires_at_us = now (sqlEnsureRows).
func (onConflict) touchUnheld(q, now string) string {
	return " ON CONFLICT (name) DO UPDATE SET expires_at_us = " + now + " WHERE " + q + ".holder = ''"
}

// onConflictDDL is onConflict in the schema's statements (PostgreSQL,
// SQLite).
type onConflictDDL struct{}

func (onConflictDDL) insertOnce(ins, _, key, _ string) string { return onConflictDoNothing(ins, key) }

func (onConflictDDL) insertUnlessTaken(ins, _, _ string) string {
	return ins + " ON CONFLICT (name) DO NOTHING"
}

// onConflictDoNothing makes ins do nothing when a row with its key exists.
func onConflictDoNothing(ins, key string) string {
	return ins + " ON CONFLICT (" + key + ") DO NOTHING"
}

// sqlStrings has the string functions LENGTH and SUBSTR (PostgreSQL,
// MySQL, SQLite).
type sqlStrings struct{}

func (sqlStrings) length(s string) string { return "LENGTH(" + s + ")" }

func (sqlStrings) substr(s, from, n string) string {
	return "SUBSTR(" + s + ", " + from + ", " + n + ")"
}

// notExistsRename renames rows unless their new name is taken with NOT
// EXISTS on the table being updated (PostgreSQL, SQLite, SQL Server).
type notExistsRename struct{}

func (notExistsRename) renameUnlessTaken(q string, newName, where func(col string) string) string {
	col := q + ".name"
	return "UPDATE " + q + " SET name = " + newName(col) + " WHERE " + where(col) +
		" AND NOT EXISTS (SELECT 1 FROM " + q + " AS taken WHERE taken.name = " + newName(col) + ")"
}

// guardedDDL is the schema where a statement guards itself or runs in one
// transaction with its version record (everywhere but MySQL).
type guardedDDL struct{}

func (guardedDDL) hasDataColumnAsReleased(string) string { return "" }

func (guardedDDL) unlessCounted(_, s string) []string { return []string{s} }
