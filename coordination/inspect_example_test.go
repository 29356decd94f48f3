package coordination_test

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// Pools lists every pool of the database with its members, by the
// database clock, from any process: the coordinator reading it need not
// run.
func ExampleAdmin_Pools() {
	db, cleanup := openExampleDB()
	defer cleanup()

	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = coord.Run(ctx) }()
	<-coord.Ready()
	p, err := coord.Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{})
	if err != nil {
		panic(err)
	}
	working := make(chan struct{})
	go func() {
		_ = p.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
			close(working)
			<-ctx.Done()
			return nil
		}, nil)
	}()
	<-working

	pools, err := coord.Admin().Pools(ctx)
	if err != nil {
		panic(err)
	}
	for _, st := range pools {
		fmt.Printf("%s: generation %d, %d in the list\n", st.Key, st.Generation, len(st.List))
		for i, id := range st.List {
			for _, m := range st.Members {
				if m.ID == id {
					fmt.Printf("  index %d: live %v, acknowledged %v\n", i, m.Live, m.Ack == st.Generation)
				}
			}
		}
	}
	cancel()
	<-coord.Done()
	// Output:
	// global/orders: generation 1, 1 in the list
	//   index 0: live true, acknowledged true
}

// Renewal tells a health check how the renewals of this process fare,
// without I/O.
func ExampleCoordinator_Renewal() {
	db, cleanup := openExampleDB()
	defer cleanup()

	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		panic(err)
	}
	fmt.Println("before Run, running:", coord.Renewal().Running)

	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()
	<-coord.Ready()
	e, err := coord.Election(coordination.ClusterScope, "reports")
	if err != nil {
		panic(err)
	}
	lease, err := e.Campaign(ctx)
	if err != nil {
		panic(err)
	}
	st := coord.Renewal()
	fmt.Printf("leading: running %v, held %d, failures %d, trusted for more than TTL/2: %v\n",
		st.Running, st.Held, st.Failures, time.Until(st.TrustDeadline) > coord.Config().TTL/2)
	_ = lease.Release(ctx)
	cancel()
	<-coord.Done()
	fmt.Println("after Run, running:", coord.Renewal().Running)
	// Output:
	// before Run, running: false
	// leading: running true, held 1, failures 0, trusted for more than TTL/2: true
	// after Run, running: false
}

// Sessions lists the processes that hold leases on the database, by the
// database clock: whether each still renews its session, and until when.
func ExampleAdmin_Sessions() {
	db, cleanup := openExampleDB()
	defer cleanup()

	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = coord.Run(ctx) }()
	<-coord.Ready()
	e, err := coord.Election(coordination.ClusterScope, "reports")
	if err != nil {
		panic(err)
	}
	lease, err := e.Campaign(ctx) // the session starts with the first lease
	if err != nil {
		panic(err)
	}

	admin, err := coordination.NewAdmin(db, coordination.Config{})
	if err != nil {
		panic(err)
	}
	sessions, err := admin.Sessions(ctx)
	if err != nil {
		panic(err)
	}
	for _, s := range sessions {
		fmt.Printf("this process: %v, live %v, more than TTL/2 left: %v\n",
			s.Holder == coord.Holder(), s.Live, s.ExpiresAt.Sub(s.DatabaseTime) > coord.Config().TTL/2)
	}
	_ = lease.Release(ctx)
	cancel()
	<-coord.Done()
	// Output:
	// this process: true, live true, more than TTL/2 left: true
}
