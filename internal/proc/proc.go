// Package proc starts child processes that must die with this one.
//
// Linux sends a child its Pdeathsig when the OS thread that forked it
// exits, not when the parent process does, and the Go runtime ends
// threads: a goroutine locked to a thread that returns takes the thread
// with it. A child forked from an arbitrary goroutine can therefore be
// killed at any moment by an unrelated goroutine's exit. Start forks from
// a goroutine locked to its own thread, which then waits for the child, so
// the thread lives exactly as long as the child does.
package proc

import (
	"os/exec"
	"runtime"
)

// Process is a started child.
type Process struct {
	Cmd  *exec.Cmd
	Pid  int
	done chan struct{}
	err  error
}

// Start starts cmd (whose SysProcAttr may set Pdeathsig) and reaps it in a
// goroutine of its own.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked on purpose: when this goroutine returns, its
		// thread ends with it, after the child has been reaped.
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.Pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Done is closed when the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is cmd.Wait's result; valid once Done is closed.
func (p *Process) Err() error { return p.err }
