package coordination_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
)

// recordingPool is the connection pool of a read replica that records
// every statement reaching it, whichever way it comes (through gorm or
// straight to the pool).
type recordingPool struct {
	gorm.ConnPool
	mu    sync.Mutex
	stmts []string
}

func (p *recordingPool) record(q string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stmts = append(p.stmts, q)
}

func (p *recordingPool) taken() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.stmts
	p.stmts = nil
	return out
}

func (p *recordingPool) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	p.record(q)
	return p.ConnPool.PrepareContext(ctx, q)
}

func (p *recordingPool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	p.record(q)
	return p.ConnPool.ExecContext(ctx, q, args...)
}

func (p *recordingPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	p.record(q)
	return p.ConnPool.QueryContext(ctx, q, args...)
}

func (p *recordingPool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	p.record(q)
	return p.ConnPool.QueryRowContext(ctx, q, args...)
}

// BeginTx starts a transaction on the pool; its statements go to the
// transaction, not through the pool, and are not recorded.
func (p *recordingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	return p.ConnPool.(gorm.TxBeginner).BeginTx(ctx, opts)
}

// GetDBConn returns the pool's *sql.DB, from which gorm takes pinned
// connections.
func (p *recordingPool) GetDBConn() (*sql.DB, error) {
	return p.ConnPool.(*sql.DB), nil
}

// poolDialector hands dbresolver an existing pool instead of opening one,
// so the replica is the test's own handle and is closed with it.
type poolDialector struct {
	gorm.Dialector
	pool gorm.ConnPool
}

func (d poolDialector) Initialize(db *gorm.DB) error {
	db.ConnPool = d.pool
	return nil
}

// caseReadReplica registers gorm's read/write splitting on the caller's db
// with a replica that is another, empty database, and shows that the
// library sends every statement to the primary: migration lands there,
// campaigns succeed, reads see the holder's term, and nothing of the
// library's reaches the replica. The primary is registered as the source
// through a recording pool as well, to show that statements that must share
// one connection (the migration lock and the steps under it) stay on it
// instead of being spread over the source's pool.
func caseReadReplica(t *testing.T, b *bundle) {
	ctx := context.Background()
	replica := b.target.Open(t)
	replicaDB, err := replica.DB()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingPool{ConnPool: replicaDB}
	primaryDB, err := b.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	src := &recordingPool{ConnPool: primaryDB}
	if err := b.db.Use(dbresolver.Register(dbresolver.Config{
		Sources:  []gorm.Dialector{poolDialector{Dialector: b.db.Dialector, pool: src}},
		Replicas: []gorm.Dialector{poolDialector{Dialector: replica.Dialector, pool: rec}},
	})); err != nil {
		t.Fatalf("register dbresolver: %v", err)
	}
	// The resolver is in force: a plain read of the caller's goes to the
	// replica.
	var one int
	if err := b.db.Raw("SELECT 1 AS replica_probe").Row().Scan(&one); err != nil {
		t.Fatal(err)
	}
	if len(rec.taken()) == 0 {
		t.Fatalf("setup: a plain SELECT did not reach the replica; the resolver is not routing")
	}

	a := start(t, b.db, "node-a", b.fastConfig()) // migrates
	c := start(t, b.db, "node-c", b.fastConfig())
	ea := election(t, a.Coordinator, coordination.GlobalScope, "replicated")
	ec := election(t, c.Coordinator, coordination.GlobalScope, "replicated")
	l := mustCampaign(t, ea)
	if !ea.IsLeader() || ec.IsLeader() {
		t.Fatalf("IsLeader: holder %v, other %v; want true, false", ea.IsLeader(), ec.IsLeader())
	}
	settle(t, b.db) // each process's read on its node sees the grant
	for _, e := range []*coordination.Election{ea, ec} {
		info, err := e.Leader(ctx)
		if err != nil {
			t.Fatalf("Leader: %v", err)
		}
		if info.Holder != a.Holder() || !info.Live || info.Epoch != l.Epoch() {
			t.Fatalf("Leader() = %+v, want %s live at epoch %d", info, a.Holder(), l.Epoch())
		}
	}
	infos, err := c.Admin().Leases(ctx)
	if err != nil {
		t.Fatalf("Leases: %v", err)
	}
	found := false
	for _, in := range infos {
		found = found || (in.Key == l.Key() && in.Holder == a.Holder() && in.Live)
	}
	if !found {
		t.Fatalf("Leases() = %+v, want %s held by %s", infos, l.Key(), a.Holder())
	}
	if err := b.db.Transaction(func(tx *gorm.DB) error { return l.Fence(tx) }); err != nil {
		t.Fatalf("Fence in a transaction on the primary: %v", err)
	}
	release(t, l)
	l2 := mustCampaign(t, ec)
	release(t, l2)
	if v, err := rawStore(t, b.db).SchemaVersion(ctx); err != nil || v != store.LatestVersion {
		t.Fatalf("primary's schema version = %d, %v; want %d", v, err, store.LatestVersion)
	}

	srcStmts := src.taken()
	if len(srcStmts) == 0 {
		t.Fatalf("no statement reached the source through the resolver")
	}
	for _, q := range srcStmts {
		for _, pinned := range []string{"GET_LOCK", "BEGIN IMMEDIATE", "ALTER TABLE", "CREATE TABLE"} {
			if strings.Contains(q, pinned) {
				t.Fatalf("a statement that must stay on the migration's pinned connection went through the pool: %s", q)
			}
		}
	}
	if got := rec.taken(); len(got) != 0 {
		t.Fatalf("%d library statements reached the replica, first: %s", len(got), got[0])
	}
	tables, _ := store.TablesFor("")
	for _, tb := range []string{tables.Leases, tables.Migrations} {
		if replica.Migrator().HasTable(tb) {
			t.Fatalf("the replica has table %s: the library migrated it", tb)
		}
	}
}

// caseUserCallbacksSeeAcquire registers a gorm callback on the caller's db
// and shows that it sees the acquire statement: the library sends it
// through gorm, so the caller's logging and tracing plugins see it too.
func caseUserCallbacksSeeAcquire(t *testing.T, b *bundle) {
	var mu sync.Mutex
	var seen []string
	watch := func(db *gorm.DB) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, db.Statement.SQL.String())
	}
	cb := b.db.Callback()
	for _, err := range []error{
		cb.Raw().After("gorm:raw").Register("test:watch", watch),
		cb.Row().After("gorm:row").Register("test:watch", watch),
		cb.Query().After("gorm:query").Register("test:watch", watch),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	a := start(t, b.db, "node-a", b.fastConfig())
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "watched"))
	release(t, l)
	mu.Lock()
	defer mu.Unlock()
	for _, q := range seen {
		if strings.Contains(q, "SET holder = ") && strings.Contains(q, ", acquired_at_us = ") {
			return
		}
	}
	t.Fatalf("the caller's gorm callback never saw the acquire statement among %d statements", len(seen))
}

// caseAbandonedAcquire shows that an acquire whose context ends while the
// lease row is locked does not take a term later: a fenced transaction
// holds the row of an expired term, a follower's acquire times out on the
// client, and after the fenced transaction ends the row's epoch stays
// where it was (or is the one the acquire reported, where the database did
// not make it wait).
func caseAbandonedAcquire(t *testing.T, b *bundle) {
	ctx := context.Background()
	s := rawStore(t, b.db)
	if _, err := s.Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	const name = "global/abandoned"
	if epoch, ok, err := acquireOne(ctx, s, newSession(t, s, "holder-a"), "holder-a", name); err != nil || !ok || epoch != 1 {
		t.Fatalf("first acquire = %d, %v, %v; want 1, true, nil", epoch, ok, err)
	}
	sb := newSession(t, s, "holder-b")
	expireNow(t, b.db, name)

	tx := fencedTx(t, b.db, s, name)

	actx, cancel := context.WithTimeout(ctx, time.Second)
	epoch, ok, err := acquireOne(actx, s, sb, "holder-b", name)
	cancel()
	known := int64(1)
	if err == nil && ok {
		known = epoch // this database did not make the acquire wait
	}
	t.Logf("acquire while fenced: epoch=%d ok=%v err=%v", epoch, ok, err)

	if err := tx.Commit().Error; err != nil {
		t.Fatalf("end the fenced transaction: %v", err)
	}
	// An abandoned acquire that the server still runs commits as soon as it
	// gets the row, within milliseconds of the fenced transaction's end.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if r := row(t, b.db, name); r.Epoch != known {
			t.Fatalf("row is at epoch %d held by %q after the acquire reported epoch=%d ok=%v err=%v: "+
				"a term was taken without the process knowing", r.Epoch, r.Holder, epoch, ok, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
