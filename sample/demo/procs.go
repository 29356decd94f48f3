package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// node is one copy of the sample the demo runs.
type node struct {
	name, cluster string
}

// nodes are the three copies: two in cluster eu, one in us.
var nodes = []node{{"alpha", "eu"}, {"beta", "eu"}, {"gamma", "us"}}

// proc is a running copy of the sample.
type proc struct {
	node
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	killed  bool          // the demo sent SIGKILL on purpose
	stopped bool          // the demo sent SIGTERM
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// sampleEnv is the environment of a sample process: the demo's own,
// without the variables the sample reads, plus the node's identity.
func sampleEnv(n node) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOSTNAME", k == "CLUSTER_NAME", k == "LOG_FORMAT",
			strings.HasPrefix(k, "LEASEHOLD_"), strings.HasPrefix(k, "SAMPLE_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOSTNAME="+n.name, "CLUSTER_NAME="+n.cluster, "LOG_FORMAT=console")
}

// goTool returns the go command that runs the demo: $GO, or "go".
func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("%s env GOMOD: %w", goTool(), err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the leasehold module: run the demo from the repository (make demo)")
	}
	return filepath.Dir(mod), nil
}

// build compiles ./sample into dir and returns the binary's path.
func build(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "sample")
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", bin, "./sample")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s build ./sample: %w\n%s", goTool(), err, out)
	}
	return bin, nil
}

// seed runs the sample once with -seed-only and waits for it.
func (d *demo) seed(ctx context.Context) error {
	logPath := filepath.Join(d.dir, "seed.log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, append(d.dbFlags(), "-seed-only", "-orders", fmt.Sprint(orders))...)
	cmd.Env = sampleEnv(node{"seed", "demo"})
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sample -seed-only: %w (log: %s)", err, logPath)
	}
	return nil
}

// dbFlags are the flags that point a sample at the demo's database.
func (d *demo) dbFlags() []string {
	return []string{"-driver", driver, "-dsn", d.dsn}
}

// start starts a copy of the sample for n, logging to a file in the
// temporary directory.
func (d *demo) start(n node) (*proc, error) {
	logPath := filepath.Join(d.dir, n.name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append(d.dbFlags(), sampleTiming...)
	cmd := exec.Command(d.bin, args...)
	cmd.Env = sampleEnv(n)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", n.name, err)
	}
	p := &proc{node: n, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// checkAlive fails when a process the demo did not stop has exited.
func (d *demo) checkAlive() error {
	for _, p := range d.procs {
		if !p.killed && !p.stopped && p.exited() {
			return fmt.Errorf("%s exited unexpectedly (%w); see %s", p.name, p.waitErr, p.logPath)
		}
	}
	return nil
}

// signal sends sig to p.
func (p *proc) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("send %v to %s: %w", sig, p.name, err)
	}
	return nil
}

// waitExit waits for p to exit, at most timeout; it reports whether it did.
func (p *proc) waitExit(ctx context.Context, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
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

// killAll kills every process still running and waits for it (bounded).
// It is the demo's last resort on failure.
func (d *demo) killAll() {
	for _, p := range d.procs {
		if !p.exited() {
			_ = p.signal(syscall.SIGKILL)
			p.waitExit(context.Background(), 5*time.Second)
		}
	}
}
