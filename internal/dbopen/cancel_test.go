package dbopen

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestPureSQLiteCancelledQueryThenClose runs statements whose contexts are
// cancelled while they run, on a pool that closes every connection as soon
// as it is returned, so that the close of a connection races with the
// driver's reaction to the cancellation. Under -race, a driver that reads
// the connection handle in its interrupt goroutine without the lock that
// Close takes fails this test. Every coordinator statement runs under a
// timeout that cancels its context, so this is the ordinary path.
func TestPureSQLiteCancelledQueryThenClose(t *testing.T) {
	db, err := Open(SQLitePure, SQLiteDSN(SQLitePure, filepath.Join(t.TempDir(), "cancel.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sqlDB.Close() }()
	sqlDB.SetMaxOpenConns(4)
	sqlDB.SetMaxIdleConns(0) // every returned connection is closed at once

	// A statement that runs for far longer than its timeout unless it is
	// interrupted, and still ends by itself if an interruption is missed.
	const slow = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) SELECT count(*) FROM c`
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 80; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%40)*250*time.Microsecond)
				_, err := sqlDB.ExecContext(ctx, slow)
				cancel()
				_ = err // interrupted, or finished: both are fine; the race is the failure
			}
		}()
	}
	wg.Wait()
}
