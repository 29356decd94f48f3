package membership

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/store"
)

// The members of these tests read every second and bound a step by 4s.
const (
	outagePoll = time.Second
	outageStep = 4 * time.Second
)

// errDown is what the statements of a store that is down return.
var errDown = errors.New("sql: database is closed")

// flakyStore is a fakeStore whose statements fail while down is set:
// every one, or with acksOnly only the acknowledgements.
type flakyStore struct {
	*fakeStore
	down     atomic.Bool
	acksOnly bool
}

func (s *flakyStore) fails(ack bool) bool { return s.down.Load() && (ack || !s.acksOnly) }

func (s *flakyStore) EnsureRows(ctx context.Context, names []string) error {
	if s.fails(false) {
		return errDown
	}
	return s.fakeStore.EnsureRows(ctx, names)
}

func (s *flakyStore) List(ctx context.Context, prefix string) ([]store.Row, error) {
	if s.fails(false) {
		return nil, errDown
	}
	return s.fakeStore.List(ctx, prefix)
}

func (s *flakyStore) SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error) {
	if s.fails(true) {
		return false, errDown
	}
	return s.fakeStore.SetData(ctx, session, t, data, wake)
}

func (s *flakyStore) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	if s.fails(false) {
		return false, errDown
	}
	return s.fakeStore.Publish(ctx, name, from, data)
}

func (s *flakyStore) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	if s.fails(false) {
		return 0, errDown
	}
	return s.fakeStore.PruneDead(ctx, prefix, grace)
}

// outageHost is a host whose member may fail: it counts the failures the
// member reports rather than failing the test.
type outageHost struct {
	*host
	failures atomic.Int64
}

func newOutageHost(t *testing.T, s *flakyStore, name string) *outageHost {
	rows := Rows{Prefix: "pool|global/p|", Generation: "pool|global/p|generation", Members: "pool|global/p|member|"}
	return &outageHost{host: &host{t: t, s: s.fakeStore, rows: rows, name: name}}
}

func (h *outageHost) Failed(error) { h.failures.Add(1) }

// member returns a member of h on s, logging to log.
func (h *outageHost) member(s Store, log *zap.Logger) *Member {
	return New(Config{
		Pool: "global/p", Rows: h.rows, Holder: h.name, Poll: outagePoll,
		StepTimeout: outageStep, ShutdownTimeout: time.Minute, PruneAfter: time.Minute,
		Store: s, Joiner: h, Notifier: h, Worker: h, Reporter: h,
		Log: log,
	})
}

// drive runs m as Pool.drive does, without wake-ups, until the clock
// passes until: step, note whether settled, sleep until the next read.
// It calls before ahead of each step with the time, and returns the
// moments the steps began.
func drive(ctx context.Context, m *Member, until time.Time, before func(now time.Time)) []time.Time {
	var starts []time.Time
	for time.Now().Before(until) {
		began := time.Now()
		if before != nil {
			before(began)
		}
		starts = append(starts, began)
		settled := m.Step(ctx)
		m.NoteSettled(began, settled)
		time.Sleep(time.Until(m.NextRead(began, settled)))
	}
	return starts
}

// TestFailedStepsBackOff checks that a member whose store fails every
// statement steps no more than once a poll: the wait after a failed step
// is the poll plus up to half of it (backoff.Policy.Wait), however many
// failed before it, rather than the quarter poll of a pending rebalance.
func TestFailedStepsBackOff(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &flakyStore{fakeStore: newFakeStore()}
		s.down.Store(true)
		h := newOutageHost(t, s, "a")
		m := h.member(s, zaptest.NewLogger(t, zaptest.Level(zapcore.InfoLevel)))
		defer m.Leave(ctx, errors.New("closed"))

		const polls = 20
		starts := drive(ctx, m, time.Now().Add(polls*outagePoll), nil)
		for i := 1; i < len(starts); i++ {
			t.Logf("wait after failed step %d: %v", i, starts[i].Sub(starts[i-1]))
		}
		if n := len(starts); n > polls {
			t.Errorf("%d steps in %d polls of a store that fails every statement, want at most one a poll", n, polls)
		}
		if got := h.failures.Load(); got != int64(len(starts)) {
			t.Errorf("%d failures reported for %d failed steps, want one each", got, len(starts))
		}
		for i := 1; i < len(starts); i++ {
			gap := starts[i].Sub(starts[i-1])
			want := outagePoll
			if gap < want || gap > want+want/2 {
				t.Errorf("wait after failed step %d = %v, want within [%v, %v] (Poll, plus up to half)",
					i, gap, want, want+want/2)
				break
			}
		}
	})
}

// TestOneWarningPerOutage checks the log of two outages: each one warns
// once, at its first failed step, logs its further failures at Debug,
// and ends with one Info line at the first step that succeeds again,
// with the number of failures and how long the outage lasted. Every
// failure is still reported (Reporter.Failed).
func TestOneWarningPerOutage(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ctx := context.Background()
		core, logs := observer.New(zapcore.DebugLevel)
		s := &flakyStore{fakeStore: newFakeStore()}
		h := newOutageHost(t, s, "a")
		m := h.member(s, zap.New(core))
		defer m.Leave(ctx, errors.New("closed"))

		// Down for the first 15 polls, up for 15, down for 15 (the member
		// is joined then), up for 15.
		start := time.Now()
		phase := func(now time.Time) int { return int(now.Sub(start) / (15 * outagePoll)) }
		var failed []int // failed steps, by outage
		var firstFailure, recovered []time.Time
		outage := -1
		starts := drive(ctx, m, start.Add(60*outagePoll), func(now time.Time) {
			p := phase(now)
			down := p%2 == 0
			if down && p/2 != outage {
				outage = p / 2
				failed = append(failed, 0)
				firstFailure = append(firstFailure, now)
			}
			if !down && len(recovered) == outage {
				recovered = append(recovered, now)
			}
			if down {
				failed[outage]++
			}
			s.down.Store(down)
		})
		if len(failed) != 2 || len(recovered) != 2 {
			t.Fatalf("%d outages, %d recoveries in %d steps; want 2 and 2", len(failed), len(recovered), len(starts))
		}
		total := int64(failed[0] + failed[1])
		if got := h.failures.Load(); got != total {
			t.Errorf("%d failures reported for %d failed steps, want one each", got, total)
		}

		warns := logs.FilterMessage("pool step failed; retrying").FilterLevelExact(zapcore.WarnLevel).All()
		if len(warns) != 2 {
			t.Errorf("%d warnings for 2 outages of %v failed steps, want one each", len(warns), failed)
		}
		for _, w := range warns {
			if err, _ := w.ContextMap()["error"].(string); !strings.Contains(err, errDown.Error()) {
				t.Errorf("warning %q carries error %q, want the step's error", w.Message, err)
			}
		}
		if n := logs.FilterLevelExact(zapcore.WarnLevel).Len() + logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != len(warns) {
			t.Errorf("%d warnings or errors logged, want only the %d of the outages", n, len(warns))
		}
		if got := logs.FilterMessage("pool step failed; retrying").FilterLevelExact(zapcore.DebugLevel).Len(); got != int(total)-2 {
			t.Errorf("%d failed steps logged at Debug, want every failure but the first of each outage (%d)", got, total-2)
		}
		infos := logs.FilterMessage("pool step recovered").All()
		if len(infos) != 2 {
			t.Fatalf("%d recovery lines for 2 outages, want one each", len(infos))
		}
		for i, info := range infos {
			f := info.ContextMap()
			if info.Level != zapcore.InfoLevel || f["failures"] != int64(failed[i]) || f["outage"] != recovered[i].Sub(firstFailure[i]) {
				t.Errorf("recovery %d: %s %q %v, want Info with %d failures over an outage of %v",
					i+1, info.Level, info.Message, f, failed[i], recovered[i].Sub(firstFailure[i]))
			}
		}
		if got := h.last().Generation; got == 0 {
			t.Errorf("the member did not work after the outages")
		}
	})
}

// TestBackoffKeepsTheRebalanceSchedule checks that a failed step waits
// out its backoff even where another member's row expires sooner, while
// steps without failures keep the schedule the rebalance bounds rest on:
// a quarter poll while a rebalance is pending, and another member's
// expiry when that comes first.
func TestBackoffKeepsTheRebalanceSchedule(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &flakyStore{fakeStore: newFakeStore(), acksOnly: true}
		ha, hb := newOutageHost(t, s, "a"), newOutageHost(t, s, "b")
		log := zaptest.NewLogger(t)
		a, b := ha.member(s, log.Named("a")), hb.member(s, log.Named("b"))
		defer a.Leave(ctx, errors.New("closed"))
		defer b.Leave(ctx, errors.New("closed"))
		step := func(m *Member, wantSettled bool) (began time.Time, next time.Duration) {
			t.Helper()
			began = time.Now()
			settled := m.Step(ctx)
			if settled != wantSettled {
				t.Fatalf("step settled = %v, want %v", settled, wantSettled)
			}
			m.NoteSettled(began, settled)
			return began, m.NextRead(began, settled).Sub(began)
		}

		step(a, false) // joins and publishes generation 1: [a]
		step(a, true)  // works in generation 1
		step(b, false) // joins and publishes generation 2: [a b]
		// A rebalance is pending (a has not acknowledged 2), and nothing
		// failed: b reads again a quarter poll later.
		if _, next := step(b, false); next > outagePoll/4 || next < outagePoll/4*9/10 {
			t.Errorf("a member waiting at the barrier reads again after %v, want within [%v, %v]", next, outagePoll/4*9/10, outagePoll/4)
		}

		// b's row expires in 100ms by the database clock, and a's
		// acknowledgement of generation 2 fails: the read after it waits
		// for the backoff, not for b's expiry.
		s.mu.Lock()
		s.rows[hb.rows.Member("b")].ExpiresAt = s.now.Add(100 * time.Millisecond)
		s.mu.Unlock()
		s.down.Store(true)
		if _, next := step(a, false); next < outagePoll || next > outagePoll*3/2 {
			t.Errorf("after a failed step the next read comes after %v, want within [%v, %v], whenever another member expires",
				next, outagePoll, outagePoll*3/2)
		}
		if got := ha.failures.Load(); got != 1 {
			t.Errorf("%d failures reported, want 1", got)
		}

		// The store is back: a acknowledges, everyone has, and a works in
		// generation 2, reading again just after b's row expires.
		s.down.Store(false)
		if _, next := step(a, true); next != 100*time.Millisecond+ExpiryMargin {
			t.Errorf("a settled member reads again after %v, want at the other member's expiry, %v", next, 100*time.Millisecond+ExpiryMargin)
		}
		if got := ha.last().Generation; got != 2 {
			t.Errorf("a works in generation %d, want 2", got)
		}
	})
}

// TestLossDuringAnOutage checks that a membership lost while the store
// is down is dropped by the next step, whose join fails: Lost then
// returns no closed channel, which would wake Pool.drive at once again
// and again, and the step backs off like any failed one.
func TestLossDuringAnOutage(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &flakyStore{fakeStore: newFakeStore()}
		h := newOutageHost(t, s, "a")
		m := h.member(s, zaptest.NewLogger(t))
		defer m.Leave(ctx, errors.New("closed"))
		m.Step(ctx)
		if !m.Step(ctx) {
			t.Fatal("not settled in generation 1")
		}
		s.down.Store(true)
		h.last().Lease.(*fakeLease).cancel() // the term ends: renewals failed past the trust deadline
		began := time.Now()
		m.Step(ctx)
		select {
		case <-m.Lost():
			t.Fatal("Lost is closed after the step that followed the loss")
		default:
		}
		if h.stopped != 1 || h.failures.Load() != 1 {
			t.Errorf("work stopped %d times, %d failures reported; want 1 and 1 (the join)", h.stopped, h.failures.Load())
		}
		if next := m.NextRead(began, false).Sub(began); !m.Failing() || next < outagePoll {
			t.Errorf("after the failed join: failing %v, next read after %v; want true, at least %v", m.Failing(), next, outagePoll)
		}
	})
}
