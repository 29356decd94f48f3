package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A run without faults logs nothing at WARN or above, and the demo's one
// fault, the SIGKILL of the ledger leader, explains no such line either:
// the victim writes nothing after it, and on the survivors the takeover,
// the rebalance and a batch fenced off by the new generation are logged
// at INFO. So every WARN or ERROR line of any process fails the demo,
// unless explainedLines lists it.

// explainedLine is a WARN or ERROR line the kill explains: one a survivor
// logs after the kill with this message.
type explainedLine struct {
	message string
	reason  string // why the kill causes it
}

// explainedLines is empty: see above. An entry must say why the kill
// causes the line; it matches only a survivor's lines logged after it.
var explainedLines []explainedLine

// loudLevels are the levels of zap's console encoder at WARN and above.
var loudLevels = []string{"WARN", "ERROR", "DPANIC", "PANIC", "FATAL"}

// maxLoudShown bounds the lines a failed check prints.
const maxLoudShown = 10

// checkLogs fails when the log of the seeding run or of a copy holds a
// line at WARN or above that explainedLines does not explain.
func (d *demo) checkLogs() error {
	var loud []string
	check := func(path string, survivor bool) error {
		lines, err := loudLines(path, func(at time.Time, line string) bool {
			if !survivor {
				return false
			}
			e, ok := d.explained(at, line)
			if ok {
				d.printf("explained by the kill (%s): %s", e.reason, line)
			}
			return ok
		})
		for _, l := range lines {
			loud = append(loud, filepath.Base(path)+": "+l)
		}
		return err
	}
	if err := check(filepath.Join(d.fleet.dir, "seed.log"), false); err != nil {
		return err
	}
	for _, p := range d.fleet.procs {
		if err := check(p.logPath, !p.killed); err != nil {
			return err
		}
	}
	if len(loud) == 0 {
		d.printf("checked: no process logged a line at WARN or above")
		return nil
	}
	return fmt.Errorf("%d log lines at WARN or above that no injected fault explains:\n%s",
		len(loud), strings.Join(loud[:min(len(loud), maxLoudShown)], "\n"))
}

// explained returns the entry of explainedLines that explains a
// survivor's line logged at at, if one does.
func (d *demo) explained(at time.Time, line string) (explainedLine, bool) {
	if d.kill.victim == nil || at.Before(d.kill.at) {
		return explainedLine{}, false
	}
	for _, e := range explainedLines {
		if strings.Contains(line, "\t"+e.message+"\t") {
			return e, true
		}
	}
	return explainedLine{}, false
}

// loudLines returns the lines of the console log at path at WARN or above
// that explained does not accept. A line is "time<TAB>LEVEL<TAB>...", its
// time of day one of the demo's day.
func loudLines(path string, explained func(at time.Time, line string) bool) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		at, level, _ := strings.Cut(sc.Text(), "\t")
		level, _, _ = strings.Cut(level, "\t")
		if !slices.Contains(loudLevels, level) || explained(logTime(at), sc.Text()) {
			continue
		}
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

// logTime reads the console encoder's time of day as today's, local; the
// zero time when it does not parse.
func logTime(s string) time.Time {
	t, err := time.ParseInLocation("15:04:05.000", s, time.Local)
	if err != nil {
		return time.Time{}
	}
	now := time.Now()
	return time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
}
