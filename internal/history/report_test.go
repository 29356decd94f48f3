package history

import (
	"strings"
	"testing"
)

func TestReportOK(t *testing.T) {
	res := Check(History{Events: cleanHistory()}, cleanConfig)
	// The jobs' counts of one dialect, to show each line's and the sum.
	jobs := res
	jobs.Stats.SlotsCompleted, jobs.Stats.GrantTerms = 3, 7
	var b strings.Builder
	if !Report(&b, DialectResult{"postgres", jobs}, DialectResult{"sqlite", res}) {
		t.Fatalf("Report = false for clean results:\n%s", b.String())
	}
	want := `chaos: postgres: OK faults=2 kinds=2 violations=0 slots=3 locks=7 failovers=4 max_failover_ms=14500 p50_failover_ms=1500 p99_failover_ms=14500 bound_ms=16000 by_kind=cut:1,kill:1
chaos: sqlite: OK faults=2 kinds=2 violations=0 slots=0 locks=0 failovers=4 max_failover_ms=14500 p50_failover_ms=1500 p99_failover_ms=14500 bound_ms=16000 by_kind=cut:1,kill:1
chaos: OK faults=4 kinds=2 violations=0 slots=3 locks=7 max_failover_ms=14500 bound_ms=16000
`
	if b.String() != want {
		t.Errorf("Report wrote\n%s\nwant\n%s", b.String(), want)
	}
}

func TestReportFail(t *testing.T) {
	ok := Check(History{Events: cleanHistory()}, cleanConfig)
	bad := Check(History{Events: []Event{
		lstart(0, "a", "L", 1),
		lstart(5, "b", "L", 2),
		lstop(10, "a", "L", 1),
		lstop(20, "b", "L", 2),
	}}, Config{})
	var b strings.Builder
	if Report(&b, DialectResult{"postgres", ok}, DialectResult{"mysql", bad}) {
		t.Fatalf("Report = true with a violation")
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "chaos: mysql: FAIL ") ||
		lines[2] != "chaos: FAIL faults=2 kinds=2 violations=1 slots=0 locks=0 max_failover_ms=14500 bound_ms=16000" {
		t.Fatalf("Report wrote:\n%s", out)
	}
	for _, want := range []string{
		`  mysql lease-overlap: lease "L": holder "a"`,
		`      +0.000000s leader-start holder="a" lease="L" epoch=1 process="a" pid=101`,
		`      +5.000000s leader-start holder="b" lease="L" epoch=2 process="b" pid=102`,
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want) {
			t.Errorf("Report output lacks %q:\n%s", want, out)
		}
	}
}

func TestReportNoDialects(t *testing.T) {
	var b strings.Builder
	if Report(&b) {
		t.Fatalf("Report() = true with no dialects")
	}
	if !strings.HasPrefix(b.String(), "chaos: FAIL faults=0 kinds=0 violations=0 slots=0 locks=0 max_failover_ms=0 bound_ms=0\n") {
		t.Errorf("Report() wrote %q", b.String())
	}
}

func TestFailoverTable(t *testing.T) {
	res := Check(History{Events: cleanHistory()}, cleanConfig)
	var b strings.Builder
	FailoverTable(&b, DialectResult{"postgres", res}, DialectResult{"sqlite", res})
	t.Log("\n" + b.String())
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 12 {
		t.Fatalf("FailoverTable wrote %d lines, want 2 kinds x 2 (leader, assignment) x (2 dialects + all):\n%s", len(lines), b.String())
	}
	for _, want := range []string{
		"chaos: failovers kind=cut of=leader dialect=postgres faults=1 n=1 ",
		"chaos: failovers kind=kill of=assignment dialect=sqlite faults=1 n=1 ",
		"chaos: failovers kind=kill of=leader dialect=all faults=2 n=2 ",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("FailoverTable output lacks %q:\n%s", want, b.String())
		}
	}
	kinds := ByKind(res)
	var got []string
	for _, kf := range kinds {
		got = append(got, string(kf.Kind)+"/"+kf.Of)
		if kf.Max < kf.P99 || kf.P99 < kf.P50 || kf.Max > kf.Bound || kf.N != 1 || kf.Faults != 1 {
			t.Errorf("ByKind %s/%s = %+v: want n=1, faults=1 and p50 <= p99 <= max <= bound", kf.Kind, kf.Of, kf)
		}
	}
	if want := "cut/leader cut/assignment kill/leader kill/assignment"; strings.Join(got, " ") != want {
		t.Errorf("ByKind order = %q, want %q", strings.Join(got, " "), want)
	}
}
