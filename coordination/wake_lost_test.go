package coordination

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/memstore"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// TestWakeups runs the case of the wake-ups that needs the coordinator's
// insides: LostWakeupOnlyDelays drops every wake-up a follower receives
// (a transport that drops them) and delivers wake-ups of its own
// (c.wakes.wakeFor), which no public means does. The tests module's case
// of that name checks on every database, through public means, that a
// follower that gets no wake-up takes a released lease at its next poll;
// this one runs on the pure-Go SQLite, whose processes wake each other
// through sockets next to the database file, and on the in-process
// database, which carries no wake-ups (as PostgreSQL behind PgBouncer in
// transaction mode).
func TestWakeups(t *testing.T) {
	t.Run("sqlite-pure", func(t *testing.T) {
		t.Run("LostWakeupOnlyDelays", func(t *testing.T) {
			db := openSQLite(t)
			caseLostWakeupOnlyDelays(t, true, func(node string, cfg Config) *observed {
				id := testIdentity(t, node)
				cfg, err := checkNew(id, cfg)
				if err != nil {
					t.Fatalf("config: %v", err)
				}
				st, err := store.Open(db, storeOptions(cfg))
				if err != nil {
					t.Fatalf("store.Open: %v", err)
				}
				return startObserved(t, st, id, cfg)
			})
		})
	})
	t.Run("memory", func(t *testing.T) {
		t.Run("LostWakeupOnlyDelays", func(t *testing.T) {
			ms := memstore.New()
			caseLostWakeupOnlyDelays(t, false, func(node string, cfg Config) *observed {
				id := testIdentity(t, node)
				cfg, err := checkNew(id, cfg)
				if err != nil {
					t.Fatalf("config: %v", err)
				}
				return startObserved(t, ms, id, cfg)
			})
		})
	})
}

// openSQLite opens a fresh SQLite database file of the test on the pure-Go
// driver, as the README recommends SQLite (WAL, a busy timeout, immediate
// transactions), and closes it when the test ends.
func openSQLite(t *testing.T) *gorm.DB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "coord.db") +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: dsn}), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// slowPollConfig polls far less often than any wait of these tests: a
// follower that acts within a test's bound was woken.
func slowPollConfig() Config {
	return Config{
		TTL:             10 * time.Minute,
		RenewInterval:   time.Second,
		RetryInterval:   10 * time.Minute,
		ShutdownTimeout: 5 * time.Second,
	}
}

// observed is a coordinator whose store reports the campaign rounds'
// reads and the acquires of woken leases, and whose wake-up transport
// drops what arrives while drop is set.
type observed struct {
	*running
	rounds   chan int // the names each round read
	attempts chan int // the leases each acquire without a read attempted
	drop     *atomic.Bool
}

// observedStore is the store of an observed coordinator.
type observedStore struct {
	leaseStore
	rounds, attempts chan int
}

// Get is the read of a campaign round: no other read runs in these cases.
func (s observedStore) Get(ctx context.Context, names []string) ([]store.Row, error) {
	rows, err := s.leaseStore.Get(ctx, names)
	signal(s.rounds, len(names))
	return rows, err
}

// AcquireEach is the acquire of woken leases: a round acquires only a
// lease it read as free, and these cases never free one while watching.
func (s observedStore) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) ([]string, error) {
	failed, err := s.leaseStore.AcquireEach(ctx, session, holder, names, took)
	signal(s.attempts, len(names))
	return failed, err
}

func signal(ch chan int, n int) {
	select {
	case ch <- n:
	default:
	}
}

// droppingTransport drops the wake-ups it receives while drop is set.
type droppingTransport struct {
	wake.Transport
	drop *atomic.Bool
}

func (d droppingTransport) Listen(ctx context.Context, deliver func(names []string), up func()) error {
	return d.Transport.Listen(ctx, func(names []string) {
		if !d.drop.Load() {
			deliver(names)
		}
	}, up)
}

// startObserved runs an observed coordinator on st until the test ends.
func startObserved(t *testing.T, st leaseStore, id identity.Identity, cfg Config) *observed {
	o := &observed{rounds: make(chan int, 64), attempts: make(chan int, 16), drop: new(atomic.Bool)}
	c := newCoordinator(observedStore{leaseStore: st, rounds: o.rounds, attempts: o.attempts}, id, cfg)
	if c.wakes.transport != nil {
		c.wakes.transport = droppingTransport{Transport: c.wakes.transport, drop: o.drop}
	}
	o.running = startCoordinator(t, c)
	return o
}

// waitListening waits until every coordinator listens for wake-ups.
func waitListening(t testing.TB, cs ...*observed) {
	t.Helper()
	for _, c := range cs {
		deadline := time.After(wait)
		for !c.wakes.listening.Load() {
			select {
			case <-c.wakes.listenChanged:
			case <-deadline:
				t.Fatalf("%s: not listening for wake-ups within %v", c.Holder(), wait)
			}
		}
	}
}

// campaignAfterRound starts a Campaign of e on c and waits until c has run
// a round for it, which found the lease held; the lease arrives on the
// returned channel (nil on failure).
func campaignAfterRound(t *testing.T, c *observed, e *Election, limit time.Duration) <-chan *Lease {
	t.Helper()
	drainSignals(c.rounds)
	got := make(chan *Lease, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Errorf("follower Campaign: %v", err)
		}
		got <- l
	}()
	select {
	case <-c.rounds:
	case <-time.After(wait):
		t.Fatalf("no campaign round within %v", wait)
	}
	return got
}

// successor waits, at most wait, for the lease the follower's Campaign
// got after l was released, and checks that it is the next term. It
// returns nil when the Campaign failed (reported already).
func successor(t *testing.T, got <-chan *Lease, l *Lease, who string) *Lease {
	t.Helper()
	select {
	case l2 := <-got:
		if l2 != nil && l2.Epoch() != l.Epoch()+1 {
			t.Fatalf("%s epoch %d, want %d", who, l2.Epoch(), l.Epoch()+1)
		}
		return l2
	case <-time.After(wait):
		t.Fatalf("%s did not take the released lease within %v", who, wait)
		return nil
	}
}

// mustCampaign campaigns and fails the test unless the lease comes within
// wait.
func mustCampaign(t testing.TB, e *Election) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	l, err := e.Campaign(ctx)
	if err != nil {
		t.Fatalf("Campaign(%s): %v", e.Key(), err)
	}
	return l
}

// drainSignals empties ch of the signals already sent.
func drainSignals(ch <-chan int) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// caseLostWakeupOnlyDelays: a follower that loses every wake-up still
// takes a released lease at its next poll, with the next epoch, and
// spurious wake-ups while the lease is held take nothing. start starts a
// coordinator on the case's database; hasWakeups says whether it carries
// wake-ups.
func caseLostWakeupOnlyDelays(t *testing.T, hasWakeups bool, start func(node string, cfg Config) *observed) {
	cfg := slowPollConfig()
	cfg.RetryInterval = 2 * time.Second
	cfg.Logger = zaptest.NewLogger(t)
	a := start("node-a", cfg)
	f := start("node-f", cfg)
	if hasWakeups {
		waitListening(t, a, f)
	}
	f.drop.Store(true)
	l := mustCampaign(t, election(t, a.Coordinator, GlobalScope, "lost"))
	got := campaignAfterRound(t, f, election(t, f.Coordinator, GlobalScope, "lost"), wait)

	// Spurious wake-ups, one at a time: one for anything runs a round,
	// one naming the lease attempts it at once; each finds it held.
	f.drop.Store(false)
	rounds, attempts := f.rounds, f.attempts
	for i := range 4 {
		drainSignals(rounds)
		drainSignals(attempts)
		if i%2 == 0 {
			f.wakes.wakeFor(nil)
			select {
			case <-rounds:
			case <-time.After(wait):
				t.Fatalf("a wake-up ran no round within %v", wait)
			}
		} else {
			f.wakes.wakeFor([]string{"global/lost"})
			select {
			case n := <-attempts:
				if n != 1 {
					t.Fatalf("a wake-up naming the lease attempted %d leases, want 1", n)
				}
			case <-time.After(wait):
				t.Fatalf("a wake-up naming the lease attempted nothing within %v", wait)
			}
		}
	}
	select {
	case l2 := <-got:
		t.Fatalf("follower acquired epoch %v while the leader holds epoch %d", l2, l.Epoch())
	default:
	}
	if !l.Valid() {
		t.Fatal("the leader's lease is no longer valid after the follower's wake-ups")
	}

	f.drop.Store(true)
	// A round that a wake-up of the loop asked for may still be queued
	// (the signal a wait above took can be that of an earlier round): wait
	// for the follower's next round to end, after which only its poll
	// starts another.
	drainSignals(rounds)
	select {
	case <-rounds:
	case <-time.After(wait):
		t.Fatalf("the follower ran no round within %v", wait)
	}
	lastRound := time.Now()
	release(t, l)
	if l2 := successor(t, got, l, "follower without wake-ups"); l2 != nil {
		// Its next poll comes at least RetryInterval after its last round;
		// a slow machine only makes it later.
		if took := time.Since(lastRound); took < cfg.RetryInterval/2 {
			t.Fatalf("follower took the lease %v after its last round, before its poll (%v): a dropped wake-up woke it", took, cfg.RetryInterval)
		}
		release(t, l2)
	}
}
