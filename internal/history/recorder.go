package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ErrClosed is returned by [Recorder.Record] after [Recorder.Close].
var ErrClosed = errors.New("history: recorder closed")

// Recorder appends events to one history file as JSON Lines. It is safe for
// concurrent use.
//
// Each event is encoded outside any lock, then written with a single write
// call of one complete line under a mutex held only for that call. There is
// no buffering and no fsync: once Record returns, the line is in the
// operating system's page cache, which survives SIGKILL and SIGSTOP of the
// recording process (the faults the suite injects) but not a machine crash.
// A write to a local regular file returns in microseconds, so Record never
// blocks long; do not point a Recorder at a pipe or a network file system.
//
// After a failed write the Recorder stops writing and returns that error
// from every later Record: a partial line may have reached the file, and it
// must stay the file's last line so that readers can drop it.
type Recorder struct {
	process string
	pid     int

	mu     sync.Mutex
	w      io.Writer
	c      io.Closer
	err    error
	closed bool
}

// NewRecorder returns a Recorder that writes to w and stamps each event with
// process (the holder string "node/cluster/instance" of this process) and
// this process's pid. Close does not close w.
func NewRecorder(w io.Writer, process string) *Recorder {
	return &Recorder{process: process, pid: os.Getpid(), w: w}
}

// Create opens path for appending (creating it with mode 0644 if needed)
// and returns a Recorder writing to it. Use one file per process. Close
// closes the file.
func Create(path, process string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: open %q for process %q: %w", path, process, err)
	}
	r := NewRecorder(f, process)
	r.c = f
	return r, nil
}

// Process returns the holder string this Recorder stamps on events.
func (r *Recorder) Process() string { return r.process }

// Record stamps e and appends it as one line. It sets Process and PID to
// this Recorder's, Time to [Now]() when zero, and Holder to Process when
// empty for a kind that is about a holder. It returns an error for an
// unknown kind, after Close, or when a write has failed.
func (r *Recorder) Record(e Event) error {
	if !e.Kind.Known() {
		return fmt.Errorf("history: event kind %q unknown (process %q)", e.Kind, r.process)
	}
	if e.Time == 0 {
		e.Time = Now()
	}
	e.Process, e.PID = r.process, r.pid
	if e.Holder == "" && e.Kind.holderKind() {
		e.Holder = r.process
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("history: encode %s event of process %q: %w", e.Kind, r.process, err)
	}
	line = append(line, '\n')

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.err != nil {
		return r.err
	}
	if _, err := r.w.Write(line); err != nil {
		r.err = fmt.Errorf("history: write %s event of process %q: %w", e.Kind, r.process, err)
		return r.err
	}
	return nil
}

// Notef records a Note event with the formatted text.
func (r *Recorder) Notef(format string, args ...any) error {
	return r.Record(Event{Kind: Note, Text: fmt.Sprintf(format, args...)})
}

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close stops the Recorder and closes the file opened by [Create]. Later
// calls return nil.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.c == nil {
		return nil
	}
	if err := r.c.Close(); err != nil {
		return fmt.Errorf("history: close file of process %q: %w", r.process, err)
	}
	return nil
}
