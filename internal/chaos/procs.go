package chaos

import (
	procs "github.com/leasehold/leasehold/internal/proc"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/history"
)

// proc is one running worker process.
type proc struct {
	node    string
	cmd     *exec.Cmd
	pid     int
	logPath string
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // set before done is closed
	killed  bool          // SIGKILLed on purpose
	paused  bool          // SIGSTOPped and not yet resumed
	stopped bool          // sent SIGTERM at the end
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to p's process group (p is its leader).
func (p *proc) signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("send %v to %s (pid %d): %w", sig, p.node, p.pid, err)
	}
	return nil
}

// waitExit waits at most d for p to exit and reports whether it did.
func (p *proc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// goTool is $GO or "go".
func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// buildWorker compiles ./internal/chaos/worker into dir.
func buildWorker(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("%s env GOMOD: %w", goTool(), err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the leasehold module")
	}
	bin := filepath.Join(dir, "chaos-worker")
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", bin, "./internal/chaos/worker")
	cmd.Dir = filepath.Dir(mod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s build ./internal/chaos/worker: %w\n%s", goTool(), err, b)
	}
	return bin, nil
}

// startProc starts one worker process with its own process group, which
// dies with this process (Pdeathsig).
func startProc(bin, node, logPath string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append(args, "-node", node)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Started from a thread that lives as long as the child: a child forked
	// from an arbitrary thread gets its Pdeathsig whenever the runtime ends
	// that thread (this killed workers during database restarts).
	child, err := procs.Start(cmd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start worker %s: %w", node, err)
	}
	p := &proc{node: node, cmd: cmd, pid: child.Pid, logPath: logPath, done: make(chan struct{})}
	go func() {
		<-child.Done()
		p.waitErr = child.Err()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// tailer follows the history files of a directory as they grow and keeps
// the open terms of every process.
type tailer struct {
	dir     string
	offsets map[string]int64
	leader  map[int]history.Event // pid -> open LeaderStart
	parts   map[int]history.Event // pid -> open PartitionStart
}

func newTailer(dir string) *tailer {
	return &tailer{dir: dir, offsets: map[string]int64{}, leader: map[int]history.Event{}, parts: map[int]history.Event{}}
}

// poll reads the complete lines added since the last poll.
func (t *tailer) poll() error {
	paths, err := filepath.Glob(filepath.Join(t.dir, "*.jsonl"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := t.pollFile(p); err != nil {
			return err
		}
	}
	return nil
}

func (t *tailer) pollFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	off := t.offsets[path]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		return nil
	}
	b = b[:i+1]
	evs, _, err := history.Decode(bytes.NewReader(b), path)
	if err != nil {
		return err
	}
	t.offsets[path] = off + int64(len(b))
	for _, e := range evs {
		t.apply(e)
	}
	return nil
}

func (t *tailer) apply(e history.Event) {
	switch e.Kind {
	case history.LeaderStart:
		t.leader[e.PID] = e
	case history.LeaderStop:
		if s, ok := t.leader[e.PID]; ok && s.Epoch == e.Epoch {
			delete(t.leader, e.PID)
		}
	case history.PartitionStart:
		t.parts[e.PID] = e
	case history.PartitionStop:
		if s, ok := t.parts[e.PID]; ok && s.Generation == e.Generation {
			delete(t.parts, e.PID)
		}
	}
}

// leaderOf returns the pid among live whose open ledger term has the
// highest epoch, or 0.
func (t *tailer) leaderOf(live map[int]bool) int {
	pid, epoch := 0, int64(0)
	for p, e := range t.leader {
		if live[p] && e.Epoch > epoch {
			pid, epoch = p, e.Epoch
		}
	}
	return pid
}

// fullyAssigned reports whether some generation with count members has
// every index held by an open term of a live process.
func (t *tailer) fullyAssigned(live map[int]bool, count int) bool {
	held := map[int64]map[int]bool{}
	for p, e := range t.parts {
		if !live[p] || e.Count != count {
			continue
		}
		if held[e.Generation] == nil {
			held[e.Generation] = map[int]bool{}
		}
		held[e.Generation][e.Index] = true
	}
	for _, idx := range held {
		if len(idx) == count {
			return true
		}
	}
	return false
}
