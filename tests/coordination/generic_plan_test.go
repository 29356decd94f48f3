package coordination_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/testdb"
)

// TestNamesMatchedFastOnGenericPlansOfASmallTable is the stall of one
// process campaigning for 100,000 leases on PostgreSQL: the statements
// that match many names (the read, the acquire's row lock) are prepared
// once per connection by pgx's statement cache, and PostgreSQL may keep a
// generic plan made while the lease table was small and never analyzed.
// With "name = ANY($1)" such a plan scans the table and compares every row
// with every name of the array: 1,000 names against 15,000 rows took 200
// to 300 ms per read, and the process stopped acquiring.
//
// The test prepares the store's own statements on one connection under
// force_generic_plan while the table has one row, grows the table to
// 50,001 rows, and requires that the plan cached for each one filters no
// rows by the array. It measures the cached plans' time too, but only
// logs it (with "= ANY": 10,000 names in several seconds).
func TestNamesMatchedFastOnGenericPlansOfASmallTable(t *testing.T) {
	t.Parallel() // see runCasesOn
	for _, tg := range testdb.Targets() {
		if tg.Dialect != "postgres" {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			db := tg.Open(t)
			sqlDB, err := db.DB()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := rawStore(t, db)
			if _, err := s.Migrate(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}

			// The reads the store sends whose one parameter is the
			// names, on a table of one row.
			var mu sync.Mutex
			var sent []string
			watch := func(db *gorm.DB) {
				mu.Lock()
				defer mu.Unlock()
				if q := db.Statement.SQL.String(); strings.HasPrefix(q, "SELECT") && strings.Contains(q, "text[]") && strings.Contains(q, "$1") && !strings.Contains(q, "$2") {
					sent = append(sent, q)
				}
			}
			cb := db.Callback()
			for _, err := range []error{
				cb.Raw().After("gorm:raw").Register("test:generic-plan", watch),
				cb.Query().After("gorm:query").Register("test:generic-plan", watch),
				cb.Row().After("gorm:row").Register("test:generic-plan", watch),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			const session, holder = "generic-plan-session", "node-a/c/0123456789abcdef0123456789abcdef"
			if err := s.CreateSession(ctx, session, holder, time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := s.EnsureRows(ctx, []string{"warm"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, []string{"warm"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Acquire(ctx, session, holder, []string{"warm"}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			statements := slices.Compact(slices.Sorted(slices.Values(sent)))
			mu.Unlock()
			if len(statements) < 2 {
				t.Fatalf("want the read and the row lock among the statements with one text[] parameter, got %d:\n%s",
					len(statements), strings.Join(statements, "\n"))
			}

			// Their generic plans, made now and cached on one connection.
			conn, err := sqlDB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			exec := func(q string, args ...any) {
				t.Helper()
				if _, err := conn.ExecContext(ctx, q, args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			exec("SET plan_cache_mode = force_generic_plan")
			for i, q := range statements {
				exec(fmt.Sprintf("PREPARE names_%d AS %s", i, q))
				exec(fmt.Sprintf("EXECUTE names_%d('{warm}')", i))
			}

			grown := make([]string, 50000)
			for i := range grown {
				grown[i] = fmt.Sprintf("lease-%06d", i)
			}
			if err := s.EnsureRows(ctx, grown); err != nil {
				t.Fatal(err)
			}
			absent := make([]string, 10000)
			for i := range absent {
				absent[i] = fmt.Sprintf("%q", fmt.Sprintf("absent-%06d", i))
			}
			arg := "{" + strings.Join(absent, ",") + "}"
			for i, q := range statements {
				began := time.Now()
				exec(fmt.Sprintf("EXECUTE names_%d('%s')", i, arg))
				took := time.Since(began)
				plan := explain(t, ctx, conn, fmt.Sprintf("EXPLAIN EXECUTE names_%d('{a,b}')", i))
				t.Logf("10,000 names on 50,001 rows in %v with the plan made on one row:\n%s\n%s", took, q, strings.Join(plan, "\n"))
				for _, line := range plan {
					if strings.Contains(line, "Filter:") && strings.Contains(line, "ANY") {
						t.Errorf("the plan cached on a small table for\n%s\ncompares every row with every name:\n%s", q, strings.Join(plan, "\n"))
						break
					}
				}
			}
		})
	}
}

// explain returns the lines of an EXPLAIN statement run on conn.
func explain(t *testing.T, ctx context.Context, conn *sql.Conn, q string) []string {
	t.Helper()
	rs, err := conn.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	var plan []string
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
