package coordination

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
)

// These tests run the coordinator on fake time (testing/synctest) against
// memstore.Store, whose database clock is the same fake time, so every deadline
// can be checked to the nanosecond.

// The in-memory store offers every slice of the database the coordinator
// uses.
var _ leaseStore = (*memstore.Store)(nil)

func bubbleCoordinator(t *testing.T, ms leaseStore, cfg Config) (*Coordinator, func()) {
	t.Helper()
	cfg.Logger = zaptest.NewLogger(t)
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(ms, testIdentity(t, "node-a"), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Run(ctx) }()
	<-c.Ready()
	return c, func() {
		cancel()
		<-c.Done()
	}
}

func bubbleCampaign(t *testing.T, c *Coordinator, name string) *Lease {
	t.Helper()
	e, err := c.Election(ClusterScope, name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.Campaign(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestTrustDeadline(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{}) // TTL 15s, renew 5s, margin 3s
		defer stop()
		start := time.Now()
		l := bubbleCampaign(t, c, "deadline")
		if got, want := l.TrustDeadline(), start.Add(12*time.Second); !got.Equal(want) {
			t.Fatalf("deadline after acquire = %v after start, want 12s", got.Sub(start))
		}
		events := c.Subscribe(t.Context(), 64)
		ms.FailRenewals(errInjected) // every renewal fails from now on

		time.Sleep(12*time.Second - time.Nanosecond)
		if !l.Valid() || l.Context().Err() != nil {
			t.Fatalf("term ended before its trust deadline")
		}
		time.Sleep(time.Nanosecond)
		// At the deadline the synchronous check says no at once, whether or
		// not the timer goroutine has run yet.
		if l.Valid() {
			t.Fatalf("Valid() true at the trust deadline")
		}
		synctest.Wait()
		if !errors.Is(context.Cause(l.Context()), ErrLeaseLost) {
			t.Fatalf("cause at deadline = %v, want ErrLeaseLost", context.Cause(l.Context()))
		}
		var ev Event
	recv:
		for {
			select {
			case ev = <-events:
				if ev.Kind != EventError { // failed renewals are reported as they happen
					break recv
				}
			case <-time.After(time.Hour): // fake time: bounded, and instant
				t.Fatalf("no lost event")
			}
		}
		if ev.Kind != EventLost || !ev.Time.Equal(start.Add(12*time.Second)) {
			t.Fatalf("event %v at %v, want lost at 12s", ev.Kind, ev.Time.Sub(start))
		}
		// The database still shows the lease live until 15s: the holder
		// stopped Margin (3s) before anyone else could take over.
		if r, _ := ms.Row(l.Key()); r.ExpiresAt.Sub(start) != 15*time.Second {
			t.Fatalf("database expiry %v after start, want 15s", r.ExpiresAt.Sub(start))
		}
		_ = l.Release(context.Background())
	})
}

func TestSlowRenewalDoesNotExtendTrustPastAttemptStart(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{})
		defer stop()
		start := time.Now()
		l := bubbleCampaign(t, c, "slow")
		ms.SetRenewDelay(4 * time.Second)
		// The first renewal starts at 5s and completes at 9s.
		time.Sleep(9*time.Second + time.Millisecond)
		synctest.Wait()
		if got := l.TrustDeadline().Sub(start); got != 17*time.Second {
			t.Fatalf("deadline after a slow renewal = %v, want 5s + 15s - 3s = 17s (attempt start, not completion)", got)
		}
		if !l.Valid() {
			t.Fatalf("term ended")
		}
		_ = l.Release(context.Background())
	})
}

func TestRenewalPastDeadlineEndsTerm(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{})
		defer stop()
		start := time.Now()
		l := bubbleCampaign(t, c, "hung")
		// Renewals hang longer than the trust window; each attempt is cut
		// off at the deadline, so none can succeed after it.
		ms.SetRenewDelay(time.Hour)
		waitDone(t, l)
		if got := time.Since(start); got != 12*time.Second {
			t.Fatalf("term ended at %v, want 12s", got)
		}
		if !errors.Is(context.Cause(l.Context()), ErrLeaseLost) {
			t.Fatalf("cause = %v", context.Cause(l.Context()))
		}
		_ = l.Release(context.Background())
	})
}

// renewalsSeen is the in-process store that reports each failed
// renewal statement.
type renewalsSeen struct {
	*memstore.Store
	failed func()
}

func (s renewalsSeen) RenewSession(ctx context.Context, id string, ttl time.Duration) (bool, int64, error) {
	ok, notice, err := s.Store.RenewSession(ctx, id, ttl)
	if err != nil {
		s.failed()
	}
	return ok, notice, err
}

func TestTransientErrorsRetriedWithBackoff(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		rs := renewalsSeen{Store: ms, failed: func() {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
		}}
		c, stop := bubbleCoordinator(t, rs, Config{})
		defer stop()
		l := bubbleCampaign(t, c, "flaky")
		ms.FailRenewals(errInjected)
		// Fail from the first renewal at 5s until 10s: well inside the 12s
		// trust window, with retries in between, none sooner than
		// RetryInterval (2s) after the one before.
		time.Sleep(10 * time.Second)
		ms.FailRenewals(nil)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(at) < 2 {
			t.Fatalf("failed renewal attempts at %v in 5s of failures, want retries", at)
		}
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap < 2*time.Second {
				t.Fatalf("failed renewal attempts at %v: a retry %v after the one before, sooner than RetryInterval", at, gap)
			}
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !l.Valid() {
			t.Fatalf("transient errors lost the lease: %v", l.Check())
		}
		_ = l.Release(context.Background())
	})
}

func TestConfirmedLossCancelsAtOnce(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{})
		defer stop()
		start := time.Now()
		l := bubbleCampaign(t, c, "taken")
		// The session ends behind our back (for example after an operator
		// edit) and another process takes the lease: the next renewal sees
		// the session gone, and the term ends then, long before the trust
		// deadline.
		ms.ExpireSession(l.Key())
		ctx := context.Background()
		_ = ms.CreateSession(ctx, "intruder-session", "intruder", time.Minute)
		if terms, _ := ms.Acquire(ctx, "intruder-session", "intruder", []string{l.Key()}); len(terms) != 1 {
			t.Fatal("intruder could not acquire")
		}
		waitDone(t, l)
		if got := time.Since(start); got != 5*time.Second {
			t.Fatalf("term ended at %v, want at the first renewal (5s)", got)
		}
		// Release of a confirmed-lost term leaves the new holder alone.
		_ = l.Release(context.Background())
		if r, _ := ms.Row(l.Key()); r.Holder != "intruder" {
			t.Fatalf("release touched the new term: %+v", r)
		}
	})
}

// TestRunWaitsForReleaseInFlight: Run must not return while a Release is
// still writing to the database, or a process that exits right after Run
// would leave its lease to expire instead of handing it over.
func TestRunWaitsForReleaseInFlight(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		cfg := Config{Logger: zaptest.NewLogger(t)}.withDefaults()
		c := newCoordinator(ms, testIdentity(t, "node-a"), cfg)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = c.Run(ctx) }()
		<-c.Ready()
		l := bubbleCampaign(t, c, "inflight")
		open := ms.GateReleases()
		cancel()
		released := make(chan error, 1)
		go func() { released <- l.Release(context.Background()) }()
		synctest.Wait() // Release is blocked in the database call
		select {
		case <-c.Done():
			t.Fatalf("Run returned while the release was still in flight")
		default:
		}
		open()
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		<-c.Done()
		if r, _ := ms.Row(l.Key()); r.Holder != "" {
			t.Fatalf("not released: %+v", r)
		}
	})
}

// waitDone waits for the term to end, failing after an hour of fake time
// (which passes instantly when nothing else can happen).
func waitDone(t *testing.T, l *Lease) {
	t.Helper()
	select {
	case <-l.Context().Done():
	case <-time.After(time.Hour):
		t.Fatalf("term %s did not end", l.Token())
	}
}

// TestWaitingRenewalTrustsCommittedFencedRenewal: on a store whose writers
// exclude each other, a renewal statement that waits for the write lock
// does not keep the holder from seeing a renewal committed meanwhile (as a
// fenced transaction's check commits one). The read moves the deadline to
// exactly that renewal's database time + TTL - Margin, and no further: with
// nothing committed after it, the term ends there.
func TestWaitingRenewalTrustsCommittedFencedRenewal(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		ms.SetSerialWriters(true)
		c, stop := bubbleCoordinator(t, ms, Config{}) // TTL 15s, renew 5s, margin 3s
		defer stop()
		start := time.Now()
		l := bubbleCampaign(t, c, "fenced")
		// From 5s on, every renewal statement waits for a lock it never gets.
		ms.SetRenewDelay(time.Hour)
		time.Sleep(7 * time.Second)
		// At 7s a fenced transaction commits a renewal of the term.
		ms.RenewHolderSession(l.Key(), 15*time.Second)
		// The renewal that began at 5s is still waiting at 8.5s, half the
		// trust left (7s) after it began; the rows are read then.
		time.Sleep(1500*time.Millisecond + time.Millisecond)
		synctest.Wait()
		if got := l.TrustDeadline().Sub(start); got != 19*time.Second {
			t.Fatalf("deadline after reading a renewal committed at 7s = %v, want 7s + 15s - 3s = 19s", got)
		}
		// Later reads find nothing newer. They read the database clock at
		// its resolution (a microsecond here, as on the server databases),
		// so they may move the deadline by less than that; Margin covers
		// the clock's resolution as it covers its drift.
		waitDone(t, l)
		if got := time.Since(start); got < 19*time.Second || got >= 19*time.Second+time.Microsecond {
			t.Fatalf("term ended at %v, want 19s (to the clock's resolution)", got)
		}
		if !errors.Is(context.Cause(l.Context()), ErrLeaseLost) {
			t.Fatalf("cause = %v", context.Cause(l.Context()))
		}
		_ = l.Release(context.Background())
	})
}

// TestSessionOutlivesALongAcquire: an acquire that takes longer than TTL
// (a large batch on a loaded database) still takes its leases, because the
// renewal loop renews the session while an acquire uses it, before it
// holds any lease; and once it holds them, one renewal per tick keeps them.
func TestSessionOutlivesALongAcquire(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{}) // TTL 15s, renew 5s, margin 3s
		defer stop()
		ms.SetAcquireDelay(40 * time.Second)
		start := time.Now()
		e, err := c.Election(ClusterScope, "slow")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // fake time
		defer cancel()
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Fatalf("no lease after %v of 40s acquires: %v", time.Since(start), err)
		}
		if took := time.Since(start); took < 40*time.Second {
			t.Fatalf("acquired after %v, before the acquire's 40s", took)
		}
		if !l.Valid() {
			t.Fatalf("lease acquired after 40s is not valid: %v", l.Check())
		}
		if r, _ := ms.Row(l.Key()); !r.Live() || r.Session == "" {
			t.Fatalf("row after the long acquire: %+v", r)
		}
		_ = l.Release(context.Background())
	})
}

// TestTryAcquireSessionLostWhileAcquiring: when this process stops
// trusting its session while an attempt's acquire is in flight, and the
// database grants the term all the same, TryAcquire gives the term back
// and fails with errSessionLost, not ErrNotAcquired: nobody else holds the
// lease. The next attempt starts a new session and takes it.
func TestTryAcquireSessionLostWhileAcquiring(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{}) // TTL 15s, renew 5s, margin 3s
		defer stop()
		e, err := c.Election(ClusterScope, "lost-while-acquiring")
		if err != nil {
			t.Fatal(err)
		}
		// Renewals hang from now on, so the session's trust ends at its
		// deadline (12s); the acquire returns at 13s, before the database
		// expires the session (15s), and so takes the lease.
		ms.SetRenewDelay(time.Hour)
		ms.SetAcquireDelay(13 * time.Second)
		start := time.Now()
		l, err := e.TryAcquire(context.Background())
		if err == nil {
			t.Fatalf("TryAcquire under a session that lost trust returned %s", l.Token())
		}
		if took := time.Since(start); took != 13*time.Second {
			t.Fatalf("TryAcquire returned after %v, want after the 13s acquire", took)
		}
		if !errors.Is(err, errSessionLost) || errors.Is(err, ErrNotAcquired) {
			t.Fatalf("TryAcquire under a session that lost trust = %v, want errSessionLost and not ErrNotAcquired", err)
		}
		if !strings.Contains(err.Error(), e.Key()) {
			t.Fatalf("TryAcquire's error %q does not name the lease %s", err, e.Key())
		}
		if held := heldTokens(c); len(held) != 0 || e.IsLeader() {
			t.Fatalf("the term of a lost session was kept: held %v", held)
		}
		synctest.Wait() // the give-back
		if r, _ := ms.Row(e.Key()); r.Epoch != 1 || r.Live() {
			t.Fatalf("row after the give-back = %+v, want epoch 1, not live", r)
		}

		ms.SetRenewDelay(0)
		ms.SetAcquireDelay(0)
		l, err = e.TryAcquire(context.Background())
		if err != nil {
			t.Fatalf("TryAcquire after the session was lost: %v", err)
		}
		if l.Epoch() != 2 || !l.Valid() {
			t.Fatalf("TryAcquire after the session was lost = %s (valid %v), want a valid term at epoch 2", l.Token(), l.Valid())
		}
		_ = l.Release(context.Background())
	})
}

// TestLocksDoCallsNothingUnderATermPausedPastTrust: a process paused after
// Locks.Do has taken the key and before it calls the function (a SIGSTOP,
// a long stop of the world) resumes past its trust deadline, when another
// process may hold the key. Do must not call the function under that
// term: it gives the term back, waits for the key again, and calls the
// function once, under a new term.
func TestLocksDoCallsNothingUnderATermPausedPastTrust(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c, stop := bubbleCoordinator(t, ms, Config{}) // TTL 15s, renew 5s, margin 3s
		defer stop()
		lk := locks(t, c, ClusterScope, "jobs")
		ctx := context.Background()
		var stale, intruder int64
		pause := func(l *Lease) {
			stale = l.Epoch()
			// The whole process stops, its renewals with it, past the
			// trust deadline (12s) and the database's expiry (15s); another
			// process takes the key meanwhile, for 3s.
			ms.FailRenewals(errInjected)
			time.Sleep(16 * time.Second)
			if err := ms.CreateSession(ctx, "intruder-session", "intruder", 3*time.Second); err != nil {
				t.Fatal(err)
			}
			terms, err := ms.Acquire(ctx, "intruder-session", "intruder", []string{l.Key()})
			if err != nil || len(terms) != 1 {
				t.Fatalf("intruder could not take the expired key: %v %v", terms, err)
			}
			intruder = terms[0].Epoch
			ms.FailRenewals(nil)
		}
		calls := 0
		fn := func(ctx context.Context, l *Lease) error {
			calls++
			if !l.Valid() || ctx.Err() != nil {
				t.Errorf("function called under epoch %d past its trust deadline (%v)", l.Epoch(), l.Check())
			}
			if l.Epoch() <= intruder {
				t.Errorf("function called under epoch %d, not after the intruder's %d", l.Epoch(), intruder)
			}
			if r, _ := ms.Row(l.Key()); r.Holder == "intruder" || r.Epoch != l.Epoch() {
				t.Errorf("function called while the database shows %+v", r)
			}
			return nil
		}
		// Do's step after Lock, with the lease Lock returned and the pause
		// between them: the term is given back, the function not called.
		l, err := lk.Lock(ctx, "k")
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		pause(l)
		if ran, err := lk.runIfValid(ctx, l, fn); ran || err != nil {
			t.Fatalf("Do's step under a term paused past its trust deadline: ran %v, err %v; want it given back", ran, err)
		}
		// Do then waits for the key again and calls the function once.
		if err := lk.Do(ctx, "k", fn); err != nil {
			t.Fatalf("Do: %v", err)
		}
		if stale == 0 || intruder <= stale {
			t.Fatalf("the pause did not happen: stale epoch %d, intruder's %d", stale, intruder)
		}
		if calls != 1 {
			t.Fatalf("function called %d times, want once", calls)
		}
	})
}
