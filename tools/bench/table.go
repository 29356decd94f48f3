package bench

import (
	"fmt"
	"io"
	"strings"
)

// Verdict is a figure's result against its target.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
	// Info marks a figure without a target.
	Info Verdict = "-"
)

// Figure is one measured value and its target.
type Figure struct {
	Name    string
	Value   string
	Target  string // "" for none
	Verdict Verdict
}

// Table is the result of one section on one dialect.
type Table struct {
	Section, Dialect, Title string
	Figures                 []Figure
	Notes                   []string
}

// add appends a figure whose verdict is pass or fail.
func (t *Table) add(name, value, target string, ok bool) {
	v := Fail
	if ok {
		v = Pass
	}
	t.Figures = append(t.Figures, Figure{Name: name, Value: value, Target: target, Verdict: v})
}

// info appends a figure without a target.
func (t *Table) info(name, value string) {
	t.Figures = append(t.Figures, Figure{Name: name, Value: value, Verdict: Info})
}

// fail appends a figure that could not be measured, or whose phase did
// not finish within its bound.
func (t *Table) fail(name, why, target string) {
	t.Figures = append(t.Figures, Figure{Name: name, Value: why, Target: target, Verdict: Fail})
}

// note appends a line printed under the table.
func (t *Table) note(format string, args ...any) {
	t.Notes = append(t.Notes, fmt.Sprintf(format, args...))
}

// Failed returns the names of the failed figures.
func (t *Table) Failed() []string {
	var out []string
	for _, f := range t.Figures {
		if f.Verdict == Fail {
			out = append(out, f.Name)
		}
	}
	return out
}

// Print writes the table.
func (t *Table) Print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s / %s: %s\n", t.Section, t.Dialect, t.Title)
	wName, wValue, wTarget := len("figure"), len("value"), len("target")
	for _, f := range t.Figures {
		wName = max(wName, len(f.Name))
		wValue = max(wValue, len(f.Value))
		wTarget = max(wTarget, len(f.Target))
	}
	line := func(a, b, c, d string) {
		fmt.Fprintf(w, "  %-*s  %-*s  %-*s  %s\n", wName, a, wValue, b, wTarget, c, d)
	}
	line("figure", "value", "target", "result")
	line(strings.Repeat("-", wName), strings.Repeat("-", wValue), strings.Repeat("-", wTarget), "------")
	for _, f := range t.Figures {
		target := f.Target
		if target == "" {
			target = "-"
		}
		line(f.Name, f.Value, target, string(f.Verdict))
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}
