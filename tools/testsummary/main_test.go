package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// stream is a hand-written "go test -json" stream: a build failure, a non-JSON
// line, passing, failing and skipped tests nested two levels deep under
// conformance dialects, a repeated LOUD: line, a cached package and a package
// without test files.
const stream = `{"ImportPath":"example.com/m/broken [example.com/m/broken.test]","Action":"build-output","Output":"# example.com/m/broken [example.com/m/broken.test]\n"}
{"ImportPath":"example.com/m/broken [example.com/m/broken.test]","Action":"build-output","Output":"broken/b.go:2:23: cannot use \"s\" as int value\n"}
{"ImportPath":"example.com/m/broken [example.com/m/broken.test]","Action":"build-fail"}
go: downloading example.com/dep v1.0.0
{"Action":"start","Package":"example.com/m/conf"}
{"Action":"run","Package":"example.com/m/conf","Test":"TestPlain"}
{"Action":"output","Package":"example.com/m/conf","Test":"TestPlain","Output":"=== RUN   TestPlain\n"}
{"Action":"pass","Package":"example.com/m/conf","Test":"TestPlain","Elapsed":0}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance"}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance/postgres"}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance/postgres/AcquireRelease"}
{"Action":"pass","Package":"example.com/m/conf","Test":"TestConformance/postgres/AcquireRelease","Elapsed":0.1}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance/postgres/Renew"}
{"Action":"pass","Package":"example.com/m/conf","Test":"TestConformance/postgres/Renew","Elapsed":0.1}
{"Action":"pass","Package":"example.com/m/conf","Test":"TestConformance/postgres","Elapsed":0.2}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo"}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo/AcquireRelease"}
{"Action":"pass","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo/AcquireRelease","Elapsed":0}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo/Renew"}
{"Action":"output","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo/Renew","Output":"=== RUN   TestConformance/sqlite-cgo/Renew\n"}
{"Action":"output","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo/Renew","Output":"    conf_test.go:42: renew: epoch 3, want 4\n"}
{"Action":"output","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo/Renew","Output":"--- FAIL: TestConformance/sqlite-cgo/Renew (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo/Renew","Elapsed":0}
{"Action":"output","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo","Output":"--- FAIL: TestConformance/sqlite-cgo (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/conf","Test":"TestConformance/sqlite-cgo","Elapsed":0}
{"Action":"run","Package":"example.com/m/conf","Test":"TestConformance/mysql"}
{"Action":"output","Package":"example.com/m/conf","Test":"TestConformance/mysql","Output":"    conf_test.go:20: LOUD: dialect mysql skipped: mariadbd not found\n"}
{"Action":"skip","Package":"example.com/m/conf","Test":"TestConformance/mysql","Elapsed":0}
{"Action":"run","Package":"example.com/m/conf","Test":"TestWorkers"}
{"Action":"run","Package":"example.com/m/conf","Test":"TestWorkers/mysql"}
{"Action":"output","Package":"example.com/m/conf","Test":"TestWorkers/mysql","Output":"    conf_test.go:20: LOUD: dialect mysql skipped: mariadbd not found\n"}
{"Action":"skip","Package":"example.com/m/conf","Test":"TestWorkers/mysql","Elapsed":0}
{"Action":"pass","Package":"example.com/m/conf","Test":"TestWorkers","Elapsed":0}
{"Action":"output","Package":"example.com/m/conf","Test":"TestConformance","Output":"--- FAIL: TestConformance (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/conf","Test":"TestConformance","Elapsed":0.3}
{"Action":"output","Package":"example.com/m/conf","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/m/conf","Output":"FAIL\texample.com/m/conf\t0.312s\n"}
{"Action":"fail","Package":"example.com/m/conf","Elapsed":0.312}
{"Action":"start","Package":"example.com/m/broken"}
{"Action":"output","Package":"example.com/m/broken","Output":"FAIL\texample.com/m/broken [build failed]\n"}
{"Action":"fail","Package":"example.com/m/broken","Elapsed":0,"FailedBuild":"example.com/m/broken [example.com/m/broken.test]"}
{"Action":"start","Package":"example.com/m/cached"}
{"Action":"run","Package":"example.com/m/cached","Test":"TestC"}
{"Action":"pass","Package":"example.com/m/cached","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"example.com/m/cached","Output":"ok  \texample.com/m/cached\t(cached)\n"}
{"Action":"pass","Package":"example.com/m/cached","Elapsed":0}
{"Action":"start","Package":"example.com/m/empty"}
{"Action":"output","Package":"example.com/m/empty","Output":"?   \texample.com/m/empty\t[no test files]\n"}
{"Action":"skip","Package":"example.com/m/empty","Elapsed":0}
`

func TestReportStream(t *testing.T) {
	t.Parallel()

	var out strings.Builder
	sum, code := report(strings.NewReader(stream), &out)
	got := out.String()

	if code != 1 {
		t.Fatalf("report() exit status = %d, want 1; output:\n%s", code, got)
	}
	// Leaves: TestPlain, 2 postgres, 2 sqlite-cgo, 2 mysql, TestC.
	if want := (counts{Passed: 5, Failed: 1, Skipped: 2}); sum.counts != want {
		t.Fatalf("report() counts = %+v, want %+v", sum.counts, want)
	}
	wantDialects := map[string]counts{
		"mysql":      {Skipped: 2},
		"postgres":   {Passed: 2},
		"sqlite-cgo": {Passed: 1, Failed: 1},
	}
	if !maps.Equal(sum.Dialects, wantDialects) {
		t.Fatalf("report() Dialects = %+v, want %+v", sum.Dialects, wantDialects)
	}
	wantFailed := []string{
		"example.com/m/conf TestConformance/sqlite-cgo/Renew",
		"example.com/m/conf TestConformance/sqlite-cgo",
		"example.com/m/conf TestConformance",
	}
	if !slices.Equal(sum.FailedTests, wantFailed) {
		t.Fatalf("report() FailedTests = %q, want %q", sum.FailedTests, wantFailed)
	}
	if want := []string{"example.com/m/broken [example.com/m/broken.test]"}; !slices.Equal(sum.BuildFailures, want) {
		t.Fatalf("report() BuildFailures = %q, want %q", sum.BuildFailures, want)
	}
	if want := []string{"conf_test.go:20: LOUD: dialect mysql skipped: mariadbd not found"}; !slices.Equal(sum.Loud, want) {
		t.Fatalf("report() Loud = %q, want %q", sum.Loud, want)
	}
	if want := []string{"example.com/m/broken", "example.com/m/conf"}; !slices.Equal(sum.FailedPkgs, want) {
		t.Fatalf("report() FailedPkgs = %q, want %q", sum.FailedPkgs, want)
	}

	if want := "dialect mysql: 0 passed, 0 failed, 2 skipped\ndialect postgres: 2 passed, 0 failed, 0 skipped\ndialect sqlite-cgo: 1 passed, 1 failed, 0 skipped\n"; !strings.Contains(got, want) {
		t.Fatalf("report() output does not contain %q; output:\n%s", want, got)
	}
	if n := strings.Count(got, "LOUD:"); n != 1 {
		t.Fatalf("report() output has %d LOUD: lines, want 1; output:\n%s", n, got)
	}
	// gotestsum shows the output of tests and builds, and the lines that
	// are not events: the summary repeats none of it.
	for _, notWant := range []string{"cannot use", "go: downloading", "renew: epoch 3", "=== RUN", "FAIL"} {
		if strings.Contains(got, notWant) {
			t.Fatalf("report() output contains %q; output:\n%s", notWant, got)
		}
	}
	if !strings.HasSuffix(got, "\n5 passed, 1 failed, 2 skipped\n") {
		t.Fatalf("report() output does not end with the closing line; output:\n%s", got)
	}
}

func TestReportOutcomes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		input    string
		wantCode int
		want     counts
		wantOut  []string // substrings of the output
		wantNot  []string // strings the output must not contain
		wantLast string   // the closing line
		// wantFailed and wantPkgs: the failed tests ("pkg Test") and
		// packages the summary found.
		wantFailed, wantPkgs []string
	}{
		{
			name: "AllPass",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestB/sub"}
{"Action":"skip","Package":"p","Test":"TestB/sub","Elapsed":0}
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":12.34}
`,
			wantCode: 0,
			want:     counts{Passed: 1, Skipped: 1},
			wantLast: "1 passed, 0 failed, 1 skipped",
		},
		{
			name:     "EmptyInput",
			input:    "",
			wantCode: 1,
			wantOut:  []string{"no tests ran\n"},
			wantLast: "0 passed, 0 failed, 0 skipped",
		},
		{
			name:     "OnlyBuildFailure",
			input:    "{\"ImportPath\":\"p\",\"Action\":\"build-output\",\"Output\":\"p/x.go:1: syntax error\\n\"}\n{\"ImportPath\":\"p\",\"Action\":\"build-fail\"}\n{\"Action\":\"start\",\"Package\":\"p\"}\n{\"Action\":\"fail\",\"Package\":\"p\",\"Elapsed\":0,\"FailedBuild\":\"p\"}\n",
			wantCode: 1,
			wantOut:  []string{"no tests ran\n"},
			wantNot:  []string{"syntax error"},
			wantPkgs: []string{"p"},
			wantLast: "0 passed, 0 failed, 0 skipped",
		},
		{
			name:     "NonJSONBuildErrors",
			input:    "# p\np/x.go:1: syntax error\nFAIL\tp [build failed]\n",
			wantCode: 1,
			wantOut:  []string{"no tests ran\n"},
			wantNot:  []string{"syntax error"},
			wantLast: "0 passed, 0 failed, 0 skipped",
		},
		{
			name:     "NonJSONLastLineWithoutNewline",
			input:    "exit status 2",
			wantCode: 1,
			wantOut:  []string{"no tests ran\n"},
			wantNot:  []string{"exit status 2"},
			wantLast: "0 passed, 0 failed, 0 skipped",
		},
		{
			name: "PackageRunTwiceFailsFirst",
			input: `{"Action":"start","Package":"p"}
{"Action":"fail","Package":"p","Elapsed":1}
{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":2}
`,
			wantCode: 1,
			want:     counts{Passed: 1},
			wantPkgs: []string{"p"},
			wantLast: "1 passed, 0 failed, 0 skipped",
		},
		{
			name: "PackageRunTwiceSecondCutShort",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":1}
{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestB"}
`,
			wantCode:   1,
			want:       counts{Passed: 1, Failed: 1},
			wantFailed: []string{"p TestB"},
			wantPkgs:   []string{"p"},
			wantLast:   "1 passed, 1 failed, 0 skipped",
		},
		{
			name: "PackageRunTwicePasses",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":1.5}
{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":2}
`,
			wantCode: 0,
			want:     counts{Passed: 2},
			wantLast: "2 passed, 0 failed, 0 skipped",
		},
		{
			name: "UnfinishedTestInPassingPackage",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0}
`,
			wantCode:   1,
			want:       counts{Failed: 1},
			wantFailed: []string{"p TestA"},
			wantLast:   "0 passed, 1 failed, 0 skipped",
		},
		{
			name: "PackageFailsAfterTestsPass",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"goleak: Errors on successful test run: found unexpected goroutines\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`,
			wantCode: 1,
			want:     counts{Passed: 1},
			wantPkgs: []string{"p"},
			wantLast: "1 passed, 0 failed, 0 skipped",
		},
		{
			name: "TimeoutLeavesTestsUnfinished",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"run","Package":"p","Test":"TestHang/inner"}
{"Action":"output","Package":"p","Test":"TestHang/inner","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
{"Action":"fail","Package":"p","Elapsed":1.0}
`,
			wantCode:   1,
			want:       counts{Failed: 1},
			wantFailed: []string{"p TestHang/inner", "p TestHang"},
			wantPkgs:   []string{"p"},
			wantLast:   "0 passed, 1 failed, 0 skipped",
		},
		{
			name: "TruncatedStream",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestB"}
`,
			wantCode:   1,
			want:       counts{Passed: 1, Failed: 1},
			wantFailed: []string{"p TestB"},
			wantPkgs:   []string{"p"},
			wantLast:   "1 passed, 1 failed, 0 skipped",
		},
		{
			name: "ParentFailsAfterSubtestsPass",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestA/sub"}
{"Action":"pass","Package":"p","Test":"TestA/sub","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: cleanup failed\n"}
{"Action":"fail","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"fail","Package":"p","Elapsed":0}
`,
			wantCode:   1,
			want:       counts{Passed: 1},
			wantFailed: []string{"p TestA"},
			wantPkgs:   []string{"p"},
			wantLast:   "1 passed, 0 failed, 0 skipped",
		},
		{
			name: "SkipOnlyCountsAsRun",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestX/sqlserver-golden"}
{"Action":"output","Package":"p","Test":"TestX/sqlserver-golden","Output":"LOUD: golden files missing\n"}
{"Action":"output","Package":"p","Test":"TestX/sqlserver-golden","Output":"LOUD: golden files missing\n"}
{"Action":"skip","Package":"p","Test":"TestX/sqlserver-golden","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":0}
`,
			wantCode: 0,
			want:     counts{Skipped: 1},
			wantOut:  []string{"LOUD: golden files missing\ndialect sqlserver-golden: 0 passed, 0 failed, 1 skipped\n"},
			wantLast: "0 passed, 0 failed, 1 skipped",
		},
		{
			name:     "DialectNameMustBeAWholeElement",
			input:    "{\"Action\":\"start\",\"Package\":\"p\"}\n{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestX/postgresql\"}\n{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"TestX/postgresql\"}\n{\"Action\":\"pass\",\"Package\":\"p\"}",
			wantCode: 0,
			want:     counts{Passed: 1},
			wantNot:  []string{"dialect "},
			wantLast: "1 passed, 0 failed, 0 skipped",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var out strings.Builder
			sum, code := report(strings.NewReader(tt.input), &out)
			got := out.String()
			if code != tt.wantCode {
				t.Fatalf("report() exit status = %d, want %d; output:\n%s", code, tt.wantCode, got)
			}
			if sum.counts != tt.want {
				t.Fatalf("report() counts = %+v, want %+v; output:\n%s", sum.counts, tt.want, got)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(got, w) {
					t.Fatalf("report() output does not contain %q; output:\n%s", w, got)
				}
			}
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if last := lines[len(lines)-1]; last != tt.wantLast {
				t.Fatalf("report() last line = %q, want %q; output:\n%s", last, tt.wantLast, got)
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Fatalf("report() output contains %q; output:\n%s", w, got)
				}
			}
			if !slices.Equal(sum.FailedTests, tt.wantFailed) {
				t.Fatalf("report() FailedTests = %q, want %q", sum.FailedTests, tt.wantFailed)
			}
			if !slices.Equal(sum.FailedPkgs, tt.wantPkgs) {
				t.Fatalf("report() FailedPkgs = %q, want %q", sum.FailedPkgs, tt.wantPkgs)
			}
		})
	}
}

// TestReportLoudSkips: a check skipped because something it needs is
// missing says so with the marker in its skip message, and the summary
// shows each such reason once, on a line of its own, however many tests
// and call sites skipped for it. A skip for a reason of the test's own
// design, without the marker, is only counted.
func TestReportLoudSkips(t *testing.T) {
	t.Parallel()

	const (
		mysql   = "LOUD: testdb: SKIPPING MYSQL TEST: database server binaries are not installed: mariadbd not found (set REQUIRE_DIALECTS=mysql to make this a failure)"
		browser = "LOUD: status: no chromium on PATH (looked for chromium, chromium-browser); browser check SKIPPED"
	)
	input := `{"Action":"start","Package":"example.com/m/coordination"}
{"Action":"run","Package":"example.com/m/coordination","Test":"TestConformance"}
{"Action":"run","Package":"example.com/m/coordination","Test":"TestConformance/mysql"}
{"Action":"output","Package":"example.com/m/coordination","Test":"TestConformance/mysql","Output":"=== RUN   TestConformance/mysql\n"}
{"Action":"output","Package":"example.com/m/coordination","Test":"TestConformance/mysql","Output":"    conformance_test.go:41: ` + mysql + `\n"}
{"Action":"output","Package":"example.com/m/coordination","Test":"TestConformance/mysql","Output":"--- SKIP: TestConformance/mysql (0.00s)\n"}
{"Action":"skip","Package":"example.com/m/coordination","Test":"TestConformance/mysql","Elapsed":0}
{"Action":"run","Package":"example.com/m/coordination","Test":"TestConformance/sqlite-pure"}
{"Action":"output","Package":"example.com/m/coordination","Test":"TestConformance/sqlite-pure","Output":"    waiting_test.go:24: SQLite: a writing transaction excludes every other writer\n"}
{"Action":"skip","Package":"example.com/m/coordination","Test":"TestConformance/sqlite-pure","Elapsed":0}
{"Action":"pass","Package":"example.com/m/coordination","Test":"TestConformance","Elapsed":0}
{"Action":"run","Package":"example.com/m/coordination","Test":"TestPool"}
{"Action":"run","Package":"example.com/m/coordination","Test":"TestPool/mysql"}
{"Action":"output","Package":"example.com/m/coordination","Test":"TestPool/mysql","Output":"    pool_test.go:87: ` + mysql + `\n"}
{"Action":"skip","Package":"example.com/m/coordination","Test":"TestPool/mysql","Elapsed":0}
{"Action":"pass","Package":"example.com/m/coordination","Test":"TestPool","Elapsed":0}
{"Action":"pass","Package":"example.com/m/coordination","Elapsed":1}
{"Action":"start","Package":"example.com/m/status"}
{"Action":"run","Package":"example.com/m/status","Test":"TestPageInBrowser"}
{"Action":"output","Package":"example.com/m/status","Test":"TestPageInBrowser","Output":"    browser_test.go:31: ` + browser + `\n"}
{"Action":"output","Package":"example.com/m/status","Test":"TestPageInBrowser","Output":"--- SKIP: TestPageInBrowser (0.00s)\n"}
{"Action":"skip","Package":"example.com/m/status","Test":"TestPageInBrowser","Elapsed":0}
{"Action":"run","Package":"example.com/m/status","Test":"TestPage"}
{"Action":"pass","Package":"example.com/m/status","Test":"TestPage","Elapsed":0}
{"Action":"pass","Package":"example.com/m/status","Elapsed":1}
`
	var out strings.Builder
	sum, code := report(strings.NewReader(input), &out)
	got := out.String()
	if code != 0 {
		t.Fatalf("report() exit status = %d, want 0; output:\n%s", code, got)
	}
	if want := (counts{Passed: 1, Skipped: 4}); sum.counts != want {
		t.Fatalf("report() counts = %+v, want %+v; output:\n%s", sum.counts, want, got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	summaryStart := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "dialect ") })
	if summaryStart < 0 {
		t.Fatalf("no dialect line in the output:\n%s", got)
	}
	for _, reason := range []string{mysql, browser} {
		var at []int
		for i, l := range lines {
			if strings.Contains(l, reason) {
				at = append(at, i)
			}
		}
		if len(at) != 1 {
			t.Errorf("%d lines carry %q, want 1; output:\n%s", len(at), reason, got)
			continue
		}
		// On a line of its own: nothing but the reason and the place
		// that skipped.
		if l := lines[at[0]]; !strings.HasSuffix(l, reason) || strings.Count(l, "LOUD:") != 1 {
			t.Errorf("the line %q holds more than the reason %q", l, reason)
		}
		if at[0] >= summaryStart {
			t.Errorf("the reason %q is not in the summary before the dialect lines; output:\n%s", reason, got)
		}
	}
	if strings.Contains(got, "excludes every other writer") {
		t.Errorf("a skip without the marker is in the report; output:\n%s", got)
	}
}

// TestPgBouncerIsATarget: the PgBouncer target (internal/testdb's
// PgBouncerTarget) is a line of its own, apart from postgres.
func TestPgBouncerIsATarget(t *testing.T) {
	t.Parallel()
	const in = `{"Action":"run","Package":"p","Test":"TestConformance/pgbouncer/Fence"}
{"Action":"pass","Package":"p","Test":"TestConformance/pgbouncer/Fence","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestConformance/postgres/Fence"}
{"Action":"pass","Package":"p","Test":"TestConformance/postgres/Fence","Elapsed":0}
{"Action":"pass","Package":"p","Test":"TestConformance/pgbouncer","Elapsed":0}
{"Action":"pass","Package":"p","Test":"TestConformance/postgres","Elapsed":0}
{"Action":"pass","Package":"p","Test":"TestConformance","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":0}
`
	var out strings.Builder
	sum, _ := report(strings.NewReader(in), &out)
	want := map[string]counts{"pgbouncer": {Passed: 1}, "postgres": {Passed: 1}}
	if !maps.Equal(sum.Dialects, want) {
		t.Fatalf("report() Dialects = %+v, want %+v", sum.Dialects, want)
	}
	if !strings.Contains(out.String(), "dialect pgbouncer: 1 passed, 0 failed, 0 skipped\n") {
		t.Fatalf("report() output has no pgbouncer line:\n%s", out.String())
	}
}

// TestGaleraIsATarget: the Galera cluster target (internal/testdb's
// GaleraTarget) is a line of its own, apart from mysql.
func TestGaleraIsATarget(t *testing.T) {
	t.Parallel()
	const in = `{"Action":"run","Package":"p","Test":"TestConformance/galera/Fence"}
{"Action":"pass","Package":"p","Test":"TestConformance/galera/Fence","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestConformance/mysql/Fence"}
{"Action":"fail","Package":"p","Test":"TestConformance/mysql/Fence","Elapsed":0}
{"Action":"pass","Package":"p","Test":"TestConformance/galera","Elapsed":0}
{"Action":"fail","Package":"p","Test":"TestConformance/mysql","Elapsed":0}
{"Action":"fail","Package":"p","Test":"TestConformance","Elapsed":0}
{"Action":"fail","Package":"p","Elapsed":0}
`
	var out strings.Builder
	sum, _ := report(strings.NewReader(in), &out)
	want := map[string]counts{"galera": {Passed: 1}, "mysql": {Failed: 1}}
	if !maps.Equal(sum.Dialects, want) {
		t.Fatalf("report() Dialects = %+v, want %+v", sum.Dialects, want)
	}
	if !strings.Contains(out.String(), "dialect galera: 1 passed, 0 failed, 0 skipped\n") {
		t.Fatalf("report() output has no galera line:\n%s", out.String())
	}
}
