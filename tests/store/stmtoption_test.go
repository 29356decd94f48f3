package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestPgxExecMode: the statement option on pgx is pgx's exec mode "exec"
// under the exec modes that keep statements on the server between round
// trips (the default among them), and none under the modes that do not,
// which the caller's statements then keep; a driver connection that is
// not pgx's gets none.
func TestPgxExecMode(t *testing.T) {
	driver, dsn := testdb.Target{Name: "postgres", Dialect: "postgres"}.OpenDSN(t)
	if driver != store.Postgres {
		t.Fatalf("driver %q", driver)
	}
	for _, c := range []struct{ setting, want string }{
		{"", "exec"},
		{" default_query_exec_mode=cache_statement", "exec"},
		{" default_query_exec_mode=describe_exec", "exec"},
		{" default_query_exec_mode=exec", "<nil>"},
		{" default_query_exec_mode=simple_protocol", "<nil>"},
		{" default_query_exec_mode=cache_describe", "<nil>"},
	} {
		t.Run(c.setting, func(t *testing.T) {
			db, err := sql.Open("pgx", dsn+c.setting)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var got string
			if err := conn.Raw(func(dc any) error {
				got = fmt.Sprint(store.PgxExecMode(dc))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("PgxExecMode = %s, want %s", got, c.want)
			}
		})
	}
	if got := store.PgxExecMode(struct{ Conn func() int }{}); got != nil {
		t.Errorf("PgxExecMode of a connection that is not pgx's = %v, want nil", got)
	}
	if got := store.PgxExecMode(nil); got != nil {
		t.Errorf("PgxExecMode(nil) = %v, want nil", got)
	}
}
