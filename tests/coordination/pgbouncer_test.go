package coordination_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestFencedTransactionsThroughPgBouncer is a user's report: a fenced
// global singleton through PgBouncer in transaction mode. With pgx's
// default statement cache (default_query_exec_mode=cache_statement) the
// fencing check, prepared as a named statement on whichever server
// connection PgBouncer had given the client, failed with "prepared
// statement ... does not exist" (SQLSTATE 26000) or "already exists"
// (42P05) once the client's later transaction ran on another one; the
// coordinator now refuses that DSN at start-up (store.ErrPoolerMode,
// TestPoolerCheck in tests/store). With the setting docs/operations.md
// asks for (default_query_exec_mode=exec), many fenced transactions, from
// more client connections than PgBouncer has server connections, must all
// commit. One worker's transactions also write the lease's data
// (Lease.SetDataIn), another statement of the library in the caller's
// transaction.
func TestFencedTransactionsThroughPgBouncer(t *testing.T) {
	t.Parallel() // see runCasesOn
	tg := testdb.PgBouncerTarget
	driver, dsn := tg.OpenDSN(t)
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open through PgBouncer: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	const workers, each = 3 * testdb.PgBouncerPoolSize, 25
	sqlDB.SetMaxOpenConns(workers + 2)
	sqlDB.SetMaxIdleConns(workers + 2)
	if err := db.Exec("CREATE TABLE fenced_count (id INT PRIMARY KEY, n BIGINT NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO fenced_count VALUES (1, 0)").Error; err != nil {
		t.Fatal(err)
	}

	// Three processes of the singleton, as the user ran. Their renewals
	// queue for one of PgBouncer's four server connections behind twelve
	// clients' transactions: with a trust window of a minute (steady), a
	// busy machine cannot end the term while they wait, and a failed
	// transaction can only be the pooler's.
	a := start(t, db, "node-a", steady(fastConfig()))
	start(t, db, "node-b", steady(fastConfig()))
	start(t, db, "node-c", steady(fastConfig()))
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "ledger"))

	var mu sync.Mutex
	var failed []error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := db.Transaction(func(tx *gorm.DB) error {
					if err := l.Fence(tx); err != nil {
						return err
					}
					// One worker also writes the lease's data in its
					// transactions, as a scheduled worker completes a slot
					// (Lease.SetDataIn). One only: the fencing read's
					// share lock makes two such writers deadlock.
					if w == 0 {
						if err := l.SetDataIn(tx, fmt.Sprint(i)); err != nil {
							return err
						}
					}
					return tx.Exec("UPDATE fenced_count SET n = n + 1 WHERE id = 1").Error
				})
				if err != nil {
					mu.Lock()
					failed = append(failed, fmt.Errorf("worker %d, transaction %d: %w", w, i, err))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d fenced transactions failed; the first: %v", len(failed), workers*each, errors.Join(failed[:min(3, len(failed))]...))
	}
	// The test's own read, on a pool of its own.
	check, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if checkDB, err := check.DB(); err == nil {
		defer checkDB.Close()
	}
	var n int64
	if err := check.Raw("SELECT n FROM fenced_count WHERE id = 1").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if want := int64(workers*each - len(failed)); n != want {
		t.Errorf("the counter is %d, want %d: a transaction that reported success did not commit, or one that failed did", n, want)
	}
	if !l.Valid() {
		t.Error("the lease was lost meanwhile")
	}
}
