package leaseholdtest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/leaseholdtest"
	"github.com/leasehold/leasehold/workers"
)

// The two tests below are written as a user writes tests of their own
// leader and pool code: the code under test (runLedger, processOrders)
// writes to the test's own database in transactions fenced by its lease
// or assignment, and leasehold runs on the kit's in-process database.
// testing/synctest's Test runs them on fake time, so the TTLs and
// intervals of a real deployment (15 s, 2 s) cost no wall time.

// appDB opens the test's own database: here SQLite in memory (sqliteDriver
// is the cgo driver, or the pure-Go one where cgo is off). It is closed
// when the test ends.
func appDB(t *testing.T, models ...any) *gorm.DB {
	t.Helper()
	db, err := dbopen.Open(sqliteDriver, "file::memory:", &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1) // one connection: one in-memory database
	t.Cleanup(func() { _ = sqlDB.Close() })
	if err := db.AutoMigrate(models...); err != nil {
		t.Fatal(err)
	}
	return db
}

// entry is a line of the ledger.
type entry struct {
	ID    uint
	Node  string
	Epoch int64
}

// runLedger is the singleton under test: while it leads, it appends an
// entry every second, each in a transaction fenced by its lease.
func runLedger(db *gorm.DB, node string) coordination.LeaderFunc {
	return func(ctx context.Context, l *coordination.Lease) error {
		for {
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := l.Fence(tx); err != nil {
					return err
				}
				return tx.Create(&entry{Node: node, Epoch: l.Epoch()}).Error
			})
			if err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// TestLedgerStopsWritingAfterLoss: the leader is paused beyond its TTL,
// another process takes over, and no entry of the old term is written
// after the first entry of the new one.
func TestLedgerStopsWritingAfterLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := appDB(t, &entry{})
		kit := leaseholdtest.New(t)
		a := kit.StartHost(kit.Identity("node-a", "eu"), coordination.Config{}, workers.Config{},
			workers.GlobalSingleton("ledger", runLedger(db, "node-a")))
		time.Sleep(5 * time.Second) // node-a leads and writes
		kit.StartHost(kit.Identity("node-b", "eu"), coordination.Config{}, workers.Config{},
			workers.GlobalSingleton("ledger", runLedger(db, "node-b")))

		a.Pause(time.Minute) // beyond the 15 s TTL: node-b takes over meanwhile
		time.Sleep(5 * time.Second)
		synctest.Wait()

		var entries []entry
		if err := db.Order("id").Find(&entries).Error; err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, e := range entries {
			seen[e.Node] = true
			if i > 0 && e.Epoch < entries[i-1].Epoch {
				t.Errorf("entry %d of epoch %d (%s) written after one of epoch %d", e.ID, e.Epoch, e.Node, entries[i-1].Epoch)
			}
		}
		if !seen["node-a"] || !seen["node-b"] {
			t.Errorf("writers %v, want node-a, then node-b", seen)
		}
	})
}

// order is an item of the partitioned worker.
type order struct {
	ID         int64 `gorm:"primaryKey;autoIncrement:false"`
	DoneBy     string
	Generation int64
	Index      int
	Count      int
}

// processOrders is the partitioned worker under test: it processes the
// orders its assignment owns (Assignment.Scope), one per fenced
// transaction a second, and records which share processed each.
func processOrders(db *gorm.DB, node string) coordination.AssignmentFunc {
	return func(ctx context.Context, a coordination.Assignment) error {
		for {
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := a.Fence(tx); err != nil {
					return err
				}
				var o order
				err := tx.Scopes(a.Scope("id")).Where("done_by = ?", "").Order("id").Take(&o).Error
				if errors.Is(err, gorm.ErrRecordNotFound) {
					return nil
				} else if err != nil {
					return err
				}
				return tx.Model(&order{}).Where("id = ?", o.ID).Updates(map[string]any{
					"done_by": node, "generation": a.Generation, "index": a.Index, "count": a.Count,
				}).Error
			})
			if err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// TestOrdersAcrossRebalance: two members process orders, a third joins,
// and the kit forces one more rebalance; every order is processed once,
// by the member whose assignment owned it in that generation.
func TestOrdersAcrossRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := appDB(t, &order{})
		orders := make([]order, 0, 240)
		for id := int64(-120); id < 120; id++ {
			orders = append(orders, order{ID: id})
		}
		if err := db.CreateInBatches(orders, 100).Error; err != nil {
			t.Fatal(err)
		}
		kit := leaseholdtest.New(t)
		start := func(node string) {
			kit.StartHost(kit.Identity(node, "eu"), coordination.Config{}, workers.Config{},
				workers.GlobalPartitioned("orders", processOrders(db, node), coordination.PoolConfig{}))
		}
		start("node-a")
		start("node-b")
		time.Sleep(10 * time.Second)
		start("node-c") // a join: the pool rebalances to three members
		time.Sleep(10 * time.Second)
		forced := kit.Rebalance("global/orders")
		time.Sleep(2 * time.Minute)
		synctest.Wait()

		if err := db.Order("id").Find(&orders).Error; err != nil {
			t.Fatal(err)
		}
		generations := map[int64]bool{}
		for _, o := range orders {
			a := coordination.Assignment{Index: o.Index, Count: o.Count}
			if o.DoneBy == "" || !a.Owns(o.ID) {
				t.Errorf("order %d: done by %q as %d of %d", o.ID, o.DoneBy, o.Index, o.Count)
			}
			generations[o.Generation] = true
		}
		if !generations[forced] {
			t.Errorf("no order was processed in generation %d, the forced rebalance's (generations %v)", forced, generations)
		}
	})
}
