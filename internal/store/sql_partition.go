package store

import (
	"fmt"
	"strconv"
	"strings"
)

// The predicates of partitioned queries: the WHERE clause that selects the
// rows of a user's table that one share of a pool owns (coordination's
// Assignment.Scope and Assignment.BucketScope). They are not statements of
// the library's own: the user's query carries them.
//
// Every database computes them the same way, so they have one template
// each, over the dialect's quoting:
//
//   - '%' truncates toward zero on all four (PostgreSQL, MySQL/MariaDB,
//     SQLite, SQL Server): -7 % 3 is -1, not 2. The floor modulo that puts
//     a negative key in the same residue as Go's Owns is written out as
//     ((k % m) + m) % m, which cannot overflow since |k % m| < m.
//   - There is no boolean literal on SQL Server, so a share that owns
//     nothing is 1 = 0.
//
// Integers come from the library (the modulus, residues and bucket bounds)
// and are written as literals; the column is a checked identifier, quoted.

// PartitionSQL builds the predicates of partitioned queries on one
// database.
type PartitionSQL struct{ d *dialect }

// Partitions returns the builder of partitioned predicates for the gorm
// dialect name (gorm's Dialector.Name()).
func Partitions(dialect string) (PartitionSQL, error) {
	d, err := lookupDialect(dialect)
	if err != nil {
		return PartitionSQL{}, err
	}
	return PartitionSQL{d}, nil
}

// Column quotes column, a name or a dotted table.name, after checking that
// each part is a plain identifier (letters, digits, '_', not starting with
// a digit).
func (p PartitionSQL) Column(column string) (string, error) {
	parts := strings.Split(column, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("column %q: want a name or table.name", column)
	}
	for i, part := range parts {
		if !plainIdent(part) {
			return "", fmt.Errorf("column %q: %q is not a plain identifier (letters, digits and '_', not starting with a digit)", column, part)
		}
		parts[i] = p.d.quote(part)
	}
	return strings.Join(parts, "."), nil
}

func plainIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ModIn is the predicate "the floor modulo of col by mod is one of
// residues", for a quoted integer column col, mod >= 1 and residues in
// [0, mod). No residues selects nothing.
func (p PartitionSQL) ModIn(col string, mod int, residues []int) string {
	if len(residues) == 0 {
		return "1 = 0"
	}
	m := strconv.Itoa(mod)
	expr := "((" + col + " % " + m + ") + " + m + ") % " + m
	if mod == 1 {
		// Every key; the comparison keeps NULL keys out, as it does for
		// any other modulus.
		return expr + " = 0"
	}
	if len(residues) == 1 {
		return expr + " = " + strconv.Itoa(residues[0])
	}
	return expr + " IN (" + joinInts(residues) + ")"
}

// Ranges is the predicate "col lies in one of the half-open ranges
// [lo, hi)", for a quoted column col and ranges sorted, disjoint and not
// adjacent (merge them first). Each range is a range scan of an index on
// col. No ranges selects nothing.
func (p PartitionSQL) Ranges(col string, ranges [][2]int) string {
	if len(ranges) == 0 {
		return "1 = 0"
	}
	terms := make([]string, len(ranges))
	for i, r := range ranges {
		terms[i] = col + " >= " + strconv.Itoa(r[0]) + " AND " + col + " < " + strconv.Itoa(r[1])
	}
	if len(terms) == 1 {
		return "(" + terms[0] + ")"
	}
	return "((" + strings.Join(terms, ") OR (") + "))"
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
