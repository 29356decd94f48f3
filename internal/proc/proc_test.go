package proc

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestSurvivesThreadExit starts a child with Pdeathsig, then makes the Go
// runtime end OS threads (locked goroutines that return). The child must
// still be alive: it dies only with this process.
func TestSurvivesThreadExit(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		<-p.Done()
	}()
	for range 50 {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			close(done)
		}()
		<-done
	}
	select {
	case <-p.Done():
		t.Fatalf("child died when unrelated threads exited: %v", p.Err())
	case <-time.After(200 * time.Millisecond): // a bounded look: the child must still be running
	}
}

// TestThreadExitKillsNaiveChild shows the hazard Start avoids: a child
// forked from a thread that then exits gets its Pdeathsig at once, although
// this process lives on.
func TestThreadExitKillsNaiveChild(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		started <- cmd.Start()
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
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
