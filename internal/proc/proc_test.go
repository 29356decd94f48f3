package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestSurvivesThreadExit calls Start from goroutines locked to their own
// threads, which then exit: exactly the exit that kills a child forked
// from such a thread (TestThreadExitKillsNaiveChild). Children started by
// Start were forked from Start's own threads, so they must survive. Three
// children, because the runtime parks rather than ends a locked main
// thread, which would hide a naive Start about one time in five.
func TestSurvivesThreadExit(t *testing.T) {
	var ps []*Process
	for range 3 {
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		started := make(chan *Process, 1)
		errs := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the caller's thread ends here
			p, err := Start(cmd)
			if err != nil {
				errs <- err
				return
			}
			started <- p
		}()
		select {
		case p := <-started:
			ps = append(ps, p)
		case err := <-errs:
			t.Fatal(err)
		}
	}
	defer func() {
		for _, p := range ps {
			_ = p.Cmd.Process.Kill()
			<-p.Done()
		}
	}()
	// A naive Start loses its child within milliseconds of the caller's
	// thread ending; a bounded look shows these are still running.
	died := make(chan *Process, len(ps))
	for _, p := range ps {
		go func() {
			<-p.Done()
			died <- p
		}()
	}
	select {
	case p := <-died:
		t.Fatalf("child %d died when the caller's thread exited: %v", p.Pid, p.Err())
	case <-time.After(500 * time.Millisecond):
	}
}

// TestThreadExitKillsNaiveChild shows the hazard Start avoids: a child
// forked from a thread that then exits gets its Pdeathsig at once, although
// this process lives on.
func TestThreadExitKillsNaiveChild(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The forking goroutine must not run on the main thread, which the
	// runtime keeps when a goroutine locked to it exits: on an idle
	// machine the scheduler often gives it the main thread, so try again
	// on another goroutine until it runs elsewhere.
	errMainThread := errors.New("on the main thread")
	started := make(chan error, 1)
	for try := 0; ; try++ {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if syscall.Gettid() == os.Getpid() {
				started <- errMainThread
				return
			}
			started <- cmd.Start()
		}()
		err := <-started
		if err == nil {
			break
		}
		if !errors.Is(err, errMainThread) || try == 100 {
			t.Fatal(err)
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err == nil {
			t.Fatalf("child exited cleanly, want killed")
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("child survived the exit of the thread that forked it; the premise of Start is wrong")
	}
}

// TestNestedModule: Build compiles a package of a nested module (the
// sample, the tools, the command) in that module, from the directory of
// its go.mod, and one of the root module in the root.
func TestNestedModule(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"sample/demo", "tools/chaos/worker", "cmd/leasehold", "internal/proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"go.mod", "sample/go.mod", "tools/go.mod", "cmd/leasehold/go.mod"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("module m\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ pkg, dir, rel string }{
		{"./sample", "sample", "."},
		{"./sample/demo", "sample", "./demo"},
		{"./tools/chaos/worker", "tools", "./chaos/worker"},
		{"./cmd/leasehold", "cmd/leasehold", "."},
		{"./internal/proc", ".", "./internal/proc"},
		{".", ".", "."},
	} {
		dir, rel := nestedModule(root, tt.pkg)
		if want := filepath.Join(root, tt.dir); dir != want || rel != tt.rel {
			t.Errorf("nestedModule(%q) = %q, %q; want %q, %q", tt.pkg, dir, rel, want, tt.rel)
		}
	}
	// From a nested module, a path out of it: the command's tests build
	// the sample.
	if dir, rel := nestedModule(filepath.Join(root, "cmd/leasehold"), "../../sample/demo"); dir != filepath.Join(root, "sample") || rel != "./demo" {
		t.Errorf("nestedModule from cmd/leasehold of ../../sample/demo = %q, %q; want %q, ./demo", dir, rel, filepath.Join(root, "sample"))
	}
}
