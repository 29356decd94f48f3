package coordination_test

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// Keyed locks: one process at a time works on an account, for account ids
// known only at run time. The work's context ends Margin before anyone
// else could take the key, and the epoch fences its commit; the epoch
// rises with every grant of the key, so a table can keep the highest one
// it accepted as its own fencing token.
func ExampleLocks_Do() {
	db, cleanup := openExampleDB()
	defer cleanup()
	type Balance struct {
		Account string `gorm:"primaryKey"`
		Cents   int64
		Epoch   int64 // the lock epoch of the last write
	}
	if err := db.AutoMigrate(&Balance{}); err != nil {
		panic(err)
	}
	id, _ := identity.New("node-a", "eu-1")
	coord, _ := coordination.New(db, id, coordination.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()
	accounts, err := coord.Locks(coordination.GlobalScope, "accounts")
	if err != nil {
		panic(err)
	}

	for range 2 {
		err = accounts.Do(ctx, "acct-42", func(ctx context.Context, lease *coordination.Lease) error {
			return db.Transaction(func(tx *gorm.DB) error {
				if err := lease.Fence(tx); err != nil {
					return err
				}
				var b Balance
				tx.FirstOrInit(&b, Balance{Account: "acct-42"})
				if b.Epoch >= lease.Epoch() {
					return errors.New("a newer holder already wrote")
				}
				b.Cents, b.Epoch = b.Cents+100, lease.Epoch()
				return tx.Save(&b).Error
			})
		})
		if err != nil {
			panic(err)
		}
	}
	var b Balance
	db.First(&b, "account = ?", "acct-42")
	fmt.Println("cents:", b.Cents, "epoch of the last write:", b.Epoch)

	// A key held elsewhere is refused at once by TryLock.
	held, _ := accounts.Lock(ctx, "acct-7")
	_, err = accounts.TryLock(ctx, "acct-7")
	fmt.Println("second TryLock refused:", errors.Is(err, coordination.ErrNotAcquired))
	_ = held.Release(ctx)

	cancel()
	<-coord.Done()
	// Output:
	// cents: 200 epoch of the last write: 2
	// second TryLock refused: true
}

// A concurrency limit: at most two exports at once across every process;
// each slot has its own fencing epoch.
func ExampleSemaphore() {
	db, cleanup := openExampleDB()
	defer cleanup()
	id, _ := identity.New("node-a", "eu-1")
	coord, _ := coordination.New(db, id, coordination.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()
	exports, err := coord.Semaphore(coordination.GlobalScope, "exports", 2)
	if err != nil {
		panic(err)
	}
	a, _ := exports.Acquire(ctx)
	b, _ := exports.Acquire(ctx)
	_, err = exports.TryAcquire(ctx)
	fmt.Println("two held, a third refused:", a.Key() != b.Key(), errors.Is(err, coordination.ErrNotAcquired))
	_ = a.Release(ctx)
	c, _ := exports.Acquire(ctx)
	fmt.Println("the freed slot again, at a higher epoch:", c.Key() == a.Key(), c.Epoch() > a.Epoch())
	_ = b.Release(ctx)
	_ = c.Release(ctx)
	cancel()
	<-coord.Done()
	// Output:
	// two held, a third refused: true true
	// the freed slot again, at a higher epoch: true true
}
