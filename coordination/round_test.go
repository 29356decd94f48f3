package coordination

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
)

// slowRows is the in-process store with an EnsureRows that takes d, as a
// large insert on a loaded database does, and is cut short by its
// context's end without creating anything.
type slowRows struct {
	*memstore.Store
	d time.Duration
}

func (s slowRows) EnsureRows(ctx context.Context, names []string) error {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.EnsureRows(ctx, names)
}

// TestSlowRoundsStillProgress: when a round's statements take longer than
// its timeout, every round failing at the same point would keep the lease
// from ever being taken. The round after a failed one has more time, so
// the campaign wins within a few rounds.
func TestSlowRoundsStillProgress(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		cfg := steady(fastConfig()).withDefaults()
		slow := slowRows{Store: memstore.New(), d: cfg.roundTimeout(1) * 3 / 2}
		c := newCoordinator(slow, testIdentity(t, "node-a"), cfg)
		r := startCoordinator(t, c)
		e := election(t, r.Coordinator, GlobalScope, "slow")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Fatalf("Campaign with rows that take %v to create, a round's timeout being %v: %v", slow.d, cfg.roundTimeout(1), err)
		}
		release(t, l)
	})
}
