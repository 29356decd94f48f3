package faketime

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTimersOfOneBubbleOnManyThreads is the fault this package exists
// for: goroutines of one bubble arm timers due at once, each on its own
// thread. Under -race with more than one P it kills the test binary
// within a few rounds (checked with synctest.Test in place of Test); held
// to one P it passes.
func TestTimersOfOneBubbleOnManyThreads(t *testing.T) {
	for range 200 {
		Test(t, func(t *testing.T) {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 50 {
						var fired sync.WaitGroup
						fired.Add(1)
						time.AfterFunc(0, fired.Done)
						fired.Wait()
					}
				})
			}
			wg.Wait()
		})
	}
}

func TestHoldNestsAndRestores(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	outer := Hold()
	inner := Hold()
	want := before
	if raceEnabled {
		want = 1
	}
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("GOMAXPROCS under two holds = %d, want %d", got, want)
	}
	outer()
	outer() // a second release of the same hold changes nothing
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("GOMAXPROCS with one hold left = %d, want %d", got, want)
	}
	inner()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS after the last release = %d, want %d as before", got, before)
	}
}

// TestEveryBubbleIsHeld fails on a test file of the module that starts a
// bubble with synctest itself, unless its package holds the process in
// TestMain (as leaseholdtest does, for its runnable examples).
func TestEveryBubbleIsHeld(t *testing.T) {
	const root = "../.."
	held := map[string]bool{} // directories whose TestMain holds
	var direct []string       // test files calling synctest.Test or synctest.Run
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a nested module
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(src)
		if strings.Contains(text, "faketime.Hold()") && strings.Contains(text, "func TestMain(") {
			held[filepath.Dir(path)] = true
		}
		if strings.Contains(text, "synctest.Test") || strings.Contains(text, "synctest.Run") {
			direct = append(direct, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range direct {
		if !held[filepath.Dir(path)] {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s starts a synctest bubble itself; use faketime.Test, or faketime.Hold in the package's TestMain", rel)
		}
	}
}
