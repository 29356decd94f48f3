package testdb

import (
	"fmt"
	"strings"
	"testing"
)

// skipRecorder is a testing.TB whose skips are recorded instead of
// ending the test.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Helper() {}

func (r *skipRecorder) Skip(args ...any) { r.skipped = fmt.Sprint(args...) }

func (r *skipRecorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }

func (r *skipRecorder) Fatal(args ...any) { r.Errorf("unexpected Fatal: %s", fmt.Sprint(args...)) }

// TestSkipsAreLoud: a test skipped because its dialect cannot be tested
// here, or because it would stop a server the user pointed the tests at,
// says so with the marker tools/testsummary repeats in the summary,
// so that the skip is a line there and not only a count.
func TestSkipsAreLoud(t *testing.T) {
	const marker = "LOUD:"
	t.Setenv(RequireEnv, "")
	r := &skipRecorder{TB: t}
	unavailable(r, "mysql", fmt.Errorf("%w: mariadbd not found", ErrBinariesMissing))
	if !strings.Contains(r.skipped, marker) || !strings.Contains(r.skipped, "mariadbd not found") {
		t.Errorf("a dialect without its server skips with %q, want the marker %q and the reason", r.skipped, marker)
	}

	const pw = "s3cr3tPa55"
	t.Setenv(MySQLDSNEnv, "app:"+pw+"@tcp(db.example:3306)/app")
	r = &skipRecorder{TB: t}
	SkipExternal(r, "mysql")
	if !strings.Contains(r.skipped, marker) || !strings.Contains(r.skipped, MySQLDSNEnv) {
		t.Errorf("a test that cannot stop the user's server skips with %q, want the marker %q and the variable", r.skipped, marker)
	}
	if strings.Contains(r.skipped, pw) {
		t.Errorf("the skip message quotes the password: %q", r.skipped)
	}

	r = &skipRecorder{TB: t}
	t.Setenv(SQLServerDSNEnv, "")
	Target{Name: "sqlserver", Dialect: "sqlserver"}.OpenDSN(r)
	if !strings.Contains(r.skipped, marker) || !strings.Contains(r.skipped, SQLServerDSNEnv) {
		t.Errorf("the sqlserver target without a server skips with %q, want the marker %q and the variable", r.skipped, marker)
	}
}
