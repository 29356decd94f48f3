package bench

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Stmt is one statement gorm sent, as Trace saw it.
type Stmt struct {
	// Start is when gorm began processing the statement; Dur is the time
	// until its last callback returned: the client round trip, with
	// gorm's own work and, for queries, the reading of the rows.
	Start time.Time
	Dur   time.Duration
	// Renew reports whether the statement is the lease renewal (IsRenew).
	Renew bool
	// Args are the statement's string arguments, such as the id of the
	// session a renewal renews.
	Args []string
	Err  error
}

// startKey is where Trace keeps a statement's start time.
const startKey = "bench:start"

// Trace calls fn for every statement sent through db's gorm callbacks
// (create, query, update, delete, row and raw: every statement leasehold
// sends, except the BEGIN and COMMIT of transactions, which database/sql
// sends without gorm). fn runs in the goroutine that sent the statement
// and must be quick. Trace must be called before db is shared.
func Trace(db *gorm.DB, fn func(Stmt)) error {
	before := func(tx *gorm.DB) { tx.InstanceSet(startKey, time.Now()) }
	after := func(tx *gorm.DB) {
		v, ok := tx.InstanceGet(startKey)
		start, _ := v.(time.Time)
		if !ok {
			return
		}
		renew := IsRenew(tx.Statement.SQL.String())
		var args []string
		if renew {
			for _, v := range tx.Statement.Vars {
				if a, ok := v.(string); ok {
					args = append(args, a)
				}
			}
		}
		fn(Stmt{Start: start, Dur: time.Since(start), Renew: renew, Args: args, Err: tx.Error})
	}
	cb := db.Callback()
	type processor interface {
		Register(string, func(*gorm.DB)) error
	}
	for name, pair := range map[string][2]processor{
		"create": {cb.Create().Before("*"), cb.Create().After("*")},
		"query":  {cb.Query().Before("*"), cb.Query().After("*")},
		"update": {cb.Update().Before("*"), cb.Update().After("*")},
		"delete": {cb.Delete().Before("*"), cb.Delete().After("*")},
		"row":    {cb.Row().Before("*"), cb.Row().After("*")},
		"raw":    {cb.Raw().Before("*"), cb.Raw().After("*")},
	} {
		if err := pair[0].Register("bench:before_"+name, before); err != nil {
			return fmt.Errorf("bench: register the %s timer: %w", name, err)
		}
		if err := pair[1].Register("bench:after_"+name, after); err != nil {
			return fmt.Errorf("bench: register the %s timer: %w", name, err)
		}
	}
	return nil
}

// IsRenew reports whether sql is leasehold's renewal statement: the one
// UPDATE of a tick, of the session table ("<prefix>sessions", quoted or
// not), whose SET clause moves renewed_at_us. Every lease of the process
// rides on that one row, so it is the only statement a tick sends. It
// accepts the text leasehold sends and pg_stat_statements' normalised form
// of it. This is the one place that knows the renewal's shape; adjust it
// when internal/store changes the statement.
func IsRenew(sql string) bool {
	s := strings.TrimSpace(sql)
	if len(s) < 7 || !strings.EqualFold(s[:7], "UPDATE ") {
		return false
	}
	up := strings.ToUpper(s)
	set := strings.Index(up, " SET ")
	if set < 0 {
		return false
	}
	table := strings.Trim(strings.TrimSpace(s[7:set]), "\"`[]")
	if !strings.HasSuffix(table, "sessions") {
		return false
	}
	clause := up[set+5:]
	if i := strings.Index(clause, " WHERE "); i >= 0 {
		clause = clause[:i]
	}
	return strings.Contains(clause, "RENEWED_AT_US")
}
