package chaos

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testWriter passes complete lines to t.Log.
type testWriter struct {
	t   *testing.T
	mu  sync.Mutex
	buf []byte
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		if strings.Contains(line, " faults=") && !strings.HasPrefix(line, "chaos: failovers ") {
			// The report's dialect and summary lines reach make test's
			// summary (tools/testsummary).
			line = "LOUD: " + line
		}
		w.t.Log(line)
		w.buf = w.buf[i+1:]
	}
}

// shortRoundSlack loosens the recovery bounds of the short round.
const shortRoundSlack = 10 * time.Second

// TestChaosShort runs a short round of the suite: each applicable fault
// kind once per dialect (see Kinds: kill, pause and clock-skew on SQLite;
// those, a database restart, a network cut, latency and pool exhaustion on
// PostgreSQL and MariaDB; failover-sync and failover-async on the
// PostgreSQL and MariaDB pairs), on ShortDialects: the Galera cluster is
// left to make chaos. A dialect whose server is not installed is skipped
// loudly, or fails when REQUIRE_DIALECTS names it. CHAOS_DIALECTS and
// CHAOS_KINDS choose the dialects and the kinds, as for make chaos.
//
// failover-async loses commits the old primary acknowledged, so items
// processed there are processed again: the runner reconciles those
// processings with the items table as lost with the old primary before
// rule D counts duplicates (docs/chaos.md).
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos round takes about a minute and a half")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		seed = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	// One dialect at a time, as make chaos runs them: the safety rules
	// hold strictly, recovery only within its bound plus shortRoundSlack
	// (make chaos holds the tight bounds). Two at once took 81 s instead
	// of 152 s on one two-core machine, but on a slower one (2026-11-28)
	// the two dialects' servers and workers starved each other: a
	// PgBouncer round stalled for 30 s after a cut, and a pool came back
	// from a pause 0.8 s past its loose bound.
	o := Options{Faults: 0, Seed: seed, Items: 600, Out: &testWriter{t: t}, Extended: true, Slack: shortRoundSlack, Dialects: ShortDialects, Concurrent: 1}
	if d := os.Getenv("CHAOS_DIALECTS"); d != "" {
		o.Dialects = strings.Split(d, ",")
	}
	kinds, err := ParseKinds(os.Getenv("CHAOS_KINDS"))
	if err != nil {
		t.Fatalf("CHAOS_KINDS: %v", err)
	}
	o.Kinds = kinds // nil: every kind
	ok, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("chaos (seed %d): %v", seed, err)
	}
	if !ok {
		t.Fatalf("chaos (seed %d): violations; see the report above", seed)
	}
}
