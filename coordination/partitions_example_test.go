package coordination_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// A pool with Partitions spreads a fixed number of partitions over its
// live members; each partition is worked on in its own call, whose ctx
// ends only when that partition moves. Here two coordinators stand for
// two processes sharing eight partitions, and each partition's work
// commits its writes in transactions fenced by Assignment.Fence.
func ExamplePool_Run_partitions() {
	db, cleanup := openExampleDB()
	defer cleanup()

	coordCtx, stopCoords := context.WithCancel(context.Background())
	defer stopCoords()
	poolCtx, stopPools := context.WithCancel(coordCtx)
	defer stopPools()

	type event struct {
		node    string
		part    int
		started bool
	}
	events := make(chan event, 64)
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

		orders, err := coord.Pool(coordination.GlobalScope, "orders",
			coordination.PoolConfig{Partitions: 8, PollInterval: 100 * time.Millisecond})
		if err != nil {
			panic(err)
		}
		pools.Add(1)
		go func() {
			defer pools.Done()
			_ = orders.Run(poolCtx, func(ctx context.Context, pt coordination.Assignment) error {
				// Work on the items with hash(item) % pt.Count == pt.Index
				// until ctx ends: the partition moved, membership was lost,
				// or shutdown. Each write is fenced.
				err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					if err := pt.Fence(tx); err != nil {
						return err
					}
					// ... the partition's writes, in tx
					return nil
				})
				if err != nil {
					return err
				}
				events <- event{node, pt.Index, true}
				<-ctx.Done()
				events <- event{node, pt.Index, false}
				return nil
			}, nil)
		}()
	}

	// The first member may work on every partition until the second
	// joins; then half of them move, and the rest keep running.
	owner := make(map[int]string)
	count := func(node string) int {
		n := 0
		for _, o := range owner {
			if o == node {
				n++
			}
		}
		return n
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
wait:
	for count("node-a") != 4 || count("node-b") != 4 {
		select {
		case e := <-events:
			if e.started {
				owner[e.part] = e.node
			} else if owner[e.part] == e.node {
				delete(owner, e.part)
			}
		case <-timeout.C:
			fmt.Println("timed out waiting for the partitions to settle")
			break wait
		}
	}
	fmt.Printf("node-a works on %d partitions, node-b on %d\n", count("node-a"), count("node-b"))

	stopPools()
	go func() {
		for range events {
		}
	}()
	pools.Wait()
	close(events)
	stopCoords()
	for _, c := range coords {
		<-c.Done()
	}
	// Output:
	// node-a works on 4 partitions, node-b on 4
}
