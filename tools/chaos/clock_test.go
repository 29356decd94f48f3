package chaos

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/history"
	procs "github.com/leasehold/leasehold/internal/proc"
)

// TestClockOverlay builds the worker with the clock-skew overlay and shows
// that its wall clock moves by the offset it sets, in both directions.
func TestClockOverlay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker with an overlaid runtime")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, clock, unsupported, err := buildWorker(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !clock {
		t.Skipf("LOUD: clock-skew cannot be injected here: %v", unsupported)
	}
	for _, skew := range []time.Duration{5 * time.Hour, -3*time.Hour - 7*time.Minute} {
		out, err := exec.CommandContext(ctx, bin, "-clock-check", skew.String()).CombinedOutput()
		if err != nil {
			t.Fatalf("worker -clock-check %v: %v\n%s", skew, err, out)
		}
		got, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "observed=")
		if !ok {
			t.Fatalf("worker -clock-check %v printed %q", skew, out)
		}
		observed, err := time.ParseDuration(got)
		if err != nil {
			t.Fatal(err)
		}
		if d := observed - skew; d < -2*time.Second || d > 2*time.Second {
			t.Errorf("worker -clock-check %v: wall clock observed %v off", skew, observed)
		}
	}
}

// TestVerifyClock shows that the runner notices a clock-skew fault that did
// not take: a worker built without the overlay, one whose clock did not
// move, and one that recorded nothing.
func TestVerifyClock(t *testing.T) {
	cases := []struct {
		name  string
		notes []string
		bad   bool
	}{
		{"took", []string{"offset=2h0m0s observed=2h0m0s", "offset=0s observed=0s"}, false},
		{"behind", []string{"offset=-7h12m0s observed=-7h12m1s", "offset=0s observed=0s"}, false},
		{"did not move", []string{"offset=2h0m0s observed=0s", "offset=0s observed=0s"}, true},
		{"not injectable", []string{"not injectable: built without the chaosclock tag and runtime overlay"}, true},
		{"nothing recorded", nil, true},
		{"not set back", []string{"offset=2h0m0s observed=2h0m0s"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rec, err := history.Create(filepath.Join(dir, "w.jsonl"), "w1/chaos/x")
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.notes {
				if err := rec.Notef("%s%s", clockNote, n); err != nil {
					t.Fatal(err)
				}
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			log := &runLog{name: "sqlite", out: &out}
			f := &fleet{runLog: log, tail: newTailer(dir)}
			f.procs = []*proc{{Process: &procs.Process{Pid: os.Getpid()}, node: "w1", skews: 1}}
			v := &verdict{runLog: log, fleet: f}
			v.verifyClock()
			if bad := len(log.problems) > 0; bad != c.bad {
				t.Errorf("problems = %q, want some: %v\n%s", log.problems, c.bad, out.String())
			}
		})
	}
}
