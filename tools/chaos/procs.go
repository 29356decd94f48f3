package chaos

import (
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
	procs "github.com/leasehold/leasehold/internal/proc"
	"github.com/leasehold/leasehold/tools/chaos/faultproxy"
)

// proc is one running worker process.
type proc struct {
	*procs.Process
	node    string
	logPath string
	killed  bool // SIGKILLed on purpose
	paused  bool // SIGSTOPped and not yet resumed
	stopped bool // sent SIGTERM at the end
	// proxy is the worker's own fault proxy to the database (extended
	// run, not SQLite), or nil.
	proxy *faultproxy.Proxy
	// skew is how far off SIGUSR2 sets the worker's wall clock, and
	// skews how many clock-skew faults it received.
	skew  time.Duration
	skews int
	// galeraNode is the Galera node the worker talks to, or -1.
	galeraNode int
}

// buildWorker compiles ./chaos/worker of the tools module into dir, with
// the runtime overlay of the clock-skew fault where the platform has one.
// clock reports whether it has; when not, unsupported says why.
func buildWorker(ctx context.Context, dir string) (bin string, clock bool, unsupported error, err error) {
	flags, err := clockOverlay(ctx, dir)
	switch {
	case errors.Is(err, errClockUnsupported):
		unsupported, flags = err, nil
	case err != nil:
		return "", false, nil, fmt.Errorf("the clock-skew overlay: %w", err)
	}
	bin, err = procs.Build(ctx, "./chaos/worker", dir, "chaos-worker", flags...)
	return bin, flags != nil, unsupported, err
}

// startProc starts one worker process with its own process group, which
// dies with this process (Pdeathsig; see internal/proc for why it must be
// started through procs.Start).
func startProc(bin, node, logPath string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append(args, "-node", node)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	child, err := procs.Start(cmd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start worker %s: %w", node, err)
	}
	go func() {
		<-child.Done()
		f.Close()
	}()
	return &proc{Process: child, node: node, logPath: logPath}, nil
}

// tailer follows the history files of a directory as they grow and keeps
// the open terms of every process.
type tailer struct {
	dir     string
	offsets map[string]int64
	leader  map[int]history.Event // pid -> open LeaderStart
	parts   map[int]history.Event // pid -> open PartitionStart
	clock   map[int][]string      // pid -> texts of its clock-skew notes
	jobRuns []history.Event       // GrantStart events of the scheduled job's runs
}

func newTailer(dir string) *tailer {
	return &tailer{dir: dir, offsets: map[string]int64{}, leader: map[int]history.Event{}, parts: map[int]history.Event{}, clock: map[int][]string{}}
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
	case history.GrantStart:
		if e.Lease == ScheduleLease {
			t.jobRuns = append(t.jobRuns, e)
		}
	case history.Note:
		if text, ok := strings.CutPrefix(e.Text, clockNote); ok {
			t.clock[e.PID] = append(t.clock[e.PID], text)
		}
	}
}

// jobSettled returns the time of the first run, at or after the history
// time after, of the scheduled job's latest term (the term of its latest
// run so far), and whether there is one: where rule S2 starts requiring
// slots when after is the last fault's kill or heal.
func (t *tailer) jobSettled(after int64) (int64, bool) {
	var last *history.Event
	for i := range t.jobRuns {
		if e := &t.jobRuns[i]; last == nil || e.Time > last.Time {
			last = e
		}
	}
	if last == nil {
		return 0, false
	}
	first, ok := int64(0), false
	for _, e := range t.jobRuns {
		if e.Time >= after && e.Epoch == last.Epoch && e.Holder == last.Holder && (!ok || e.Time < first) {
			first, ok = e.Time, true
		}
	}
	return first, ok
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
