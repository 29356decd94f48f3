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
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
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

// Exited reports whether the child has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the child, or to its whole process group when the
// child leads one (SysProcAttr.Setpgid). A child that has already exited
// is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	target := p.Pid
	if a := p.Cmd.SysProcAttr; a != nil && a.Setpgid {
		target = -p.Pid
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("send %v to pid %d: %w", sig, p.Pid, err)
	}
	return nil
}

// WaitExit waits at most d (or until ctx is done) for the child to exit,
// and reports whether it did.
func (p *Process) WaitExit(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// GoTool returns the go command to build with: $GO, or "go".
func GoTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// Build compiles the main package pkg (a path relative to the root of the
// module the working directory is in, such as "./chaos/worker") into
// dir/name, and returns the binary's path. A pkg inside another module,
// a directory with a go.mod of its own such as "./sample" from the root or
// "../../sample" from cmd/leasehold, is built in that module. flags are
// passed to go build before the package, such as "-tags", "x".
func Build(ctx context.Context, pkg, dir, name string, flags ...string) (string, error) {
	out, err := exec.CommandContext(ctx, GoTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("%s env GOMOD: %w", GoTool(), err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("build %s: not inside the leasehold module; run it from the repository", pkg)
	}
	modDir, modPkg := nestedModule(filepath.Dir(mod), pkg)
	bin := filepath.Join(dir, name)
	args := append(append([]string{"build", "-o", bin}, flags...), modPkg)
	cmd := exec.CommandContext(ctx, GoTool(), args...)
	cmd.Dir = modDir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s build %s: %w\n%s", GoTool(), pkg, err, b)
	}
	return bin, nil
}

// nestedModule returns the directory of the innermost module that holds
// pkg (a path relative to root, the directory of a module's go.mod; it may
// lead out of that module, as "../../sample" does from cmd/leasehold), and
// pkg relative to that directory, as "./dir" or ".": root and pkg itself
// when no directory above pkg has a go.mod.
func nestedModule(root, pkg string) (dir, rel string) {
	if filepath.IsAbs(pkg) {
		return root, pkg
	}
	target := filepath.Join(root, pkg)
	for d := target; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			r, err := filepath.Rel(d, target)
			if err != nil {
				return root, pkg
			}
			if r == "." {
				return d, "."
			}
			return d, "./" + filepath.ToSlash(r)
		}
		if d == filepath.Dir(d) {
			return root, pkg
		}
	}
}
