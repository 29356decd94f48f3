// Command testsummary closes the output of make test with what gotestsum's
// own summary leaves out. make test runs every module's tests through
// gotestsum, which prints each package as it finishes and, at the end, the
// output of every failed test and build; it also writes the "go test
// -json" events it read to a file (--jsonfile). testsummary reads that
// file:
//
//	testsummary test-report.json
//
// and writes to standard output:
//
//   - each output line containing the marker "LOUD:", once, in order of
//     first appearance; lines that differ only in the "file_test.go:NN: "
//     a test's log puts in front of them count as one;
//   - one line per conformance dialect seen in any test name (a path element
//     equal to postgres, postgres-pair, pgbouncer, mysql, mariadb-pair,
//     galera, sqlite-cgo, sqlite-pure or sqlserver-golden),
//     sorted by name, counting leaf tests: "dialect postgres: 41 passed, 0
//     failed, 0 skipped";
//   - "no tests ran", if no test ran at all;
//   - last, "N passed, N failed, N skipped", counting leaf tests (tests with
//     no subtests) of every package. (gotestsum's "DONE" line counts every
//     test, parents too.)
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
// round as a second go test): it fails if any run failed.
//
// A test that started but never finished (a timeout, a crash, a truncated
// stream) counts as failed, as does a package that started but never reported
// a result. Lines that are not test events are skipped. The exit status is
// 1 if any test (leaf or not) or package failed, any build failed, no test
// ran or the file cannot be read; otherwise 0. gotestsum's exit status says
// the same of the tests; this one is a second guard.
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
var dialects = []string{"galera", "mariadb-pair", "mysql", "pgbouncer", "postgres", "postgres-pair", "sqlite-cgo", "sqlite-pure", "sqlserver-golden"}

// loudMarker marks output lines that are repeated in the summary.
const loudMarker = "LOUD:"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testsummary FILE (the --jsonfile of gotestsum)")
		os.Exit(2)
	}
	os.Exit(summarize(os.Args[1], os.Stdout))
}

// summarize writes the summary of the events in the file at path to w and
// returns the exit status.
func summarize(path string, w io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(w, "testsummary: %v\n", err)
		return 1
	}
	defer f.Close()
	_, code := report(f, w)
	return code
}

// event is one line of "go test -json" output (see "go doc cmd/test2json"),
// plus the build events of Go 1.24 and later ("build-output", "build-fail"),
// which carry ImportPath instead of Package.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
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

// summary is what report found. Its counts, Dialects, Loud and NoTests
// are what the report prints; the rest decide the exit status.
type summary struct {
	counts                          // leaf tests of every package
	Dialects      map[string]counts // leaf tests per dialect seen
	FailedPkgs    []string          // packages that failed, sorted
	FailedTests   []string          // "pkg Test" of every failed test, leaf or not, in order of failure
	BuildFailures []string          // import paths of failed builds, in order
	Loud          []string          // distinct LOUD: lines, in order of first appearance
	NoTests       bool              // no leaf test ran
}

type testKey struct{ pkg, test string }

type pkgState struct {
	result string // "pass", "fail", "skip", or "" while running
	// failedBefore: an earlier run of the package in the same stream
	// failed (make test runs the chaos round as a second go test).
	failedBefore bool
}

// reporter holds the state of one report while events stream in.
type reporter struct {
	w        io.Writer
	tests    map[testKey]string // result: "pass", "fail", "skip", or "" while running
	pkgs     map[string]*pkgState
	loudSeen map[string]bool
	sum      summary
}

// report reads "go test -json" output from r, writes the summary to w and
// returns what it found and the exit status.
func report(r io.Reader, w io.Writer) (summary, int) {
	rp := &reporter{
		w:        w,
		tests:    make(map[testKey]string),
		pkgs:     make(map[string]*pkgState),
		loudSeen: make(map[string]bool),
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
				fmt.Fprintf(w, "testsummary: reading input: %v\n", err)
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
		return // not a test event; gotestsum has shown it
	}
	switch ev.Action {
	case "build-fail":
		rp.sum.BuildFailures = append(rp.sum.BuildFailures, ev.ImportPath)
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
	case "pass", "fail", "skip", "bench":
		result := ev.Action
		if result == "bench" { // a benchmark that logged but did not fail
			result = "pass"
		}
		if ev.Test != "" {
			rp.endTest(ev.Package, ev.Test, result)
			return
		}
		rp.pkg(ev.Package).result = result
		if result == "fail" {
			rp.failUnfinished(ev.Package)
		}
	}
	// Other actions (build-output, pause, cont, and any added later) carry
	// nothing this summary prints.
}

func (rp *reporter) pkg(name string) *pkgState {
	p := rp.pkgs[name]
	if p == nil {
		p = new(pkgState)
		rp.pkgs[name] = p
	}
	return p
}

// test notes that a test started, unless it already has.
func (rp *reporter) test(pkg, name string) {
	k := testKey{pkg, name}
	if _, ok := rp.tests[k]; !ok {
		rp.tests[k] = ""
	}
}

// endTest records a test's result.
func (rp *reporter) endTest(pkg, name, result string) {
	rp.tests[testKey{pkg, name}] = result
	if result == "fail" {
		rp.sum.FailedTests = append(rp.sum.FailedTests, pkg+" "+name)
	}
}

// failUnfinished fails the tests of a failed package that never finished
// (killed by a timeout or a crash).
func (rp *reporter) failUnfinished(pkg string) {
	// Subtests sort after their parents; walk backwards so that a parent
	// fails after its subtests, as when the tests end normally.
	for _, k := range slices.Backward(rp.sortedTestKeys(&pkg)) {
		if rp.tests[k] == "" {
			rp.endTest(k.pkg, k.test, "fail")
		}
	}
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

// finish settles unfinished tests and packages, prints the summary and
// returns the exit status.
func (rp *reporter) finish() int {
	// Packages that never reported a result: the stream was cut short.
	for _, name := range sortedKeys(rp.pkgs) {
		if p := rp.pkgs[name]; p.result == "" {
			p.result = "fail"
			rp.failUnfinished(name)
		}
	}
	// Tests that never finished in a package that did, or whose package
	// never started (only possible in odd streams).
	for _, k := range slices.Backward(rp.sortedTestKeys(nil)) {
		if rp.tests[k] == "" {
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
	for k, result := range rp.tests {
		seen := dialectsOf(k.test)
		for _, d := range seen {
			if _, ok := sum.Dialects[d]; !ok {
				sum.Dialects[d] = counts{}
			}
		}
		if parents[k] {
			continue // not a leaf
		}
		sum.add(result)
		for _, d := range seen {
			c := sum.Dialects[d]
			c.add(result)
			sum.Dialects[d] = c
		}
	}

	code := 0
	if len(sum.FailedTests) > 0 || len(sum.BuildFailures) > 0 {
		code = 1
	}
	for _, name := range sortedKeys(rp.pkgs) {
		if p := rp.pkgs[name]; p.result == "fail" || p.failedBefore {
			sum.FailedPkgs = append(sum.FailedPkgs, name)
			code = 1
		}
	}

	for _, l := range sum.Loud {
		fmt.Fprintln(rp.w, l)
	}
	for _, d := range sortedKeys(sum.Dialects) {
		fmt.Fprintf(rp.w, "dialect %s: %s\n", d, sum.Dialects[d])
	}
	if sum.Passed+sum.Failed+sum.Skipped == 0 {
		sum.NoTests, code = true, 1
		fmt.Fprintln(rp.w, "no tests ran")
	}
	fmt.Fprintln(rp.w, sum.counts)
	return code
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

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
