package coordination

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
)

// poolDownStore is memstore with the pool's first statement of a join
// failing while down is set, as on a database that is unreachable.
type poolDownStore struct {
	*memstore.Store
	down atomic.Bool
}

func (s *poolDownStore) EnsureRows(ctx context.Context, names []string) error {
	if s.down.Load() {
		return errInjected
	}
	return s.Store.EnsureRows(ctx, names)
}

// TestPoolStepBacksOffThroughWakeups: a member whose pool steps fail
// steps at most once a poll however often it is woken (Pool.drive): a
// wake-up does not cut the backoff short.
func TestPoolStepBacksOffThroughWakeups(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		core, logs := zapobserver.New(zapcore.DebugLevel)
		fs := &poolDownStore{Store: memstore.New()}
		fs.down.Store(true)
		cfg := Config{Logger: zap.New(core)}.withDefaults() // TTL 15s, poll = retry 2s
		c := newCoordinator(fs, testIdentity(t, "node-a"), cfg)
		ctx, cancel := context.WithCancel(context.Background())
		defer func() {
			cancel()
			<-c.Done()
		}()
		go func() { _ = c.Run(ctx) }()
		<-c.Ready()
		p, err := c.Pool(GlobalScope, "orders", PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.Run(ctx, func(ctx context.Context, _ Assignment) error {
				<-ctx.Done()
				return nil
			}, nil)
		}()

		const polls = 20
		poll := p.poll
		for range polls * 8 {
			time.Sleep(poll / 8)
			if r := c.handles.run(p.key); r != nil {
				poke(r.wake) // as another member's publish would
			}
		}
		steps := logs.FilterMessage("pool step failed; retrying").Len()
		t.Logf("%d failed steps in %d polls of %v", steps, polls, poll)
		if steps == 0 || steps > polls {
			t.Errorf("%d failed steps in %d polls of %v, woken 8 times a poll; want at least one, and at most one a poll", steps, polls, poll)
		}
		cancel()
		<-done
	})
}
