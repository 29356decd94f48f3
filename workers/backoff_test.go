package workers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRestartBackoff(t *testing.T) {
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
			b := newRestartBackoff(Config{RestartBackoff: base, MaxRestartBackoff: maxWait})
			for i, s := range tc.steps {
				if s.ran < 0 {
					b.succeeded()
					continue
				}
				if got := b.failed(s.ran); got != s.wantGap {
					t.Fatalf("step %d: failed(%v) = %v, want %v", i, s.ran, got, s.wantGap)
				}
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.RestartBackoff != DefaultRestartBackoff || c.MaxRestartBackoff != DefaultMaxRestartBackoff {
		t.Fatalf("defaults = %v / %v, want %v / %v", c.RestartBackoff, c.MaxRestartBackoff, DefaultRestartBackoff, DefaultMaxRestartBackoff)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("zero config invalid: %v", err)
	}
	if err := (Config{MaxRestartBackoff: -1}).withDefaults().validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative MaxRestartBackoff: %v", err)
	}
}

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
		{"PanicString", func() error { panic("oops") }, true, false, "workers: worker function panicked: oops"},
		{"PanicError", func() error { panic(errX) }, true, true, "workers: worker function panicked: x"},
		{"PanicNil", func() error { panic(nil) }, true, false, "workers: worker function panicked: panic called with nil argument"},
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

func TestKindNames(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{KindClusterSingleton.String(), "cluster-singleton"},
		{KindGlobalSingleton.String(), "global-singleton"},
		{KindPartitioned.String(), "partitioned"},
		{Kind(0).String(), "Kind(0)"},
		{EventStartedLeading.String(), "started-leading"},
		{EventStoppedLeading.String(), "stopped-leading"},
		{EventAssignmentChanged.String(), "assignment-changed"},
		{EventWorkerError.String(), "worker-error"},
		{EventShutdownOverrun.String(), "shutdown-overrun"},
		{EventKind(99).String(), "EventKind(99)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}
