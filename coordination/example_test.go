package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

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
	// WAL, a busy timeout and immediate transactions, as the README
	// recommends for SQLite: coordinators and the application share the
	// file through several connections.
	dsn := "file:" + filepath.Join(dir, "coord.db") +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
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

// A pool splits work among the processes that run it: each member gets a
// distinct Index of Count. Here two coordinators, standing for two
// processes, join the pool "shards". Which one gets which index depends on
// who joins first, so the example prints the indexes in order.
func ExamplePool_Run() {
	db, cleanup := openExampleDB()
	defer cleanup()

	// Coordinators outlive the pools they run: stop the pools first, so
	// that each member leaves and hands its index over at once.
	coordCtx, stopCoords := context.WithCancel(context.Background())
	defer stopCoords()
	poolCtx, stopPools := context.WithCancel(coordCtx)
	defer stopPools()

	type assignment struct {
		node string
		a    coordination.Assignment
	}
	assigned := make(chan assignment)
	var coords []*coordination.Coordinator
	var pools sync.WaitGroup
	for _, node := range []string{"node-a", "node-b"} {
		id, err := identity.New(node, "eu-1")
		if err != nil {
			panic(err)
		}
		coord, err := coordination.New(db, id, coordination.Config{})
		if err != nil {
			panic(err)
		}
		coords = append(coords, coord)
		go func() { _ = coord.Run(coordCtx) }()

		shards, err := coord.Pool(coordination.GlobalScope, "shards",
			coordination.PoolConfig{PollInterval: 100 * time.Millisecond})
		if err != nil {
			panic(err)
		}
		pools.Add(1)
		go func() {
			defer pools.Done()
			_ = shards.Run(poolCtx, func(ctx context.Context, a coordination.Assignment) error {
				// Work on the items with item % a.Count == a.Index until
				// ctx ends: a new generation, lost membership, or shutdown.
				select {
				case assigned <- assignment{node, a}:
				case <-ctx.Done():
				}
				<-ctx.Done()
				return nil
			})
		}()
	}

	// The first member to join may work alone for a generation; wait until
	// both work in the same generation of two.
	latest := make(map[string]coordination.Assignment)
	both := func() bool {
		a, b := latest["node-a"], latest["node-b"]
		return a.Count == 2 && b.Count == 2 && a.Generation == b.Generation
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
wait:
	for !both() {
		select {
		case got := <-assigned:
			latest[got.node] = got.a
		case <-timeout.C:
			fmt.Println("timed out waiting for a pool of two")
			break wait
		}
	}
	indexes := []coordination.Assignment{latest["node-a"], latest["node-b"]}
	sort.Slice(indexes, func(i, j int) bool { return indexes[i].Index < indexes[j].Index })
	for _, a := range indexes {
		fmt.Printf("%s: index %d of %d\n", a.Pool, a.Index, a.Count)
	}

	stopPools()
	pools.Wait()
	stopCoords()
	for _, c := range coords {
		<-c.Done()
	}
	// Output:
	// global/shards: index 0 of 2
	// global/shards: index 1 of 2
}
