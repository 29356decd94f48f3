package testdb

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// TestPgBouncerTargetPoolsTransactions opens a database on the PgBouncer
// target and checks that it pools transactions: more client connections
// than PgBouncer has server connections each hold on to their client
// connection and still get answers, from at most PgBouncerPoolSize
// server processes. In session pooling the extra client would wait
// until the test's bound.
func TestPgBouncerTargetPoolsTransactions(t *testing.T) {
	tg := PgBouncerTarget
	db := tg.Open(t)
	if got := db.Name(); got != tg.Dialect {
		t.Errorf("dialector %q, want %q", got, tg.Dialect)
	}
	if err := db.Exec("CREATE TABLE marker (id INT PRIMARY KEY)").Error; err != nil {
		t.Fatalf("create table: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	if _, dsn := tg.OpenDSN(t); !strings.HasSuffix(dsn, PgBouncerDSNSetting) {
		t.Errorf("the DSN does not end with %q", PgBouncerDSNSetting)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := PgBouncerPoolSize + 2
	sqlDB.SetMaxOpenConns(clients)
	conns := make([]*sql.Conn, clients)
	for i := range conns {
		if conns[i], err = sqlDB.Conn(ctx); err != nil {
			t.Fatalf("client connection %d: %v", i, err)
		}
		defer conns[i].Close()
	}
	pids := map[int]bool{}
	for round := range 3 {
		for i, c := range conns {
			var pid int
			if err := c.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatalf("round %d, client connection %d: %v", round, i, err)
			}
			pids[pid] = true
		}
	}
	if len(pids) > PgBouncerPoolSize {
		t.Errorf("%d client connections were served by %d server processes, want at most %d", clients, len(pids), PgBouncerPoolSize)
	}

	srv := tg.Server(t)
	if srv == nil || srv.Kind() != KindPostgres || !srv.Running() {
		t.Errorf("Server(%s) is nil, not PostgreSQL or not running", tg.Name)
	}
	driver, dsn := tg.OpenDSN(t)
	if err := selectOne(t, driver, dsn); err != nil {
		t.Fatalf("OpenDSN gave %s, which does not work: %v", driver, err)
	}
}

// TestPgBouncerHandBackWaitsForItsClients checks that a test's database
// on the PgBouncer target is dropped only once PgBouncer has no client
// connection to it: while one is open, the wait runs out; once the
// clients are closed, the database is dropped and PgBouncer goes on.
func TestPgBouncerHandBackWaitsForItsClients(t *testing.T) {
	tg := PgBouncerTarget
	p, ok := tg.backend().(*pgbouncerTarget)
	if !ok {
		t.Fatalf("the backend of %s is %T", tg.Name, tg.backend())
	}
	p.start(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := uniqueName(t)
	if err := p.upstream.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.upstream.DropDatabase(context.Background(), name) }()

	db, err := sql.Open("pgx", p.bouncer.DSN(name)+PgBouncerDSNSetting)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	err = p.awaitQuiet(ctx, name, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "cl_active=1 after") {
		t.Fatalf("awaitQuiet with a client connected = %v, want a wait run out on cl_active=1", err)
	}

	_ = conn.Close()
	_ = db.Close()
	if err := p.handBack(ctx, name); err != nil {
		t.Fatalf("hand back: %v", err)
	}
	admin, err := p.upstream.adminPool()
	if err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := admin.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || exists {
		t.Fatalf("database %s exists after hand back: %v, %v", name, exists, err)
	}
	if !p.bouncer.Running() {
		t.Fatal("PgBouncer is not running after a hand back")
	}
	driver, dsn := tg.OpenDSN(t)
	if err := selectOne(t, driver, dsn); err != nil {
		t.Fatalf("a new database through PgBouncer after a hand back: %v", err)
	}
}
