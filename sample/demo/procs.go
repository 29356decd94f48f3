package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	procs "github.com/leasehold/leasehold/internal/proc"
)

// node is one copy of the sample the demo runs.
type node struct {
	name, cluster string
}

// nodes are the three copies: two in cluster eu, one in us.
var nodes = []node{{"alpha", "eu"}, {"beta", "eu"}, {"gamma", "us"}}

// statusNode is the copy that serves HTTP: its status page, metrics and
// probes.
var statusNode = nodes[len(nodes)-1]

// proc is a running copy of the sample.
type proc struct {
	*procs.Process
	node
	logPath string
	killed  bool // the demo sent SIGKILL on purpose
	stopped bool // the demo sent SIGTERM
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

// build compiles the sample (the root package of this module) into dir
// and returns the binary's path.
func build(ctx context.Context, dir string) (string, error) {
	return procs.Build(ctx, ".", dir, "sample")
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
	if n == statusNode {
		args = append(args, "-http", d.httpAddr)
	}
	cmd := exec.Command(d.bin, args...)
	cmd.Env = sampleEnv(n)
	cmd.Stdout, cmd.Stderr = f, f
	// The copies die with the demo, even if it is killed itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	child, err := procs.Start(cmd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", n.name, err)
	}
	go func() {
		<-child.Done()
		f.Close()
	}()
	return &proc{Process: child, node: n, logPath: logPath}, nil
}

// checkAlive fails when a process the demo did not stop has exited.
func (d *demo) checkAlive() error {
	for _, p := range d.procs {
		if !p.killed && !p.stopped && p.Exited() {
			return fmt.Errorf("%s exited unexpectedly (%w); see %s", p.name, p.Err(), p.logPath)
		}
	}
	return nil
}

// killAll kills every process still running and waits for it (bounded).
// It is the demo's last resort on failure.
func (d *demo) killAll() {
	for _, p := range d.procs {
		if !p.Exited() {
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
		}
	}
}
