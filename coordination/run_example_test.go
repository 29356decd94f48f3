package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// RunOptions tunes the term loop of Election.Run: a backoff of its own,
// and callbacks at the start and end of each term and at each failure
// (instead of the default log line and EventError).
func ExampleRunOptions() {
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
	go func() { _ = coord.Run(ctx) }()
	reports, err := coord.Election(coordination.ClusterScope, "reports")
	if err != nil {
		panic(err)
	}
	calls := 0
	_ = reports.Run(ctx, func(ctx context.Context, lease *coordination.Lease) error {
		calls++
		if calls == 1 {
			return errors.New("database busy") // called again after the backoff
		}
		cancel() // stop the example; a real leader works until ctx is done
		<-ctx.Done()
		return nil
	}, &coordination.RunOptions[*coordination.Lease]{
		Backoff:    10 * time.Millisecond,
		MaxBackoff: time.Second,
		OnTermStart: func(l *coordination.Lease) {
			fmt.Println("term started:", l.Key(), "epoch", l.Epoch())
		},
		OnError: func(l *coordination.Lease, err error, retryIn time.Duration) {
			fmt.Println("work failed:", err, "- again after at least", min(retryIn, 10*time.Millisecond))
		},
		OnTermEnd: func(l *coordination.Lease, cause error) {
			fmt.Println("term ended:", cause)
		},
	})
	<-coord.Done()
	// Output:
	// term started: cluster/eu-1/reports epoch 1
	// work failed: database busy - again after at least 10ms
	// term ended: leasehold: coordinator stopped
}
