package coordination

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
	"github.com/leasehold/leasehold/internal/store"
)

func TestRenewalState(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c0 := newCoordinator(ms, testIdentity(t, "node-a"), Config{}.withDefaults())
		if st := c0.Renewal(); st.Running || st.Held != 0 || !st.TrustDeadline.IsZero() || st.Failures != 0 {
			t.Fatalf("Renewal before Run = %+v, want zero", st)
		}
		// TTL 15s, renew 5s, margin 3s; failed renewals are retried every
		// 200ms to 300ms.
		c, stop := bubbleCoordinator(t, ms, Config{RetryInterval: 200 * time.Millisecond})
		defer stop()
		if st := c.Renewal(); !st.Running || st.Held != 0 || !st.TrustDeadline.IsZero() {
			t.Fatalf("Renewal of an idle running coordinator = %+v", st)
		}
		start := time.Now()
		l := bubbleCampaign(t, c, "renewal")
		st := c.Renewal()
		if st.Held != 1 || !st.TrustDeadline.Equal(start.Add(12*time.Second)) {
			t.Fatalf("Renewal after acquire = %+v, want 1 held, deadline 12s on", st)
		}

		time.Sleep(5*time.Second + time.Millisecond) // the first renewal
		synctest.Wait()
		st = c.Renewal()
		if st.Failures != 0 || st.LastError != nil || !st.LastSuccess.After(start) ||
			!st.TrustDeadline.Equal(start.Add(17*time.Second)) {
			t.Fatalf("Renewal after a renewal = %+v", st)
		}
		success := st.LastSuccess

		ms.FailRenewals(errInjected)
		time.Sleep(5500 * time.Millisecond) // the next renewal at 10s, then retries with backoff
		synctest.Wait()
		st = c.Renewal()
		if st.Failures < 2 || !errors.Is(st.LastError, errInjected) || !st.LastSuccess.Equal(success) || st.Held != 1 {
			t.Fatalf("Renewal after failures = %+v, want 2 or more failures, the error, the old success", st)
		}
		failures := st.Failures
		time.Sleep(time.Second)
		synctest.Wait()
		if st = c.Renewal(); st.Failures <= failures {
			t.Fatalf("failures did not count up: %d then %d", failures, st.Failures)
		}

		ms.FailRenewals(nil)
		time.Sleep(3 * time.Second) // the backoff is at most 1.5 RetryInterval (300ms); the deadline is at 17s
		synctest.Wait()
		st = c.Renewal()
		if st.Failures != 0 || st.LastError != nil || !st.LastSuccess.After(success) || st.Held != 1 ||
			!st.TrustDeadline.After(start.Add(17*time.Second)) {
			t.Fatalf("Renewal after recovery = %+v, want reset", st)
		}

		_ = l.Release(context.Background())
		stop()
		if st = c.Renewal(); st.Running || st.Held != 0 {
			t.Fatalf("Renewal after Run returned = %+v", st)
		}
	})
}

// TestSessionInfos: the rows of one holder make one process, with the
// times of the session of leases that expires last and the addresses of
// its advertising row; a holder with an advertising row only has its
// times.
func TestSessionInfos(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	row := func(id, holder string, expiresIn time.Duration, addrs string) store.SessionRow {
		return store.SessionRow{ID: id, Holder: holder, WakeAddrs: addrs,
			Session: store.Session{RenewedAt: now.Add(-time.Second), ExpiresAt: now.Add(expiresIn), Now: now}}
	}
	got := sessionInfos([]store.SessionRow{
		row("b-old", "node-b/c/2", -time.Hour, ""),
		row("b-wake", "node-b/c/2", 10*time.Second, "h;10.0.0.5:4000,127.0.0.1:4000"),
		row("b-new", "node-b/c/2", 15*time.Second, ""),
		row("a-dead", "node-a/c/1", -time.Minute, ""),
		row("c-wake", "node-c/c/3", 5*time.Second, "h;10.0.0.7:4000"),
	})
	want := []SessionInfo{
		{Holder: "node-a/c/1", RenewedAt: now.Add(-time.Second), ExpiresAt: now.Add(-time.Minute), DatabaseTime: now},
		{Holder: "node-b/c/2", RenewedAt: now.Add(-time.Second), ExpiresAt: now.Add(15 * time.Second), DatabaseTime: now, Live: true,
			WakeAddrs: []string{"10.0.0.5:4000", "127.0.0.1:4000"}},
		{Holder: "node-c/c/3", RenewedAt: now.Add(-time.Second), ExpiresAt: now.Add(5 * time.Second), DatabaseTime: now, Live: true,
			WakeAddrs: []string{"10.0.0.7:4000"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sessionInfos =\n%+v\nwant\n%+v", got, want)
	}
}
