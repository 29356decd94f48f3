package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// An operator's tool reads the leases, checks a fencing token and asks
// the leader to hand over, with an Admin: no identity, nothing to run.
func ExampleAdmin() {
	db, cleanup := openExampleDB()
	defer cleanup()

	// A service process leads "reports" (elsewhere, in a real deployment).
	id, err := identity.New("node-a", "eu-1")
	if err != nil {
		panic(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{TTL: 3 * time.Second})
	if err != nil {
		panic(err)
	}
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

	// The operator's tool: the same database and table prefix.
	admin, err := coordination.NewAdmin(db, coordination.Config{})
	if err != nil {
		panic(err)
	}
	leases, err := admin.Leases(ctx)
	if err != nil {
		panic(err)
	}
	for _, l := range leases {
		fmt.Printf("%s: epoch %d, live %v, held by node-a: %v\n", l.Key, l.Epoch, l.Live, l.Holder == coord.Holder())
	}

	// A token handed over by the leader is checked inside a transaction:
	// the term must still run when the transaction commits.
	err = db.Transaction(func(tx *gorm.DB) error { return admin.CheckFence(tx, lease.Token()) })
	fmt.Println("fence check of the current term:", err)

	info, err := admin.Resign(ctx, lease.Key(), "")
	if err != nil {
		panic(err)
	}
	fmt.Printf("asked the holder of %s to hand over epoch %d\n", info.Key, info.Epoch)
	<-lease.Context().Done() // at the holder's next renewal
	fmt.Println("term ended by the request:", errors.Is(context.Cause(lease.Context()), coordination.ErrResigned))
	_ = lease.Release(ctx)
	cancel()
	<-coord.Done()
	// Output:
	// cluster/eu-1/reports: epoch 1, live true, held by node-a: true
	// fence check of the current term: <nil>
	// asked the holder of cluster/eu-1/reports to hand over epoch 1
	// term ended by the request: true
}
