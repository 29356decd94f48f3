package workers

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestPGXOnlyByChoice lists the packages that programs on each database
// link (go list -deps): a program on MySQL or SQLite that imports
// coordination and workers does not link pgx, which only the PostgreSQL
// notifications (package pgnotify) import. The program on PostgreSQL that
// chooses them shows that the check sees pgx where it is.
func TestPGXOnlyByChoice(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list the programs' packages: %v", err)
	}
	for _, tc := range []struct {
		program string
		pgx     bool
	}{
		{"mysql", false},
		{"sqlite", false},
		{"postgres", true},
	} {
		t.Run(tc.program, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(goCmd, "list", "-deps", "./testdata/deps/"+tc.program).Output()
			if err != nil {
				msg := ""
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
					msg = string(ee.Stderr)
				}
				t.Fatalf("go list -deps ./testdata/deps/%s: %v\n%s", tc.program, err, msg)
			}
			var pgx []string
			for _, p := range strings.Fields(string(out)) {
				if strings.HasPrefix(p, "github.com/jackc/pgx") {
					pgx = append(pgx, p)
				}
			}
			switch {
			case tc.pgx && len(pgx) == 0:
				t.Fatalf("the program on %s links no package of github.com/jackc/pgx: the check cannot see it", tc.program)
			case !tc.pgx && len(pgx) > 0:
				t.Fatalf("the program on %s links pgx, which only package pgnotify may import: %s", tc.program, strings.Join(pgx, ", "))
			}
		})
	}
}
