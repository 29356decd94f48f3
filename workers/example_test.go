package workers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/workers"
)

// openExampleDB opens a throw-away SQLite database.
func openExampleDB() (*gorm.DB, func()) {
	dir, err := os.MkdirTemp("", "leasehold-workers-example")
	if err != nil {
		panic(err)
	}
	// WAL, a busy timeout and immediate transactions, as the README
	// recommends for SQLite: coordinators and the application share the
	// file through several connections.
	dsn := "file:" + filepath.Join(dir, "app.db") +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: dsn}), &gorm.Config{Logger: logger.Discard})
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

// run builds a coordinator for id on db and a host of ws over it, and runs
// both until ctx is cancelled, as a service does with errgroup.
func run(ctx context.Context, db *gorm.DB, id identity.Identity, ws ...workers.Worker) error {
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		return err
	}
	h, err := workers.NewHost(coord, workers.Config{}, ws...)
	if err != nil {
		return err
	}
	hostErr := make(chan error, 1)
	go func() { hostErr <- h.Run(ctx) }()
	err = coord.Run(ctx)
	return errors.Join(err, <-hostErr)
}

// A cluster singleton: one process per cluster warms that cluster's cache.
// Every cluster that shares the database has its own warmer.
func ExampleClusterSingleton() {
	db, cleanup := openExampleDB()
	defer cleanup()
	id, err := identity.New("node-a", "eu-1") // usually identity.FromEnv()
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	warmer := workers.ClusterSingleton("cache-warmer", func(ctx context.Context, lease *coordination.Lease) error {
		fmt.Println("warming the cache as", lease.Key(), "at epoch", lease.Epoch())
		cancel() // end the example; a real warmer works until ctx is done
		<-ctx.Done()
		return nil
	})
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		panic(err)
	}
	h, err := workers.NewHost(coord, workers.Config{}, warmer)
	if err != nil {
		panic(err)
	}
	// The host runs beside its coordinator, as with errgroup.
	hostErr := make(chan error, 1)
	go func() { hostErr <- h.Run(ctx) }()
	if err := errors.Join(coord.Run(ctx), <-hostErr); err != nil {
		panic(err)
	}
	fmt.Println("host stopped")
	// Output:
	// warming the cache as cluster/eu-1/cache-warmer at epoch 1
	// host stopped
}

// A global singleton: one process across every cluster publishes the
// outbox. Each send is fenced by the lease epoch, so a process that lost
// its lease cannot commit.
func ExampleGlobalSingleton() {
	db, cleanup := openExampleDB()
	defer cleanup()
	type OutboxMessage struct {
		ID        int
		Body      string
		Sent      bool
		SentEpoch int64
	}
	if err := db.AutoMigrate(&OutboxMessage{}); err != nil {
		panic(err)
	}
	db.Create(&[]OutboxMessage{{ID: 1, Body: "invoice 1"}, {ID: 2, Body: "invoice 2"}})
	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	publish := func(ctx context.Context, lease *coordination.Lease) error {
		for lease.Valid() { // before each unit of work
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := lease.Fence(tx); err != nil {
					return err // no longer the holder at this epoch: roll back
				}
				var m OutboxMessage
				if err := tx.Where("sent = ?", false).Order("id").First(&m).Error; err != nil {
					return err
				}
				fmt.Println("published", m.Body, "at epoch", lease.Epoch())
				return tx.Model(&m).Updates(map[string]any{"sent": true, "sent_epoch": lease.Epoch()}).Error
			})
			if errors.Is(err, gorm.ErrRecordNotFound) {
				cancel() // the outbox is empty: end the example; a real publisher waits for more
				<-ctx.Done()
				return nil
			}
			if err != nil {
				return err // logged; called again after Config.RestartBackoff
			}
		}
		return nil
	}
	if err := run(ctx, db, id, workers.GlobalSingleton("outbox", publish)); err != nil {
		panic(err)
	}
	fmt.Println("host stopped")
	// Output:
	// published invoice 1 at epoch 1
	// published invoice 2 at epoch 1
	// host stopped
}

// Events tell when this process starts and stops leading, and why.
func ExampleHost_Subscribe() {
	db, cleanup := openExampleDB()
	defer cleanup()
	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		panic(err)
	}
	h, err := workers.NewHost(coord, workers.Config{},
		workers.GlobalSingleton("billing", func(ctx context.Context, lease *coordination.Lease) error {
			cancel() // end the example at once
			<-ctx.Done()
			return nil
		}))
	if err != nil {
		panic(err)
	}
	events := h.Subscribe(context.Background(), 16)
	go func() { _ = coord.Run(ctx) }()
	if err := h.Run(ctx); err != nil {
		panic(err)
	}
	<-coord.Done()
	for ev := range events { // closed when Run has returned
		fmt.Println(ev.Kind, ev.Worker, ev.Key, ev.Epoch, ev.Err)
	}
	// Output:
	// started-leading billing global/billing 1 <nil>
	// stopped-leading billing global/billing 1 leasehold: coordinator stopped
}

// A partitioned worker: every process that runs it is a member of one pool
// and works on its share of the jobs, id % Count == Index. Each job is
// committed in a transaction fenced by the assignment, so a member whose
// share was handed on (a new generation, lost membership) cannot commit.
// This example runs one process, which gets index 0 of 1: all the jobs.
func ExampleGlobalPartitioned() {
	db, cleanup := openExampleDB()
	defer cleanup()
	type Job struct {
		ID         int
		Done       bool
		Generation int64 // the pool generation that did it
	}
	if err := db.AutoMigrate(&Job{}); err != nil {
		panic(err)
	}
	db.Create(&[]Job{{ID: 1}, {ID: 2}, {ID: 3}})
	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var last coordination.Assignment
	process := func(ctx context.Context, a coordination.Assignment) error {
		last = a
		for a.Valid() { // before each unit of work
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := a.Fence(tx); err != nil {
					return err // this share was handed on: roll back
				}
				var j Job
				err := tx.Where("done = ? AND id % ? = ?", false, a.Count, a.Index).Order("id").First(&j).Error
				if err != nil {
					return err
				}
				fmt.Printf("job %d: index %d of %d, generation %d\n", j.ID, a.Index, a.Count, a.Generation)
				return tx.Model(&j).Updates(map[string]any{"done": true, "generation": a.Generation}).Error
			})
			if errors.Is(err, gorm.ErrRecordNotFound) {
				cancel() // this share is done: end the example; a real member waits for more
				<-ctx.Done()
				return nil
			}
			if err != nil {
				return err // logged; called again after Config.RestartBackoff
			}
		}
		return nil
	}
	if err := run(ctx, db, id,
		workers.GlobalPartitioned("jobs", process, coordination.PoolConfig{PollInterval: 100 * time.Millisecond})); err != nil {
		panic(err)
	}
	fmt.Println("host stopped")

	// The host left the pool when it stopped: its assignment is over.
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := last.Fence(tx); err != nil {
			return err
		}
		return tx.Create(&Job{ID: 4, Done: true, Generation: last.Generation}).Error
	})
	fmt.Println("write after leaving fenced:", errors.Is(err, coordination.ErrFenced))
	// Output:
	// job 1: index 0 of 1, generation 1
	// job 2: index 0 of 1, generation 1
	// job 3: index 0 of 1, generation 1
	// host stopped
	// write after leaving fenced: true
}

// A partitioned worker with 4 fixed partitions of a stream of events, each
// processed by the one process that owns the partition; on one process it
// owns them all. Each event is committed under the partition's fence.
func ExampleGlobalPartitioned_partitions() {
	db, cleanup := openExampleDB()
	defer cleanup()
	type Event struct {
		ID        int
		Partition int // the key's partition, stored with the row
		Done      bool
	}
	if err := db.AutoMigrate(&Event{}); err != nil {
		panic(err)
	}
	db.Create(&[]Event{{ID: 1, Partition: 0}, {ID: 2, Partition: 1}, {ID: 3, Partition: 3}})
	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	left := 3
	consume := func(ctx context.Context, pt coordination.Assignment) error {
		for pt.Valid() {
			var ev Event
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := pt.Fence(tx); err != nil {
					return err // the partition moved: roll back
				}
				err := tx.Where("partition = ? AND done = ?", pt.Index, false).Order("id").First(&ev).Error
				if err != nil {
					return err
				}
				return tx.Model(&ev).Update("done", true).Error
			})
			if errors.Is(err, gorm.ErrRecordNotFound) {
				<-ctx.Done() // a real consumer waits for more
				return nil
			}
			if err != nil {
				return err // logged; called again after Config.RestartBackoff
			}
			mu.Lock()
			if left--; left == 0 {
				cancel() // every event is done: end the example
			}
			mu.Unlock()
		}
		return nil
	}
	if err := run(ctx, db, id, workers.GlobalPartitioned("events", consume, coordination.PoolConfig{Partitions: 4})); err != nil {
		panic(err)
	}
	var done int64
	db.Model(&Event{}).Where("done = ?", true).Count(&done)
	fmt.Printf("%d events done\n", done)
	// Output:
	// 3 events done
}

// A scheduled worker: each slot runs once across every copy of the
// service. The report is written and the slot recorded as complete in one
// transaction fenced by the term (Slot.Complete), and it is keyed by the
// slot's time, the same for every attempt: a slot run again after its
// holder died mid-run writes the report once.
func ExampleScheduled() {
	db, cleanup := openExampleDB()
	defer cleanup()
	type Report struct {
		Slot  time.Time `gorm:"primaryKey"`
		Epoch int64     // the term that wrote it
	}
	if err := db.AutoMigrate(&Report{}); err != nil {
		panic(err)
	}
	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	written := 0
	report := func(ctx context.Context, slot *workers.Slot) error {
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			// Idempotent by the slot's time: a second attempt changes nothing.
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&Report{Slot: slot.Time, Epoch: slot.Epoch}).Error; err != nil {
				return err
			}
			return slot.Complete(tx) // fenced: rolls back if another process took the job over
		})
		if err != nil {
			return err
		}
		written++
		fmt.Println("report", written, "written at epoch", slot.Epoch, "attempt", slot.Attempt)
		if written == 2 {
			cancel() // end the example
		}
		return nil
	}
	job := workers.Scheduled("report", report, workers.ScheduleConfig{
		Every: 50 * time.Millisecond, // or Cron: "0 2 * * *" for 02:00 UTC every day
	})
	if err := run(ctx, db, id, job); err != nil {
		panic(err)
	}
	var n int64
	db.Model(&Report{}).Count(&n)
	fmt.Println("reports:", n)
	// Output:
	// report 1 written at epoch 1 attempt 1
	// report 2 written at epoch 1 attempt 1
	// reports: 2
}

// A limited worker: at most two processes export at once, across every
// cluster; each run holds a slot of the "exports" semaphore, with its own
// fencing epoch.
func ExampleLimited() {
	db, cleanup := openExampleDB()
	defer cleanup()
	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	export := workers.Limited("exports", 2, func(ctx context.Context, lease *coordination.Lease) error {
		slot, _ := strings.CutPrefix(lease.Key(), "sem|global/exports|")
		fmt.Println("exporting in slot", slot == "0" || slot == "1", "at epoch", lease.Epoch())
		cancel() // end the example; a real export works until ctx is done
		<-ctx.Done()
		return nil
	})
	if err := run(ctx, db, id, export); err != nil {
		panic(err)
	}
	// Output:
	// exporting in slot true at epoch 1
}
