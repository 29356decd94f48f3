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
