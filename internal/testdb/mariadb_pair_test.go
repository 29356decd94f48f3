package testdb

import (
	"context"
	"fmt"
	"testing"

	"gorm.io/gorm"
)

// serverID reads the server_id of the server the handle reaches: what
// tells a promoted MariaDB replica from the primary it replaced.
func serverID(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var id int64
	retry(t, "read the server_id", func(ctx context.Context) error {
		return db.WithContext(ctx).Raw("SELECT @@server_id").Row().Scan(&id)
	})
	return id
}

// TestMariaDBPairSyncFailover: in a semi-synchronous pair a commit waits
// for the replica; after the primary stops (and, the second time, is
// killed with SIGKILL) and the replica is promoted, every committed row is
// on the new primary, the client reconnects through the unchanged DSN and
// reaches the other server_id. Rebuild makes the old primary a replica
// again, with a new server_id, and the second failover swaps the roles
// back.
func TestMariaDBPairSyncFailover(t *testing.T) {
	t.Parallel()
	p := MariaDBPair(t, Sync)
	if p.Mode().String() != "sync" {
		t.Fatalf("mode %q, want sync", p.Mode())
	}
	dsn := p.DSN("app")
	db := openPair(t, p, "app")
	first, second := p.Primary(), p.Standby()

	// A commit with the replica stopped waits for it and completes once
	// it is back.
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), pairTestTimeout)
		defer cancel()
		done <- db.WithContext(ctx).Exec("INSERT INTO pair_rows (id) VALUES (1)").Error
	}()
	retry(t, "see the insert wait for the replica", func(ctx context.Context) error {
		st, err := globalStatus(ctx, first, "Rpl_semi_sync_master_wait_sessions")
		if err == nil && st["Rpl_semi_sync_master_wait_sessions"] != "1" {
			err = fmt.Errorf("%s commits waiting for the semi-synchronous replica", st["Rpl_semi_sync_master_wait_sessions"])
		}
		return err
	})
	select {
	case err := <-done:
		t.Fatalf("the insert finished with the semi-synchronous replica stopped: %v", err)
	default:
	}
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the insert waiting for the replica: %v", err)
	}

	insertRows(t, db, 2, 50)
	before := serverID(t, db)

	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if p.Primary() != second || p.Standby() != first {
		t.Fatal("after Promote, Primary is not the promoted server")
	}
	wantRows(t, db, 50)
	after := serverID(t, db)
	if after == before {
		t.Fatalf("server_id %d after the promotion, the same as before", after)
	}
	insertRows(t, db, 51, 60) // the promoted server commits without a replica

	if err := p.Rebuild(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := p.DSN("app"); got != dsn {
		t.Fatalf("DSN after Rebuild %q, want %q", got, dsn)
	}
	if !first.Running() || p.Standby() != first {
		t.Fatal("after Rebuild the old primary is not the running replica")
	}
	insertRows(t, db, 61, 100)

	if err := second.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if p.Primary() != first {
		t.Fatal("the second failover did not make the first primary the primary again")
	}
	wantRows(t, db, 100)
	if again := serverID(t, db); again == before || again == after {
		t.Fatalf("server_id %d after the second promotion, want one the pair never used (it used %d and %d)", again, before, after)
	}
}

// TestMariaDBPairAsyncLosesWrites: rows committed on the primary while the
// replica is stopped are absent on the replica promoted after the primary
// stops. After Rebuild, SetMode switches semi-synchronous replication on
// and off.
func TestMariaDBPairAsyncLosesWrites(t *testing.T) {
	t.Parallel()
	p := MariaDBPair(t, Async)
	if p.Mode().String() != "async" {
		t.Fatalf("mode %q, want async", p.Mode())
	}
	db := openPair(t, p, "app")
	insertRows(t, db, 1, 20)
	if err := p.WaitCaughtUp(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.Standby().Stop(); err != nil {
		t.Fatal(err)
	}
	insertRows(t, db, 21, 40) // acknowledged, on the primary only
	wantRows(t, db, 40)
	if err := p.Primary().Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Standby().Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	wantRows(t, db, 20)
	// The ids the old primary used are free again on the new one.
	insertRows(t, db, 21, 21)
	if err := p.Rebuild(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(pairCtx(t)); err != nil {
		t.Fatal(err)
	}
	semiSync := func(ctx context.Context) string {
		st, err := globalStatus(ctx, p.Primary(), "Rpl_semi_sync_master_status")
		if err != nil {
			t.Fatal(err)
		}
		return st["Rpl_semi_sync_master_status"]
	}
	if err := p.SetMode(pairCtx(t), Sync); err != nil {
		t.Fatal(err)
	}
	if got := semiSync(pairCtx(t)); got != "ON" {
		t.Fatalf("semi-synchronous replication %q after SetMode(Sync)", got)
	}
	insertRows(t, db, 22, 30)
	if err := p.SetMode(pairCtx(t), Async); err != nil {
		t.Fatal(err)
	}
	if got := semiSync(pairCtx(t)); got != "OFF" {
		t.Fatalf("semi-synchronous replication %q after SetMode(Async)", got)
	}
}
