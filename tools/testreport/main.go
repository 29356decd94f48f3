// Command testreport turns the output of "go test -json" into a short report
// that a developer or CI log reader can act on:
//
//	go test -json ./... | go run ./testreport    (in tools/)
//
// It reads one JSON test event per line from standard input and writes to
// standard output:
//
//   - as they happen, the output of every failed test (including tests cut
//     short by a timeout or crash), of every failed package that printed
//     something beyond its FAIL line (TestMain, goleak) and of every failed
//     build, each under a ">>> " header;
//   - every input line that is not a test event (a build error printed by an
//     older go command, a "go: downloading" line), unchanged, as it arrives;
//   - at the end, each output line containing the marker "LOUD:", once, in
//     order of first appearance; lines that differ only in the
//     "file_test.go:NN: " a test's log puts in front of them count as one;
//   - one line per conformance dialect seen in any test name (a path element
//     equal to postgres, mysql, sqlite-cgo, sqlite-pure or sqlserver-golden),
//     sorted by name, counting leaf tests: "dialect postgres: 41 passed, 0
//     failed, 0 skipped";
//   - one line per package, sorted by name: "ok   pkg  (12.3s)", "ok   pkg
//     (cached)", "FAIL pkg", or "?    pkg  [no test files]";
//   - "no tests ran", if no test ran at all;
//   - last, "N passed, N failed, N skipped", counting leaf tests (tests with
//     no subtests) of every package.
//
// Loud skips: a test that is skipped because something it needs is missing
// here (a database server, see internal/testdb; a client program; the
// headless browser of the status page's check; a feature of the platform),
// or because it cannot run against the server the user pointed the tests
// at, puts the marker in its skip message, such as "LOUD: testdb: SKIPPING
// MYSQL TEST: …". Each such reason is then a line of the summary, however
// many tests skipped for it, and not only a number in "N skipped". A skip
// the test's own design calls for (SQLite has no release notifications)
// carries no marker and is only counted. Tests also use the marker for
// figures worth reading in a passing run.
//
// A package may run more than once in the stream (make test runs the chaos
// round as a second go test): its times add up, and it fails if any run
// failed.
//
// A test that started but never finished (a timeout, a crash, a truncated
// stream) counts as failed, as does a package that started but never reported
// a result. The exit status is 1 if any test (leaf or not) or package failed,
// any build failed, or no test ran; otherwise 0.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// dialects are the conformance dialect names looked for in test names.
var dialects = []string{"mysql", "postgres", "sqlite-cgo", "sqlite-pure", "sqlserver-golden"}

// loudMarker marks output lines that are repeated in the report.
const loudMarker = "LOUD:"

func main() {
	_, code := report(os.Stdin, os.Stdout)
	os.Exit(code)
}

// event is one line of "go test -json" output (see "go doc cmd/test2json"),
// plus the build events of Go 1.24 and later ("build-output", "build-fail"),
// which carry ImportPath instead of Package.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	Elapsed     float64
	ImportPath  string
	FailedBuild string
}

// counts are leaf-test results.
type counts struct {
	Passed, Failed, Skipped int
}

func (c counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}

func (c *counts) add(result string) {
	switch result {
	case "pass":
		c.Passed++
	case "skip":
		c.Skipped++
	default:
		c.Failed++
	}
}

// packageResult is the outcome of one package.
type packageResult struct {
	Name    string
	Status  string  // "ok", "FAIL" or "?" (no test files)
	Elapsed float64 // seconds
	Cached  bool
}

// summary is what report found. Its fields are what the report prints.
type summary struct {
	counts                          // leaf tests of every package
	Dialects      map[string]counts // leaf tests per dialect seen
	Packages      []packageResult   // sorted by name
	FailedTests   []string          // "pkg Test" of every failed test, leaf or not, in order of failure
	BuildFailures []string          // import paths of failed builds, in order
	Loud          []string          // distinct LOUD: lines, in order of first appearance
	NoTests       bool              // no leaf test ran
}

type testKey struct{ pkg, test string }

type testState struct {
	result string // "pass", "fail", "skip", or "" while running
	output strings.Builder
}

type pkgState struct {
	result string // "pass", "fail", "skip", or "" while running
	// failedBefore: an earlier run of the package in the same stream
	// failed (make test runs the chaos round as a second go test).
	failedBefore bool
	elapsed      float64
	cached       bool
	failedBuild  string
	output       strings.Builder
}

// reporter holds the state of one report while events stream in.
type reporter struct {
	w           io.Writer
	tests       map[testKey]*testState
	pkgs        map[string]*pkgState
	buildOut    map[string]*strings.Builder // by ImportPath
	buildEchoed map[string]bool
	loudSeen    map[string]bool
	sum         summary
}

// report reads "go test -json" output from r, writes the report to w and
// returns what it found and the exit status.
func report(r io.Reader, w io.Writer) (summary, int) {
	rp := &reporter{
		w:           w,
		tests:       make(map[testKey]*testState),
		pkgs:        make(map[string]*pkgState),
		buildOut:    make(map[string]*strings.Builder),
		buildEchoed: make(map[string]bool),
		loudSeen:    make(map[string]bool),
	}
	br := bufio.NewReader(r)
	var readErr error
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			rp.line(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
				fmt.Fprintf(w, "testreport: reading input: %v\n", err)
			}
			break
		}
	}
	code := rp.finish()
	if readErr != nil {
		code = 1
	}
	return rp.sum, code
}

// line handles one input line.
func (rp *reporter) line(line string) {
	trimmed := strings.TrimSpace(line)
	var ev event
	if !strings.HasPrefix(trimmed, "{") || json.Unmarshal([]byte(trimmed), &ev) != nil || ev.Action == "" {
		if !strings.HasSuffix(line, "\n") {
			line += "\n" // the last line of the input
		}
		rp.write(line) // not a test event: pass it through
		return
	}
	switch ev.Action {
	case "build-output":
		b := rp.buildOut[ev.ImportPath]
		if b == nil {
			b = new(strings.Builder)
			rp.buildOut[ev.ImportPath] = b
		}
		b.WriteString(ev.Output)
	case "build-fail":
		rp.sum.BuildFailures = append(rp.sum.BuildFailures, ev.ImportPath)
		rp.echoBuild(ev.ImportPath)
	case "start":
		p := rp.pkg(ev.Package)
		// A package may run again later in the stream: it is running
		// again, and a failure of its earlier run stays a failure.
		p.failedBefore = p.failedBefore || p.result == "fail"
		p.result = ""
	case "run":
		rp.test(ev.Package, ev.Test)
	case "output":
		rp.noteLoud(ev.Output)
		if ev.Test != "" {
			rp.test(ev.Package, ev.Test).output.WriteString(ev.Output)
			return
		}
		p := rp.pkg(ev.Package)
		p.output.WriteString(ev.Output)
		if strings.HasPrefix(ev.Output, "ok") && strings.Contains(ev.Output, "(cached)") {
			p.cached = true
		}
	case "pass", "fail", "skip", "bench":
		result := ev.Action
		if result == "bench" { // a benchmark that logged but did not fail
			result = "pass"
		}
		if ev.Test != "" {
			rp.endTest(ev.Package, ev.Test, result)
			return
		}
		p := rp.pkg(ev.Package)
		p.result, p.elapsed, p.failedBuild = result, p.elapsed+ev.Elapsed, ev.FailedBuild
		if result == "fail" {
			rp.failPackage(ev.Package, p)
		}
	}
	// Other actions (pause, cont, and any added later) carry nothing we report.
}

func (rp *reporter) pkg(name string) *pkgState {
	p := rp.pkgs[name]
	if p == nil {
		p = new(pkgState)
		rp.pkgs[name] = p
	}
	return p
}

func (rp *reporter) test(pkg, name string) *testState {
	k := testKey{pkg, name}
	t := rp.tests[k]
	if t == nil {
		t = new(testState)
		rp.tests[k] = t
	}
	return t
}

// endTest records a test's result and echoes its output if it failed.
func (rp *reporter) endTest(pkg, name, result string) {
	t := rp.test(pkg, name)
	t.result = result
	if result != "fail" {
		return
	}
	rp.sum.FailedTests = append(rp.sum.FailedTests, pkg+" "+name)
	// A parent that failed only because a subtest did has nothing to add to
	// the subtest's output, which was echoed already.
	if onlyFrames(t.output.String()) && rp.hasFailedSubtest(pkg, name) {
		return
	}
	rp.echo(">>> FAIL "+pkg+" "+name, t.output.String())
}

// failPackage echoes why a package failed: its build output, the output of
// tests it never finished, and its own output unless the failures already
// echoed explain it.
func (rp *reporter) failPackage(name string, p *pkgState) {
	if p.failedBuild != "" {
		rp.echoBuild(p.failedBuild)
	}
	explained := p.failedBuild != ""
	// Subtests sort after their parents; walk backwards so that a parent is
	// settled after its subtests, as when the tests end normally.
	for _, k := range slices.Backward(rp.sortedTestKeys(&name)) {
		t := rp.tests[k]
		switch t.result {
		case "":
			rp.endTest(k.pkg, k.test, "fail") // killed by a timeout or a crash
			explained = true
		case "fail":
			explained = true
		}
	}
	if out := p.output.String(); !explained || !onlyPackageFrames(out) {
		rp.echo(">>> FAIL "+name+" (package output)", out)
	}
}

func (rp *reporter) echoBuild(importPath string) {
	if rp.buildEchoed[importPath] {
		return
	}
	rp.buildEchoed[importPath] = true
	out := ""
	if b := rp.buildOut[importPath]; b != nil {
		out = b.String()
	}
	rp.echo(">>> BUILD FAIL "+importPath, out)
}

// noteLoud remembers every line of out that contains the marker, unless
// it says what an earlier one said: lines that differ only in the
// "file_test.go:NN: " a test's log puts in front are the same line.
func (rp *reporter) noteLoud(out string) {
	if !strings.Contains(out, loudMarker) {
		return
	}
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if !strings.Contains(l, loudMarker) {
			continue
		}
		if key := withoutLocation(l); !rp.loudSeen[key] {
			rp.loudSeen[key] = true
			rp.sum.Loud = append(rp.sum.Loud, l)
		}
	}
}

// withoutLocation returns a test's log line without the "name.go:NN: "
// the testing package starts it with, if it has one.
func withoutLocation(l string) string {
	loc, rest, ok := strings.Cut(l, ": ")
	if !ok {
		return l
	}
	file, lineNo, ok := strings.Cut(loc, ".go:")
	if !ok || file == "" || strings.ContainsAny(file, " \t") || lineNo == "" || strings.Trim(lineNo, "0123456789") != "" {
		return l
	}
	return rest
}

// finish settles unfinished tests and packages, prints the closing sections
// and returns the exit status.
func (rp *reporter) finish() int {
	// Packages that never reported a result: the stream was cut short.
	for _, name := range sortedKeys(rp.pkgs) {
		if p := rp.pkgs[name]; p.result == "" {
			p.result = "fail"
			rp.failPackage(name, p)
		}
	}
	// Tests that never finished in a package that did, or whose package
	// never started (only possible in odd streams).
	for _, k := range slices.Backward(rp.sortedTestKeys(nil)) {
		if rp.tests[k].result == "" {
			rp.endTest(k.pkg, k.test, "fail")
		}
	}

	sum := &rp.sum
	sum.Dialects = make(map[string]counts)
	parents := make(map[testKey]bool)
	for k := range rp.tests {
		for i := range len(k.test) {
			if k.test[i] == '/' {
				parents[testKey{k.pkg, k.test[:i]}] = true
			}
		}
	}
	for k, t := range rp.tests {
		seen := dialectsOf(k.test)
		for _, d := range seen {
			if _, ok := sum.Dialects[d]; !ok {
				sum.Dialects[d] = counts{}
			}
		}
		if parents[k] {
			continue // not a leaf
		}
		sum.add(t.result)
		for _, d := range seen {
			c := sum.Dialects[d]
			c.add(t.result)
			sum.Dialects[d] = c
		}
	}

	code := 0
	if len(sum.FailedTests) > 0 || len(sum.BuildFailures) > 0 {
		code = 1
	}
	for _, name := range sortedKeys(rp.pkgs) {
		p := rp.pkgs[name]
		r := packageResult{Name: name, Status: "ok", Elapsed: p.elapsed, Cached: p.cached}
		switch {
		case p.result == "fail" || p.failedBefore:
			r.Status, code = "FAIL", 1
		case p.result == "skip":
			r.Status = "?"
		}
		sum.Packages = append(sum.Packages, r)
	}

	for _, l := range sum.Loud {
		fmt.Fprintln(rp.w, l)
	}
	for _, d := range sortedKeys(sum.Dialects) {
		fmt.Fprintf(rp.w, "dialect %s: %s\n", d, sum.Dialects[d])
	}
	for _, p := range sum.Packages {
		switch {
		case p.Status == "FAIL":
			fmt.Fprintf(rp.w, "FAIL %s\n", p.Name)
		case p.Status == "?":
			fmt.Fprintf(rp.w, "?    %s  [no test files]\n", p.Name)
		case p.Cached:
			fmt.Fprintf(rp.w, "ok   %s  (cached)\n", p.Name)
		default:
			fmt.Fprintf(rp.w, "ok   %s  (%.1fs)\n", p.Name, p.Elapsed)
		}
	}
	if sum.Passed+sum.Failed+sum.Skipped == 0 {
		sum.NoTests, code = true, 1
		fmt.Fprintln(rp.w, "no tests ran")
	}
	fmt.Fprintln(rp.w, sum.counts)
	return code
}

// echo writes a header and then body, ending with a newline.
func (rp *reporter) echo(header, body string) {
	rp.write(header + "\n")
	if body == "" {
		return
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	rp.write(body)
}

// write writes s to the report. A failed write (a closed pipe) is ignored:
// the exit status still says whether the tests passed.
func (rp *reporter) write(s string) { _, _ = io.WriteString(rp.w, s) }

func (rp *reporter) hasFailedSubtest(pkg, name string) bool {
	prefix := name + "/"
	for k, t := range rp.tests {
		if k.pkg == pkg && t.result == "fail" && strings.HasPrefix(k.test, prefix) {
			return true
		}
	}
	return false
}

// sortedTestKeys returns the keys of the tests of *pkg, or of every test when
// pkg is nil, sorted by package and name, so subtests follow their parents.
func (rp *reporter) sortedTestKeys(pkg *string) []testKey {
	var keys []testKey
	for k := range rp.tests {
		if pkg == nil || k.pkg == *pkg {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b testKey) int {
		return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test))
	})
	return keys
}

// dialectsOf returns the dialect names that are path elements of a test name.
func dialectsOf(test string) []string {
	var found []string
	for _, elem := range strings.Split(test, "/") {
		if slices.Contains(dialects, elem) && !slices.Contains(found, elem) {
			found = append(found, elem)
		}
	}
	return found
}

// onlyFrames reports whether a test's output holds nothing but the lines the
// testing package frames every test with.
func onlyFrames(out string) bool {
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		framed := false
		for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- FAIL:", "--- PASS:", "--- SKIP:"} {
			if strings.HasPrefix(l, p) {
				framed = true
				break
			}
		}
		if !framed {
			return false
		}
	}
	return true
}

// onlyPackageFrames reports whether a package's own output holds nothing but
// the PASS/FAIL lines the go command prints for every package.
func onlyPackageFrames(out string) bool {
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if l != "" && l != "PASS" && l != "FAIL" && !strings.HasPrefix(l, "FAIL\t") && !strings.HasPrefix(l, "ok ") && !strings.HasPrefix(l, "ok\t") {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
