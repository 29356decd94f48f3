// Package faketime runs the project's tests on testing/synctest fake time,
// around a fault of the race detector.
//
// Under -race, Go (seen on 1.26.8) keeps one ThreadSanitizer context for
// all of a bubble's timers, and two threads that run timers of the same
// bubble at once corrupt it: the test binary dies with SIGSEGV inside
// __tsan_go_start or StackDepot, taking every other test of the package
// with it. A bubble runs a timer on the thread of whichever goroutine
// finds it due (a select on an expired timer's channel, a timer armed at
// or before the bubble's now) as well as on the thread that advances the
// clock, so any bubble with two busy goroutines can meet it.
// golang/go#78156 reports a failure of the same family.
//
// With one P only one thread runs Go code at a time, and the fault cannot
// happen; the race detector still sees every goroutine. So under -race,
// Test and Hold limit the process to one P (runtime.GOMAXPROCS(1)) while
// a bubble may run, and give back the previous setting when the last one
// ends. Without -race they change nothing.
package faketime

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
)

// Test runs f in a new synctest bubble, as synctest.Test does, with the
// process held to one P under the race detector while it runs.
func Test(t *testing.T, f func(*testing.T)) {
	t.Helper()
	release := Hold()
	defer release()
	synctest.Test(t, f)
}

var single struct {
	mu    sync.Mutex
	holds int
	prev  int // GOMAXPROCS before the first hold
}

// Hold limits the process to one P under the race detector until release
// is called (release is idempotent); without -race it does nothing. Holds
// nest: the setting from before the first one comes back when the last
// one is released. A test package whose tests call synctest.Test
// themselves, as the runnable examples of a public package do, holds from
// its TestMain.
func Hold() (release func()) {
	if !raceEnabled {
		return func() {}
	}
	single.mu.Lock()
	if single.holds == 0 {
		single.prev = runtime.GOMAXPROCS(1)
	}
	single.holds++
	single.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			single.mu.Lock()
			defer single.mu.Unlock()
			single.holds--
			if single.holds == 0 {
				runtime.GOMAXPROCS(single.prev)
			}
		})
	}
}
