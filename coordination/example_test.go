package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// openExampleDB opens a throw-away SQLite database.
func openExampleDB() (*gorm.DB, func()) {
	dir, err := os.MkdirTemp("", "leasehold-example")
	if err != nil {
		panic(err)
	}
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "coord.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	return db, func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
		_ = os.RemoveAll(dir)
	}
}

// A cluster singleton: the function runs on one process of the cluster at
// a time, under a context that ends with the term.
func Example() {
	db, cleanup := openExampleDB()
	defer cleanup()

	id, err := identity.New("node-a", "eu-1") // usually identity.FromEnv()
	if err != nil {
		panic(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()

	reports, err := coord.Election(coordination.ClusterScope, "reports")
	if err != nil {
		panic(err)
	}
	_ = reports.Run(ctx, func(ctx context.Context, lease *coordination.Lease) error {
		fmt.Println("leading", lease.Name(), "at epoch", lease.Epoch())
		cancel() // stop the example; a real leader works until ctx is done
		return nil
	})
	<-coord.Done()
	// Output: leading cluster/eu-1/reports at epoch 1
}

// Fencing: a write commits only while this process still holds the lease
// at the epoch it was given.
func ExampleLease_Fence() {
	db, cleanup := openExampleDB()
	defer cleanup()
	type Invoice struct {
		ID    int
		Epoch int64
	}
	if err := db.AutoMigrate(&Invoice{}); err != nil {
		panic(err)
	}
	id, _ := identity.New("node-a", "eu-1")
	coord, _ := coordination.New(db, id, coordination.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()
	billing, _ := coord.Election(coordination.GlobalScope, "billing")
	lease, err := billing.Campaign(ctx)
	if err != nil {
		panic(err)
	}

	err = db.Transaction(func(tx *gorm.DB) error {
		if err := lease.Fence(tx); err != nil {
			return err // rolls back
		}
		return tx.Create(&Invoice{ID: 1, Epoch: lease.Epoch()}).Error
	})
	fmt.Println("write while leading:", err)

	_ = lease.Release(ctx)
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := lease.Fence(tx); err != nil {
			return err
		}
		return tx.Create(&Invoice{ID: 2, Epoch: lease.Epoch()}).Error
	})
	fmt.Println("write after release fenced:", errors.Is(err, coordination.ErrFenced))

	cancel()
	<-coord.Done()
	// Output:
	// write while leading: <nil>
	// write after release fenced: true
}

// Leader reads who leads an election, by the database clock.
func ExampleElection_Leader() {
	db, cleanup := openExampleDB()
	defer cleanup()
	id, _ := identity.New("node-a", "eu-1")
	coord, _ := coordination.New(db, id, coordination.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()
	e, _ := coord.Election(coordination.GlobalScope, "outbox")
	lease, _ := e.Campaign(ctx)

	info, err := e.Leader(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Name, "live:", info.Live, "mine:", info.Mine, "epoch:", info.Epoch)

	_ = lease.Release(ctx)
	cancel()
	<-coord.Done()
	// Output: global/outbox live: true mine: true epoch: 1
}
