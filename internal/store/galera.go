package store

import (
	"errors"
	"strings"
)

// MariaDB Galera Cluster: a node's reads may lag the others' commits, row
// locks are local to a node, and only write-write conflicts on one row are
// caught, at commit (ER_LOCK_DEADLOCK, a lost race). So every decision
// taken from a read of another process's rows also writes a row that the
// conflicting write of that process changes:
//
//   - an acquire changes the row of each dead session it takes from
//     (sqlMarkDeadSessions), which that session's renewal changes too;
//   - a fencing read changes the lease row (sqlFenceWrite), which a
//     takeover changes too, and a pool's fencing read its generation row
//     (sqlFenceGenerationWrite), which a publish changes too.
//
// A node's applier may also roll a local transaction back without telling
// the statement running (a brute-force abort), and the statements sent
// after it then commit one by one. So the statements of floored rows read
// their floor rows themselves (insertAtFloors, deleteAtFloors), the
// acquire's update repeats the conditions of its locking read
// (recheckAcquire), and a transaction of floored rows that finds itself
// closed at its end (sqlInTransaction) fails with ErrRolledBackUnderneath,
// a lost race, and runs again.

// galeraFacts are MySQL's, with the acquire's update judging again.
var galeraFacts = func() facts {
	f := mysqlFacts
	f.recheckAcquire = true
	return f
}()

// galeraDialect is MariaDB on a Galera cluster.
func galeraDialect() *dialect {
	s := mysqlSchema{facts: galeraFacts}
	return newDialect(galeraFacts, galeraDB{}, s)
}

// galeraProbe is MySQL's start-up probe: a server with wsrep_on is a
// Galera node. MySQL answers no row.
var galeraProbe = clusterProbe{
	sql: "SHOW VARIABLES LIKE 'wsrep_on'",
	dialect: func(value string) *dialect {
		if !strings.EqualFold(value, "ON") {
			return nil
		}
		return galeraDialect()
	},
}

// galeraDB is the runtime type of a Galera cluster: MySQL's, with the
// steps above.
type galeraDB struct{ mysqlDB }

var _ database = galeraDB{}

// sqlMarkDeadSessions moves the expiry of each dead session holding one
// of names back by a microsecond: it stays dead, and its row changes.
func (galeraDB) sqlMarkDeadSessions(t Tables, session string, names []string) stmt {
	return stmt{"UPDATE " + quoteBacktick(t.Sessions) + " s JOIN " + quoteBacktick(t.Leases) + " l ON l.session_id = s.id" +
		" SET s.expires_at_us = s.expires_at_us - 1" +
		" WHERE l.name IN (" + placeholders(len(names)) + ") AND l.session_id <> ? AND s.expires_at_us < " + mysqlNow,
		append(namesArgs(names), session)}
}

// sqlFenceWrite moves renewed_at_us of a row a session holds forward by
// at least a microsecond (reads take it from the session's row).
func (galeraDB) sqlFenceWrite(t Tables, name string) stmt {
	return stmt{"UPDATE " + quoteBacktick(t.Leases) + " SET renewed_at_us = GREATEST(" + mysqlNow + ", renewed_at_us + 1)" +
		" WHERE name = ? AND session_id <> ''", []any{name}}
}

// sqlFenceGenerationWrite moves renewed_at_us of an unheld row (the last
// publish) forward by at least a microsecond. The fenced transactions of
// a pool's members on different nodes then conflict with each other too.
func (galeraDB) sqlFenceGenerationWrite(t Tables, name string) stmt {
	return stmt{"UPDATE " + quoteBacktick(t.Leases) + " SET renewed_at_us = GREATEST(" + mysqlNow + ", renewed_at_us + 1)" +
		" WHERE name = ? AND holder = ''", []any{name}}
}

// insertAtFloors inserts the rows at the epochs of their floor rows, read
// under a lock by the insert itself; a row whose floor row is missing is
// not inserted.
func (galeraDB) insertAtFloors(t Tables, rows []Floored, _ stmt) stmt {
	q := quoteBacktick(t.Leases)
	vals := make([]string, len(rows))
	args := make([]any, 0, 2*len(rows))
	for i, r := range rows {
		vals[i] = "SELECT ?, ?"
		if i == 0 {
			vals[i] = "SELECT ? AS name, ? AS floor_name"
		}
		args = append(args, r.Name, r.Floor)
	}
	return stmt{"INSERT INTO " + q + " (name, epoch, expires_at_us) SELECT v.name, f.epoch, " + mysqlNow +
		" FROM (" + strings.Join(vals, " UNION ALL ") + ") v JOIN " + q + " f ON f.name = v.floor_name FOR UPDATE", args}
}

// deleteAtFloors deletes the rows l that where matches whose floor rows f
// are at or above their epochs.
func (galeraDB) deleteAtFloors(t Tables, rows []Floored, where string, args []any, _ stmt) stmt {
	q := quoteBacktick(t.Leases)
	var b strings.Builder
	b.WriteString("DELETE l FROM " + q + " l JOIN " + q + " f ON f.name = CASE l.name")
	joinArgs := make([]any, 0, 2*len(rows)+len(args))
	for _, r := range rows {
		b.WriteString(" WHEN ? THEN ?")
		joinArgs = append(joinArgs, r.Name, r.Floor)
	}
	b.WriteString(" END WHERE " + where + " AND f.epoch >= l.epoch")
	return stmt{b.String(), append(joinArgs, args...)}
}

func (galeraDB) sqlInTransaction() string { return "SELECT @@in_transaction" }

// ErrRolledBackUnderneath is a transaction found rolled back under its
// statements at its end (a brute-force abort on a Galera node): a lost
// race, which runs again.
var ErrRolledBackUnderneath = errors.New("leasehold: the transaction was rolled back under its statements (a brute-force abort on a Galera node that no statement reported)")
