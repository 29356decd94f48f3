package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoudLines: the lines at WARN and above are found, with or without
// a logger name, and those explained are left out.
func TestLoudLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	log := strings.Join([]string{
		"16:21:32.665\tINFO\tstarting\t{\"node\": \"a\"}",
		"16:21:32.820\tWARN\tleasehold\tpool step failed; retrying\t{\"node\": \"a\"}",
		"16:21:32.828\tWARN\twriting the timeline failed; events are logged only\t{}",
		"16:21:32.828\tERROR\tleasehold.workers\tworker failed\t{}",
		"16:21:33.000\tDEBUG\tleasehold\tWARN in a message\t{}",
		"not a log line",
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := loudLines(path, func(time.Time, string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 {
		t.Fatalf("found %d loud lines, want 3: %q", len(lines), lines)
	}
	var sawAt time.Time
	lines, err = loudLines(path, func(at time.Time, line string) bool {
		if strings.Contains(line, "\tworker failed\t") {
			sawAt = at
			return true
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Errorf("found %d loud lines with one explained, want 2: %q", len(lines), lines)
	}
	if h, m, s := sawAt.Clock(); h != 16 || m != 21 || s != 32 || sawAt.Nanosecond() != 828e6 {
		t.Errorf("the explained line's time reads as %v, want 16:21:32.828", sawAt)
	}
}
