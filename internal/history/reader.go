package history

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// History is the merged record of a run: every event of every process,
// sorted by Time.
type History struct {
	Events []Event
	// Truncated names each file whose last line was cut off (its process
	// was killed in the middle of a write) and dropped, with the bytes
	// dropped: "path: 17 bytes".
	Truncated []string
}

// Sort orders the events by Time. The sort is stable: events with equal
// times keep their order (file order, then line order for a read history).
func (h *History) Sort() {
	slices.SortStableFunc(h.Events, func(a, b Event) int { return cmp.Compare(a.Time, b.Time) })
}

// ReadDir reads every file named *.jsonl in dir, in name order, with
// [ReadFiles].
func ReadDir(dir string) (History, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return History{}, fmt.Errorf("history: list %q: %w", dir, err)
	}
	if len(paths) == 0 {
		return History{}, fmt.Errorf("history: no *.jsonl files in %q", dir)
	}
	return ReadFiles(paths...)
}

// ReadFiles reads the history files at paths, one per process, and merges
// them into one History sorted by Time (stable: ties keep the order of
// paths, then of lines). A last line that does not end in a newline and
// does not decode is a write cut off by a kill: it is dropped and the file
// is listed in Truncated. Any other line that does not decode is an error
// naming the file and line.
func ReadFiles(paths ...string) (History, error) {
	var h History
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return History{}, fmt.Errorf("history: %w", err)
		}
		evs, dropped, err := Decode(f, p)
		f.Close()
		if err != nil {
			return History{}, err
		}
		h.Events = append(h.Events, evs...)
		if dropped > 0 {
			h.Truncated = append(h.Truncated, fmt.Sprintf("%s: %d bytes", p, dropped))
		}
	}
	h.Sort()
	return h, nil
}

// Decode reads JSON Lines events from r, setting each event's Source to
// "name:line". It returns the number of bytes of a cut-off last line that
// it dropped (see [ReadFiles]). Empty lines are skipped.
func Decode(r io.Reader, name string) (events []Event, dropped int, err error) {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, 0, fmt.Errorf("history: read %s:%d: %w", name, n, rerr)
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			var e Event
			if jerr := json.Unmarshal(trimmed, &e); jerr != nil {
				if !complete {
					return events, len(line), nil
				}
				return nil, 0, fmt.Errorf("history: %s:%d: %w (line %q)", name, n, jerr, clip(trimmed, 120))
			}
			e.Source = fmt.Sprintf("%s:%d", name, n)
			events = append(events, e)
		}
		if rerr != nil {
			return events, 0, nil
		}
	}
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
