package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/wake"
)

// goldenProbeChannel stands for a listening connection's probe channel
// (probeChannel), which is new for every connection.
const goldenProbeChannel = "leasehold_probe_0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// Catalogue returns every statement the store sends on the dialect named
// (one of Dialects), each under a title and with example arguments, as
// render renders it: the text of the golden files that pin them
// (testdata/<dialect>.sql). render is a dry run of the dialect's gorm
// dialector, which returns the SQL exactly as the dialector sends it with
// its bound values; the test that compares (TestGoldenSQL) lives with the
// drivers, in the tests module (tests/store), so that this module
// requires none. Nothing else calls Catalogue.
func Catalogue(name string, render func(q string, args ...any) string) (string, error) {
	d, ok := dialects[name]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnsupportedDialect, name)
	}
	tables, _ := TablesFor("")
	ttl := 15 * time.Second
	session := "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	one := []Term{{Name: "cluster/eu-1/reports", Epoch: 7}}
	three := []Term{{Name: "cluster/eu-1/reports", Epoch: 7}, {Name: "global/billing", Epoch: 3}, {Name: "global/outbox", Epoch: 12}}
	names := []string{"global/billing", "global/outbox"}
	holder := "node-a/eu-1/0123456789abcdef0123456789abcdef"

	var b strings.Builder
	section := func(title, sql string) { fmt.Fprintf(&b, "-- %s\n%s;\n\n", title, sql) }
	st := func(title string, x stmt) { section(title, render(x.q, x.args...)) }
	st("start a session", d.sessions().sqlCreateSession(tables, session, holder, ttl))
	st("start a session that advertises its peer wake-ups", d.sessions().sqlCreateSessionAdvertised(tables, session, holder, ttl,
		"4286f278f60e;10.0.0.5:40123,127.0.0.1:40123", "89d8f755dfe70476693f3c7c2df36e55fd028134a29d108723b3863dbb794569"))
	st("read the peer wake-up adverts of the sessions live or expired less than grace ago", d.sessions().sqlPeers(tables, 2*ttl))
	st("renew the session: the one statement of a renewal tick", d.sessions().sqlRenewSession(tables, session, ttl))
	st("read the session", d.sessions().sqlReadSession(tables, session))
	st("end the session", d.sessions().sqlEndSession(tables, session))
	st("list the sessions (status pages)", d.sessions().sqlListSessions(tables))
	st("prune sessions expired long ago", d.sessions().sqlPruneSessions(tables, 10*ttl))
	st("insert lease rows if absent", d.sqlEnsureRows(tables, names))
	if d.lockFirst() {
		st("acquire, first: lock the named rows, in name order", d.leases().sqlLockRows(tables, names))
	}
	if d.acquire == acquireLockThenUpdate {
		st("acquire: lock the leases this session can take, with their epochs", d.leases().sqlAcquireLock(tables, session, holder, names))
		st("acquire: new terms (new epochs) of exactly those", d.leases().sqlAcquireTerms(tables, session, holder, three[1:]))
		if d.incarnation != "" {
			st("acquire: the epochs of those new terms, above the incarnation's floor", d.leases().sqlAcquiredEpochs(tables, session, three[1:]))
		}
	} else {
		st("acquire (new epochs in the same statement)", d.leases().sqlAcquire(tables, session, holder, names))
	}
	st("release one lease", d.leases().sqlRelease(tables, session, one))
	st("record a resign request for one term, with a preferred holder", d.leases().sqlRequestResign(tables, session, one[0], "node-b", 2*ttl))
	st("record a resign request for one term, without a preference", d.leases().sqlRequestResign(tables, session, one[0], "", 2*ttl))
	st("notify a session of a resign request", d.sessions().sqlNotifySession(tables, session))
	st("read a session's pending resign requests", d.leases().sqlPendingResigns(tables, session, names))
	st("release three leases", d.leases().sqlRelease(tables, session, three))
	switch d.wakes {
	case wake.Through:
		st("release three leases, notifying the listeners at commit", d.releaseNotify(tables, d.leases().sqlRelease(tables, session, three)).stmt)
		st("notify the listeners (a pool's change)", d.sqlNotify(wakeChannel(tables), "pool|global/orders|generation"))
		section("listen for notifications", pgListen(wakeChannel(tables)))
		section("listen for a listening connection's probe, first", pgListen(goldenProbeChannel))
		st("send a listening connection its probe", pgNotify(goldenProbeChannel, "|leasehold-probe|"))
		section("stop listening for the probe, once it arrived", pgUnlisten(goldenProbeChannel))
		section("begin a decision on the listening connection", pgBeginDecide)
	case wake.Sockets:
		section("the database file, for the wake-up sockets next to it", d.databaseFile)
	}
	if d.busyTimeout != "" {
		section("start-up: the connection's busy timeout", d.busyTimeout)
	}
	st("set a term's data (a member's acknowledged generation)", d.pools().sqlSetData(tables, session, one[0], "42"))
	if d.wakes == wake.Through {
		st("set a term's data, notifying the listeners at commit (an acknowledgement that wakes the pool's collector)",
			d.writeNotify(tables, d.pools().sqlSetData(tables, session, one[0], "42"), "pool|global/orders|wake|a1b2").stmt)
	}
	st("publish a pool's next generation (compare-and-set)", d.pools().sqlPublish(tables, "pool|global/orders|generation", 41, "a1b2,c3d4"))
	lo, hi, _ := prefixRange("pool|global/orders|member|")
	if d.lockFirst() {
		st("prune dead pool members, 1 of 2: lock those that look dead", d.pools().sqlLockDead(tables, lo, hi, 10*ttl))
		st("prune dead pool members, 2 of 2: delete those of them still dead", d.pools().sqlPruneNames(tables, names, 10*ttl))
	} else {
		st("prune dead pool members", d.pools().sqlPruneDead(tables, lo, hi, 10*ttl))
	}
	lockRows := []string{"lock|global/accounts|42", "lock|global/accounts|7"}
	floors := []Term{{Name: "lockfloor|global/accounts|3", Epoch: 12}, {Name: "lockfloor|global/accounts|9", Epoch: 7}}
	lockTerms := []FlooredTerm{
		{Term: Term{Name: "lock|global/accounts|42", Epoch: 12}, Floor: "lockfloor|global/accounts|3"},
		{Term: Term{Name: "lock|global/accounts|7", Epoch: 7}, Floor: "lockfloor|global/accounts|9"},
	}
	if !d.lockFirst() {
		st("keyed locks, first: take the write lock", d.leases().sqlWriteLock(tables))
	}
	if w := d.sqlFenceWrite(tables, "global/billing"); w.q != "" {
		st("fencing check, first: take the write lock", w)
	}
	st("keyed locks: lock floor rows (or lock rows), with their epochs", d.floored().sqlLockEpochs(tables, []string{floors[0].Name, floors[1].Name}))
	st("keyed locks: create lock rows (or floor rows) at their floors' epochs", d.floored().sqlInsert(tables, floors))
	st("keyed locks, release: raise the floors to the epochs released", d.floored().sqlRaiseFloors(tables, floors))
	st("keyed locks, release: delete the rows of the terms", d.floored().sqlDeleteTerms(tables, session, lockTerms))
	if d.wakes == wake.Through {
		st("keyed locks, release: delete the rows of the terms, notifying the listeners at commit",
			d.releaseNotify(tables, d.floored().sqlDeleteTerms(tables, session, lockTerms)).stmt)
	}
	lo, hi, _ = prefixRange("lock|global/accounts|")
	st("keyed locks, prune: read up to 500 dead lock rows", d.floored().sqlReadDead(tables, lo, hi, 10*ttl, 500))
	if d.lockFirst() {
		st("keyed locks, prune: lock them, in name order", d.leases().sqlLockRows(tables, lockRows))
	}
	st("keyed locks, prune: delete those of them still dead at the epoch read", d.floored().sqlDeleteDead(tables, lockTerms, 10*ttl))
	st("read leases", d.leases().sqlSelect(tables, names))
	st("list all leases", d.leases().sqlList(tables, "", ""))
	lo, hi, _ = prefixRange("pool|global/orders|")
	st("list leases by prefix", d.leases().sqlList(tables, lo, hi))
	st("database clock", d.leases().sqlNow())
	st("fencing check inside the caller's transaction", d.leases().sqlFence(tables, "global/billing"))
	part := PartitionSQL{d}
	id, _ := part.Column("orders.id")
	bucket, _ := part.Column("bucket")
	section("partitioned query: member 1 of 3 by an integer key (Assignment.Scope)",
		render("SELECT * FROM orders WHERE "+part.ModIn(id, 3, []int{1})))
	section("partitioned query: partitions 2, 5 and 6 of 8 by an integer key",
		render("SELECT * FROM orders WHERE "+part.ModIn(id, 8, []int{2, 5, 6})))
	section("partitioned query: member 1 of 3 by a bucket column (Assignment.BucketScope)",
		render("SELECT * FROM orders WHERE state = ? AND "+part.Ranges(bucket, [][2]int{{1365, 2730}}), "pending"))
	section("partitioned query: two ranges of buckets",
		render("SELECT * FROM orders WHERE "+part.Ranges(bucket, [][2]int{{0, 512}, {1024, 1536}})))
	if d.incarnation != "" {
		st("failover: create the incarnation row unless it exists", d.incarnations().sqlEnsureIncarnation(tables))
		st("failover: adopt the incarnation answering, with a hold-off and a new epoch floor", d.incarnations().sqlAdopt(tables, ttl))
		st("failover: move a live session to the incarnation answering", d.incarnations().sqlRebind(tables, session))
		st("failover: the terms the rows show a session holding", d.incarnations().sqlSessionTerms(tables, session))
	}
	section("create the version table", d.schema().createMigrationsTable(tables))
	for _, m := range migrations {
		for _, s := range m.statements(d.schema(), tables) {
			section(fmt.Sprintf("migration %d: %s", m.Version, m.Description), s)
		}
		section(fmt.Sprintf("record migration %d", m.Version), render(d.schema().sqlRecordVersion(tables, m.Version), m.Description))
	}
	section("current schema version", render(d.schema().sqlCurrentVersion(tables)))
	if c := d.sqlCountTables(tables.Migrations); c.q != "" {
		st("does the version table exist", c)
	}
	lockArgs := []any{d.lock.lockName(tables, "app"), int64(60)} // "app" stands for DATABASE()
	for _, s := range migrationLockSQL(d, tables, time.Minute) {
		section("migration lock", render(s, lockArgs[:strings.Count(s, "?")]...))
	}

	if d.cluster != nil {
		section("start-up: is the server a node of a multi-primary cluster", render(d.cluster.sql))
		if c := d.cluster.dialect("ON"); c != nil {
			st("cluster: acquire, after the lock: change the row of each dead session holding a named lease",
				c.sqlMarkDeadSessions(tables, session, names))
			st("cluster: fencing check, first: change the lease row", c.sqlFenceWrite(tables, "global/billing"))
			st("cluster: fencing check of a pool's generation, first: change the generation row",
				c.sqlFenceGenerationWrite(tables, "pool|global/orders|generation"))
			st("cluster: keyed locks: create lock rows at their floors' epochs, read by the insert",
				c.floored().sqlCreate(tables, nil, flooredRows(lockTerms)))
			st("cluster: keyed locks, release: delete the rows of the terms whose floors are at their epochs",
				c.floored().sqlDeleteTerms(tables, session, lockTerms))
			st("cluster: keyed locks, prune: delete those still dead at the epoch read whose floors are at it",
				c.floored().sqlDeleteDead(tables, lockTerms, 10*ttl))
			st("cluster: keyed locks, last: is the transaction still open", stmt{q: c.sqlInTransaction()})
			st("cluster: acquire, after the lock: start the terms, of the leases still takeable",
				c.leases().sqlAcquireTerms(tables, session, holder, three[1:]))
		}
	}

	return b.String(), nil
}
