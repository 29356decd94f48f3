package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGaleraCluster starts the shared three-node cluster and checks that a
// row committed on one node is read on each other, that every node is in
// the cluster with wsrep on, and that a write-write conflict between two
// nodes fails one of the commits at certification.
func TestGaleraCluster(t *testing.T) {
	c, dsns := GaleraCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbs := make([]*sql.DB, len(dsns))
	for i, dsn := range dsns {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
		var on int
		if err := db.QueryRowContext(ctx, "SELECT @@wsrep_on").Scan(&on); err != nil || on != 1 {
			t.Fatalf("node %d (port %d): @@wsrep_on = %d, %v; want 1", i, c.Node(i).Port(), on, err)
		}
	}
	if _, err := dbs[0].ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].ExecContext(ctx, "INSERT INTO t VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(dbs); i++ {
		conn, err := dbs[i].Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A read that waits until the node has applied every commit
		// the cluster had when it began.
		if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := conn.QueryRowContext(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != 1 {
			t.Fatalf("node %d: read v = %d, %v; want the row node 0 committed", i, v, err)
		}
		conn.Close()
	}

	// Two transactions on two nodes change the same row: one commit
	// fails certification (or is aborted by the other's replication).
	tx0, err := dbs[0].BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx0.ExecContext(ctx, "UPDATE t SET v = 10 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].ExecContext(ctx, "UPDATE t SET v = 20 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx0.Commit(); err == nil {
		t.Fatal("two nodes committed conflicting changes of one row; want one to fail")
	} else {
		t.Logf("the second commit failed as it should: %v", err)
	}
}

// TestGaleraWithoutTheLibrary: without the Galera library the cluster
// does not start, and the error is ErrBinariesMissing, which skips the
// tests of the galera target loudly (or fails them when REQUIRE_DIALECTS
// names mysql), as a missing server does.
func TestGaleraWithoutTheLibrary(t *testing.T) {
	saved := galeraProvider
	galeraProvider = filepath.Join(t.TempDir(), "libgalera_smm.so")
	defer func() { galeraProvider = saved }()
	c, err := StartGaleraCluster(context.Background())
	if err == nil {
		_ = c.Close()
		t.Fatal("StartGaleraCluster without the Galera library succeeded")
	}
	if !errors.Is(err, ErrBinariesMissing) {
		t.Fatalf("StartGaleraCluster without the Galera library: %v; want ErrBinariesMissing", err)
	}
	fail, msg := decide("", "mysql", fmt.Errorf("the galera target: %w", err))
	if fail || !strings.HasPrefix(msg, "LOUD: testdb: SKIPPING MYSQL TEST: the galera target: ") {
		t.Fatalf("decide = %v, %q; want a loud skip", fail, msg)
	}
}

// TestPortTakenByStateTransfer: a joiner whose rsync state transfer found
// its receive port taken, or lost its rsync daemon for it, is a start to
// try again on fresh ports, as a server's own "Address already in use"
// is; any other failed start is not.
func TestPortTakenByStateTransfer(t *testing.T) {
	for log, want := range map[string]bool{
		"2026-11-28 5:12:20 0 [ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use": true,
		"WSREP_SST: [ERROR] rsync or stunnel daemon port '4444' has been taken by another program (20261128 05:12:20.100)\n" +
			"WSREP_SST: [ERROR] Cleanup after exit with status: 16 (20261128 05:12:20.123)": true,
		"WSREP_SST: [ERROR] Cleanup after exit with status: 32 (20261128 05:12:20.123)":   false,
		"2026-11-28 5:12:20 0 [ERROR] InnoDB: Cannot allocate memory for the buffer pool": false,
	} {
		if got := portTaken(log); got != want {
			t.Errorf("portTaken(%q) = %v, want %v", log, got, want)
		}
	}
}
