package coordination

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
)

func init() {
	conformanceCases = append(conformanceCases, conformanceCase{"PoolsListsEveryPool", casePoolsListsEveryPool})
}

// casePoolsListsEveryPool runs pools of both scopes whose names nest, next
// to an election named like one of them, and reads them all with Pools
// from a coordinator that never runs.
func casePoolsListsEveryPool(t *testing.T, b *bundle) {
	cfg := steady(b.fastConfig()) // no lease may expire on a busy machine
	ra := start(t, b.db, "node-a", cfg)
	rb := start(t, b.db, "node-b", cfg)
	reader, err := New(b.db, testIdentity(t, "node-r"), Config{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	e, err := ra.Election(GlobalScope, "a")
	if err != nil {
		t.Fatal(err)
	}
	l := mustCampaign(t, e)
	defer func() { _ = l.Release(context.Background()) }()

	type joined struct {
		leave context.CancelFunc
		done  chan struct{}
	}
	join := func(r *running, scope Scope, name string) joined {
		p, err := r.Pool(scope, name, PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, leave := context.WithCancel(context.Background())
		j := joined{leave: leave, done: make(chan struct{})}
		go func() {
			defer close(j.done)
			_ = p.Run(ctx, func(ctx context.Context, _ Assignment) error { <-ctx.Done(); return nil })
		}()
		t.Cleanup(func() {
			leave()
			select {
			case <-j.done:
			case <-time.After(wait):
				t.Errorf("Pool.Run of %s on %s did not return", name, r.Holder())
			}
		})
		return j
	}
	join(ra, GlobalScope, "a")
	bLeaves := join(rb, GlobalScope, "a")
	join(ra, GlobalScope, "a/member/x")
	join(rb, ClusterScope, "a")

	idA, idB := ra.id.Instance, rb.id.Instance
	settled := func(st PoolState, ids ...string) bool {
		if st.Generation == 0 || len(st.List) != len(ids) {
			return false
		}
		for _, id := range ids {
			if !slices.Contains(st.List, id) {
				return false
			}
		}
		for _, m := range st.Members {
			if m.Live && m.Ack != st.Generation {
				return false
			}
		}
		return true
	}
	read := func(want func([]PoolState) bool) []PoolState {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			got, err := reader.Pools(ctx)
			cancel()
			if err != nil {
				t.Fatalf("Pools: %v", err)
			}
			if want(got) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("Pools did not reach the expected state within %v: %+v", wait, got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	keys := []string{"cluster/test/a", "global/a", "global/a/member/x"}
	got := read(func(ps []PoolState) bool {
		return len(ps) == 3 && settled(ps[0], idB) && settled(ps[1], idA, idB) && settled(ps[2], idA)
	})
	for i, st := range got {
		if st.Pool != keys[i] {
			t.Fatalf("pool %d is %q, want %q (in key order)", i, st.Pool, keys[i])
		}
		if st.DBNow.IsZero() {
			t.Errorf("pool %s: DBNow is zero", st.Pool)
		}
		for _, m := range st.Members {
			if !m.Live || !m.ExpiresAt.After(st.DBNow) || m.Holder == "" {
				t.Errorf("pool %s: member %+v not live at %v", st.Pool, m, st.DBNow)
			}
		}
	}
	if ms := got[1].Members; len(ms) != 2 || ms[0].ID > ms[1].ID {
		t.Fatalf("global/a members = %+v, want both, by id", ms)
	}
	for _, m := range got[1].Members {
		want := ra.Holder()
		if m.ID == idB {
			want = rb.Holder()
		}
		if m.Holder != want {
			t.Errorf("member %s holder = %q, want %q", m.ID, m.Holder, want)
		}
	}
	gen := got[1].Generation

	// A member that left keeps its row, not live, until it is pruned.
	bLeaves.leave()
	select {
	case <-bLeaves.done:
	case <-time.After(wait):
		t.Fatal("Pool.Run did not return after leave")
	}
	got = read(func(ps []PoolState) bool { return len(ps) == 3 && settled(ps[1], idA) })
	if got[1].Generation <= gen {
		t.Errorf("generation after a leave = %d, want above %d", got[1].Generation, gen)
	}
	var left *Member
	for i, m := range got[1].Members {
		if m.ID == idB {
			left = &got[1].Members[i]
		}
	}
	if left == nil || left.Live {
		t.Errorf("the row of the member that left = %+v, want present and not live", left)
	}
	if got[0].Pool != keys[0] || !settled(got[0], idB) || got[2].Pool != keys[2] || !settled(got[2], idA) {
		t.Errorf("a leave from global/a changed another pool: %+v", got)
	}
}

func TestRenewalState(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ms := memstore.New()
		c0 := newCoordinator(ms, testIdentity(t, "node-a"), Config{}.withDefaults())
		if st := c0.Renewal(); st.Running || st.Held != 0 || !st.TrustDeadline.IsZero() || st.Failures != 0 {
			t.Fatalf("Renewal before Run = %+v, want zero", st)
		}
		c, stop := bubbleCoordinator(t, ms, Config{}) // TTL 15s, renew 5s, margin 3s
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
		time.Sleep(3 * time.Second) // the backoff is at most RetryInterval (2s); the deadline is at 17s
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
