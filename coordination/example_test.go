package coordination_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

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
		fmt.Println("leading", lease.Key(), "at epoch", lease.Epoch())
		cancel() // stop the example; a real leader works until ctx is done
		return nil
	}, nil)
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

// Metrics: pass the MeterProvider of your OpenTelemetry SDK in Config,
// here the global one, which a service sets when it starts the SDK with
// its exporter (OTLP, Prometheus): otel.SetMeterProvider. With none,
// nothing is recorded. docs/operations.md lists every instrument, and
// tests/coordination reads them back through the SDK.
func ExampleConfig_meterProvider() {
	db, cleanup := openExampleDB()
	defer cleanup()

	id, _ := identity.New("node-a", "eu-1")
	coord, err := coordination.New(db, id, coordination.Config{MeterProvider: otel.GetMeterProvider()})
	if err != nil {
		panic(err)
	}
	fmt.Println("recording through", coord.Config().MeterProvider == otel.GetMeterProvider())
	// Output: recording through true
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
	fmt.Println(info.Key, "live:", info.Live, "mine:", info.Holder == coord.Holder(), "epoch:", info.Epoch)

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
			}, nil)
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
		fmt.Printf("%s: index %d of %d\n", a.Key, a.Index, a.Count)
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

// TryAcquire makes one attempt and returns at once: a Lease when the lease
// was free or expired, ErrNotAcquired naming the holder otherwise. Here
// two coordinators stand for two processes.
func ExampleElection_TryAcquire() {
	db, cleanup := openExampleDB()
	defer cleanup()
	ctx, cancel := context.WithCancel(context.Background())
	var coords []*coordination.Coordinator
	var elections []*coordination.Election
	for _, node := range []string{"node-a", "node-b"} {
		id, _ := identity.New(node, "eu-1")
		coord, err := coordination.New(db, id, coordination.Config{})
		if err != nil {
			panic(err)
		}
		go func() { _ = coord.Run(ctx) }()
		e, _ := coord.Election(coordination.GlobalScope, "migrations")
		coords, elections = append(coords, coord), append(elections, e)
	}

	lease, err := elections[0].TryAcquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("node-a leads at epoch", lease.Epoch())

	_, err = elections[1].TryAcquire(ctx)
	fmt.Println("node-b not acquired:", errors.Is(err, coordination.ErrNotAcquired))

	_ = lease.Release(ctx)
	lease, err = elections[1].TryAcquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("node-b leads at epoch", lease.Epoch())
	_ = lease.Release(ctx)

	cancel()
	for _, c := range coords {
		<-c.Done()
	}
	// Output:
	// node-a leads at epoch 1
	// node-b not acquired: true
	// node-b leads at epoch 2
}

// Observe follows who leads an election this process does not campaign
// for. Here node-a observes while node-b takes the lease and releases it.
func ExampleElection_Observe() {
	db, cleanup := openExampleDB()
	defer cleanup()
	ctx, cancel := context.WithCancel(context.Background())
	// The observer reads at its RetryInterval.
	cfg := coordination.Config{RetryInterval: 100 * time.Millisecond}
	idA, _ := identity.New("node-a", "eu-1")
	idB, _ := identity.New("node-b", "eu-1")
	observer, _ := coordination.New(db, idA, cfg)
	leader, _ := coordination.New(db, idB, cfg)
	go func() { _ = observer.Run(ctx) }()
	go func() { _ = leader.Run(ctx) }()
	names := map[string]string{"": "nobody", leader.Holder(): "node-b"}

	watched, _ := observer.Election(coordination.GlobalScope, "outbox")
	changes, err := watched.Observe(ctx)
	if err != nil {
		panic(err)
	}
	next := func() coordination.LeaseInfo {
		select {
		case info := <-changes:
			return info
		case <-time.After(30 * time.Second):
			panic("no change observed")
		}
	}
	info := next()
	fmt.Println(info.Key, "led by", names[info.Holder], "at epoch", info.Epoch)

	outbox, _ := leader.Election(coordination.GlobalScope, "outbox")
	lease, err := outbox.Campaign(ctx)
	if err != nil {
		panic(err)
	}
	info = next()
	fmt.Println(info.Key, "led by", names[info.Holder], "at epoch", info.Epoch)

	_ = lease.Release(ctx)
	info = next()
	fmt.Println(info.Key, "led by", names[info.Holder], "at epoch", info.Epoch, "live:", info.Live)

	cancel()
	<-observer.Done()
	<-leader.Done()
	// Output:
	// global/outbox led by nobody at epoch 0
	// global/outbox led by node-b at epoch 1
	// global/outbox led by nobody at epoch 1 live: false
}

// Asking a leader to hand its lease over, as for a deploy: any process,
// even one that never runs its coordinator (a command-line tool), records
// the request; the leader sees it at its next renewal, its work's context
// ends with ErrResigned, and a follower takes over.
func ExampleAdmin_Resign_deploy() {
	db, cleanup := openExampleDB()
	defer cleanup()
	cfg := coordination.Config{TTL: 3 * time.Second} // renewals every second
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	leading := make(chan struct{})
	start := func(node string, work coordination.LeaderFunc) {
		id, _ := identity.New(node, "eu-1")
		coord, err := coordination.New(db, id, cfg)
		if err != nil {
			panic(err)
		}
		wg.Go(func() { _ = coord.Run(ctx) })
		reports, _ := coord.Election(coordination.ClusterScope, "reports")
		wg.Go(func() { _ = reports.Run(ctx, work, nil) })
	}
	resigned := make(chan error, 1)
	start("node-a", func(ctx context.Context, lease *coordination.Lease) error {
		fmt.Println("node-a leads at epoch", lease.Epoch())
		close(leading)
		<-ctx.Done()
		resigned <- context.Cause(ctx)
		return nil // the lease is released once the work has returned
	})
	<-leading
	taken := make(chan int64, 1)
	start("node-b", func(ctx context.Context, lease *coordination.Lease) error {
		taken <- lease.Epoch()
		<-ctx.Done()
		return nil
	})

	id, _ := identity.New("deploy-tool", "eu-1")
	tool, _ := coordination.New(db, id, cfg) // never run
	info, err := tool.Admin().Resign(ctx, "cluster/eu-1/reports", "")
	if err != nil {
		panic(err)
	}
	fmt.Println("asked", info.Holder[:len("node-a")], "to resign epoch", info.Epoch)
	fmt.Println("node-a steps down, resigned:", errors.Is(<-resigned, coordination.ErrResigned))
	fmt.Println("node-b leads at epoch", <-taken)
	// Output:
	// node-a leads at epoch 1
	// asked node-a to resign epoch 1
	// node-a steps down, resigned: true
	// node-b leads at epoch 2
}

// A health check: a leader whose checks keep failing steps down, so a
// healthy process takes over; it campaigns again once a check passes.
func ExampleConfig_healthCheck() {
	db, cleanup := openExampleDB()
	defer cleanup()
	var sick atomic.Bool
	cfg := coordination.Config{
		TTL: 3 * time.Second,
		HealthCheck: func(ctx context.Context) error {
			if sick.Load() {
				return errors.New("the disk is full")
			}
			return nil // a real check pings the dependencies leader work needs
		},
		HealthInterval: 100 * time.Millisecond,
		HealthFailures: 2, // step down after two failed checks in a row
	}
	id, _ := identity.New("node-a", "eu-1")
	coord, err := coordination.New(db, id, cfg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()
	reports, _ := coord.Election(coordination.ClusterScope, "reports")
	_ = reports.Run(ctx, func(ctx context.Context, lease *coordination.Lease) error {
		fmt.Println("leading at epoch", lease.Epoch())
		sick.Store(true)
		<-ctx.Done()
		fmt.Println("stepped down:", context.Cause(ctx))
		cancel() // stop the example
		return nil
	}, nil)
	<-coord.Done()
	// Output:
	// leading at epoch 1
	// stepped down: leasehold: process is unhealthy: 2 health checks in a row failed, the last with: the disk is full
}

// Peer wake-ups in Kubernetes: each pod receives them on a fixed port and
// advertises its pod IP, which the downward API puts in POD_IP. They are
// on by default on every database but SQLite; on PostgreSQL, pgnotify
// replaces them with LISTEN.
func ExampleConfig_peerWakeups() {
	db, cleanup := openExampleDB()
	defer cleanup()
	podIP := cmp.Or(os.Getenv("POD_IP"), "10.244.1.17")
	id, _ := identity.New("node-a", "eu-1")
	coord, err := coordination.New(db, id, coordination.Config{
		WakeAddress:   ":7946",
		WakeAdvertise: []string{podIP},
	})
	fmt.Println(coord.Config().WakeAddress, err)

	_, err = coordination.New(db, id, coordination.Config{WakeAdvertise: []string{"my-pod.svc"}})
	fmt.Println(err)
	// Output:
	// :7946 <nil>
	// leasehold: invalid config: WakeAdvertise[0] ("my-pod.svc") must be an IP address, or IP:port with a port from 1 to 65535
}

// A program that logs with log/slog hands its logger over as Slog; the
// lines carry the same keys as Logger's. Here only the message and the
// lease keys are kept, for a stable output.
func ExampleConfig_slog() {
	db, cleanup := openExampleDB()
	defer cleanup()

	keep := func(_ []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.MessageKey, "lease", "epoch":
			return a
		}
		return slog.Attr{}
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: keep}))

	id, _ := identity.New("node-a", "eu-1")
	// One process alone has nobody to wake: without wake-ups, the lines
	// are the same on every run.
	coord, err := coordination.New(db, id, coordination.Config{Slog: log, DisableNotifications: true})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coord.Run(ctx) }()
	<-coord.Ready()
	report, _ := coord.Election(coordination.ClusterScope, "report")
	lease, err := report.Campaign(ctx)
	if err != nil {
		panic(err)
	}
	_ = lease.Release(ctx)
	cancel()
	<-done
	// Unordered output:
	// msg="migrated coordination schema"
	// msg="started session"
	// msg="coordinator running"
	// msg="acquired lease" lease=cluster/eu-1/report epoch=1
	// msg="released lease" lease=cluster/eu-1/report epoch=1
	// msg="coordinator stopped"
}
