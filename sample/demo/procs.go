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

// fleet is the copies of the sample the demo runs: the binary, where they
// log, the database they share, the address the status node serves, and
// the running processes.
type fleet struct {
	dir      string // temporary directory: binary, database, logs
	bin      string
	dsn      string
	httpAddr string // where statusNode serves HTTP
	procs    []*proc
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
func (fl *fleet) seed(ctx context.Context) error {
	logPath := filepath.Join(fl.dir, "seed.log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, fl.bin, append(fl.dbFlags(), "-seed-only", "-orders", fmt.Sprint(orders))...)
	cmd.Env = sampleEnv(node{"seed", "demo"})
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sample -seed-only: %w (log: %s)", err, logPath)
	}
	return nil
}

// dbFlags are the flags that point a sample at the demo's database.
func (fl *fleet) dbFlags() []string {
	return []string{"-driver", driver, "-dsn", fl.dsn}
}

// start starts a copy of the sample for n, logging to a file in the
// temporary directory, and adds it to the fleet.
func (fl *fleet) start(n node) (*proc, error) {
	logPath := filepath.Join(fl.dir, n.name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append(fl.dbFlags(), sampleTiming...)
	if n == statusNode {
		args = append(args, "-http", fl.httpAddr)
	}
	cmd := exec.Command(fl.bin, args...)
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
	p := &proc{Process: child, node: n, logPath: logPath}
	fl.procs = append(fl.procs, p)
	return p, nil
}

// checkAlive fails when a process the demo did not stop has exited.
func (fl *fleet) checkAlive() error {
	for _, p := range fl.procs {
		if !p.killed && !p.stopped && p.Exited() {
			return fmt.Errorf("%s exited unexpectedly (%w); see %s", p.name, p.Err(), p.logPath)
		}
	}
	return nil
}

// find returns the copy named name, or nil.
func (fl *fleet) find(name string) *proc {
	var found *proc
	for _, p := range fl.procs {
		if p.name == name {
			found = p
		}
	}
	return found
}

// terminate sends SIGTERM to every copy the demo did not kill and
// returns their names.
func (fl *fleet) terminate() ([]string, error) {
	var names []string
	for _, p := range fl.procs {
		if p.killed {
			continue
		}
		p.stopped = true
		if err := p.Signal(syscall.SIGTERM); err != nil {
			return nil, err
		}
		names = append(names, p.name)
	}
	return names, nil
}

// waitStopped waits for the copies sent SIGTERM at sent to exit with
// status 0; those still running stopTimeout after it are killed.
func (fl *fleet) waitStopped(ctx context.Context, sent time.Time) error {
	var errs []error
	for _, p := range fl.procs {
		if !p.stopped {
			continue
		}
		if !p.WaitExit(ctx, stopTimeout-time.Since(sent)) {
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
			errs = append(errs, fmt.Errorf("%s did not exit within %v of SIGTERM and was killed; see %s", p.name, stopTimeout, p.logPath))
			continue
		}
		if p.Err() != nil {
			errs = append(errs, fmt.Errorf("%s exited with %w after SIGTERM; see %s", p.name, p.Err(), p.logPath))
		}
	}
	return errors.Join(errs...)
}

// killAll kills every process still running and waits for it (bounded).
// It is the demo's last resort on failure.
func (fl *fleet) killAll() {
	for _, p := range fl.procs {
		if !p.Exited() {
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
		}
	}
}
