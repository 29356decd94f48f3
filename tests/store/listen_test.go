package store_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/internal/wake"
)

// TestListeningConnectionWaitsForItsProbe: the connection lent to the
// PostgreSQL transport listens to a probe channel of its own, and to the
// tables' channel only once Listening says a probe arrived on it, and then
// no longer to the probe's. Behind a transaction pooler its first LISTEN
// stays on a server connection that other clients are given: were that
// the tables' channel, every release would notify a server connection no
// client is linked to, which PgBouncer 1.18 can die of.
func TestListeningConnectionWaitsForItsProbe(t *testing.T) {
	st := migrated(t, testdb.Target{Name: "postgres", Dialect: "postgres"}.Open(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	channels := func(raw *sql.Conn) []string {
		t.Helper()
		rows, err := raw.QueryContext(ctx, "SELECT pg_listening_channels()")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	tables := st.Tables().Leases
	err := st.Wakeups().Listen(ctx, func(c wake.Conn) error {
		before := channels(c.Raw())
		if len(before) != 1 || !strings.HasPrefix(before[0], "leasehold_probe_") || before[0] == st.Wakeups().Channel() {
			t.Errorf("before a probe arrived the connection listens to %q; want its probe channel alone", before)
		}
		if err := c.Notify(ctx, "|probe|"); err != nil {
			t.Fatalf("Notify: %v", err)
		}
		c.Share(nil)
		if err := c.Listening(ctx); err != nil {
			t.Fatalf("Listening: %v", err)
		}
		if after := channels(c.Raw()); !slices.Equal(after, []string{tables}) {
			t.Errorf("after Listening the connection listens to %q; want the tables' channel %q alone", after, tables)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
}
