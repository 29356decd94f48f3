package workers

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/memstore"
)

// TestHostShutdownReturnsNil: a host and its coordinator run on one
// context, as the docs show; cancelling it is a shutdown, and Host.Run
// returns nil, whichever of the two it sees end first.
func TestHostShutdownReturnsNil(t *testing.T) {
	for i := range 50 {
		db, err := memstore.New().Conn().Open()
		if err != nil {
			t.Fatal(err)
		}
		coord, err := coordination.New(db, testIdentity(t, "node-a", "test"), coordination.Config{})
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{}, 1)
		h, err := NewHost(coord, Config{}, GlobalSingleton("job", func(ctx context.Context, _ *coordination.Lease) error {
			select {
			case started <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		coordErr := make(chan error, 1)
		go func() { coordErr <- coord.Run(ctx) }()
		hostErr := make(chan error, 1)
		go func() { hostErr <- h.Run(ctx) }()
		if i%2 == 0 {
			select {
			case <-started:
			case <-time.After(20 * time.Second):
				t.Fatal("the singleton did not start")
			}
		}
		cancel()
		if err := <-coordErr; err != nil {
			t.Fatalf("round %d: coordinator Run: %v", i, err)
		}
		if err := <-hostErr; err != nil {
			t.Fatalf("round %d: Host.Run after a cancel of its context: %v, want nil", i, err)
		}
	}
}
