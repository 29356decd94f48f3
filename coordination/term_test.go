package coordination

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/faketime"
)

type workReport struct {
	err     error
	retryIn time.Duration
	at      time.Duration // since the test began, on the bubble's clock
}

// workRecorder collects what runWork reports.
type workRecorder struct {
	began   time.Time
	reports []workReport
}

func (r *workRecorder) policy(base, max time.Duration) workPolicy {
	return workPolicy{
		backoff: newBackoff(base, max),
		report: func(err error, retryIn time.Duration) {
			r.reports = append(r.reports, workReport{err, retryIn, time.Since(r.began)})
		},
		endOfTerm: func(err error) bool { return errors.Is(err, context.Canceled) },
	}
}

func alwaysValid() bool { return true }

func TestPanicIsRecoveredReportedAndCalledAgain(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		r := &workRecorder{began: time.Now()}
		var calls []time.Duration
		finished := runWork(context.Background(), alwaysValid, func(context.Context) error {
			calls = append(calls, time.Since(r.began))
			if len(calls) == 1 {
				panic("boom")
			}
			return nil
		}, r.policy(time.Second, 8*time.Second))
		if !finished {
			t.Fatal("runWork = false, want true: the second call returned nil while the term was valid")
		}
		if len(calls) != 2 || len(r.reports) != 1 || calls[1] != r.reports[0].retryIn {
			t.Fatalf("calls at %v, reports %v; want two calls, the second after the backoff reported", calls, r.reports)
		}
		if len(r.reports) != 1 {
			t.Fatalf("reports = %v, want the panic once", r.reports)
		}
		var pe *PanicError
		if !errors.As(r.reports[0].err, &pe) || pe.Value != "boom" || !errors.Is(r.reports[0].err, ErrPanicked) {
			t.Fatalf("reported %v, want a *PanicError of \"boom\" wrapping ErrPanicked", r.reports[0].err)
		}
		if !strings.Contains(string(pe.Stack), "term_test.go") {
			t.Fatalf("stack does not show the panicking function:\n%s", pe.Stack)
		}
		if !jittered(r.reports[0].retryIn, time.Second) {
			t.Fatalf("retryIn = %v, want 1s plus at most half of it", r.reports[0].retryIn)
		}
	})
}

func TestErrorsBackOffDoublingWhileValid(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		r := &workRecorder{began: time.Now()}
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		fail := errors.New("database down")
		finished := runWork(ctx, alwaysValid, func(context.Context) error {
			calls++
			if calls == 5 {
				cancel() // the term ends during the fifth call
			}
			return fail
		}, r.policy(time.Second, 4*time.Second))
		if finished {
			t.Fatal("runWork = true, want false: the function never succeeded")
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 0}
		if len(r.reports) != len(want) {
			t.Fatalf("reports = %v, want %d", r.reports, len(want))
		}
		var waited time.Duration
		for i, w := range want {
			if !jittered(r.reports[i].retryIn, w) || !errors.Is(r.reports[i].err, fail) {
				t.Fatalf("report %d = %+v, want %v with retryIn %v plus at most half of it", i, r.reports[i], fail, w)
			}
			waited += r.reports[i].retryIn
		}
		if got := r.reports[4].at; got != waited {
			t.Fatalf("fifth call at %v, want after the four waits reported, %v", got, waited)
		}
	})
}

func TestEndOfTermIsNotReported(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		r := &workRecorder{began: time.Now()}
		ctx, cancel := context.WithCancel(context.Background())
		finished := runWork(ctx, alwaysValid, func(ctx context.Context) error {
			cancel()
			return ctx.Err()
		}, r.policy(time.Second, time.Second))
		if finished || len(r.reports) != 0 {
			t.Fatalf("finished=%v reports=%v, want false and none", finished, r.reports)
		}
		// A panic at the end of the term is still reported.
		ctx, cancel = context.WithCancel(context.Background())
		runWork(ctx, alwaysValid, func(ctx context.Context) error {
			cancel()
			panic(ctx.Err())
		}, r.policy(time.Second, time.Second))
		if len(r.reports) != 1 || !errors.Is(r.reports[0].err, ErrPanicked) || r.reports[0].retryIn != 0 {
			t.Fatalf("reports = %v, want the panic once with retryIn 0", r.reports)
		}
	})
}

func TestNothingRunsUnderAnInvalidTerm(t *testing.T) {
	r := &workRecorder{began: time.Now()}
	var valid atomic.Bool
	called := false
	if runWork(context.Background(), valid.Load, func(context.Context) error {
		called = true
		return nil
	}, r.policy(time.Second, time.Second)) || called {
		t.Fatal("fn was called, or runWork reported finished, under a term that was never valid")
	}
	// A nil return after the term stopped being valid is not "finished".
	valid.Store(true)
	if runWork(context.Background(), valid.Load, func(context.Context) error {
		valid.Store(false)
		return nil
	}, r.policy(time.Second, time.Second)) {
		t.Fatal("runWork = true for a function that returned after its term ended")
	}
}

func TestCancelDuringBackoffStopsAtOnce(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		r := &workRecorder{began: time.Now()}
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		time.AfterFunc(500*time.Millisecond, cancel)
		runWork(ctx, alwaysValid, func(context.Context) error {
			calls++
			return errors.New("fails")
		}, r.policy(time.Hour, time.Hour))
		if calls != 1 || time.Since(r.began) != 500*time.Millisecond {
			t.Fatalf("calls=%d, returned after %v; want 1 call and a return at the cancel (500ms)", calls, time.Since(r.began))
		}
	})
}

func TestWorkBackoff(t *testing.T) {
	const base, maxWait = 100 * time.Millisecond, 700 * time.Millisecond
	type step struct {
		ran     time.Duration // how long the failed run lasted; -1 for a success
		wantGap time.Duration
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"DoublesPerFailure", []step{{0, base}, {0, 2 * base}, {0, 4 * base}}},
		{"CappedAtMax", []step{{0, base}, {0, 2 * base}, {0, 4 * base}, {0, maxWait}, {0, maxWait}}},
		{"ResetAfterLongRun", []step{{0, base}, {0, 2 * base}, {maxWait + 1, base}, {0, 2 * base}}},
		{"RunOfExactlyMaxDoesNotReset", []step{{0, base}, {maxWait, 2 * base}}},
		{"ResetAfterSuccess", []step{{0, base}, {0, 2 * base}, {-1, 0}, {0, base}}},
		{"ManyFailuresDoNotOverflow", func() []step {
			s := make([]step, 100)
			for i := range s {
				s[i] = step{0, maxWait}
			}
			s[0], s[1], s[2] = step{0, base}, step{0, 2 * base}, step{0, 4 * base}
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackoff(base, maxWait)
			for i, s := range tc.steps {
				if s.ran < 0 {
					b.succeeded()
					continue
				}
				if got := b.failed(s.ran); !jittered(got, s.wantGap) {
					t.Fatalf("step %d: failed(%v) = %v, want %v plus at most half of it", i, s.ran, got, s.wantGap)
				}
			}
		})
	}
}

// jittered reports whether got is the wait d of the retry policy: d plus a
// random part of at most half of d.
func jittered(got, d time.Duration) bool { return got >= d && got <= d+d/2 }

func TestProtect(t *testing.T) {
	errX := errors.New("x")
	for _, tc := range []struct {
		name    string
		fn      func() error
		panics  bool
		wrapsX  bool
		message string
	}{
		{"ReturnsError", func() error { return errX }, false, true, "x"},
		{"PanicString", func() error { panic("oops") }, true, false, "leasehold: work function panicked: oops"},
		{"PanicError", func() error { panic(errX) }, true, true, "leasehold: work function panicked: x"},
		{"PanicNil", func() error { panic(nil) }, true, false, "leasehold: work function panicked: panic called with nil argument"},
		{"RuntimeError", func() error { return fmt.Errorf("%d", nth(nil, 1)) }, true, false, "index out of range [1] with length 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := protect(tc.fn)
			var pe *PanicError
			if got := errors.As(err, &pe); got != tc.panics || errors.Is(err, ErrPanicked) != tc.panics {
				t.Fatalf("protect = %v; reported as a panic: %v, want %v", err, got, tc.panics)
			}
			if errors.Is(err, errX) != tc.wrapsX {
				t.Fatalf("protect = %v; errors.Is(err, %v) = %v, want %v", err, errX, !tc.wrapsX, tc.wrapsX)
			}
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("protect = %v, want a message with %q", err, tc.message)
			}
			if pe != nil && !strings.Contains(string(pe.Stack), "TestProtect") {
				t.Fatalf("stack does not show the panicking function:\n%s", pe.Stack)
			}
		})
	}
}

func nth(s []int, i int) int { return s[i] }
