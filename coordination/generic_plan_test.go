package coordination

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestNamesMatchedFastOnGenericPlansOfASmallTable is the stall of one
// process campaigning for 100,000 leases on PostgreSQL: the statements
// that match many names (read, lock, acquire) are prepared once per
// connection by pgx's statement cache, and PostgreSQL may keep a generic
// plan made while the lease table was small and never analyzed. With
// "name = ANY($1)" such a plan scans the table and compares every row
// with every name of the array: 1,000 names against 15,000 rows took
// 200 to 300 ms per read, and the process stopped acquiring. The test
// forces generic plans on its one connection, lets them be made on a
// table of one row, grows the table to 50,000 rows and bounds the time of
// reading 10,000 names and acquiring 1,000 (several seconds with
// "= ANY", well under one with the semi-join).
func TestNamesMatchedFastOnGenericPlansOfASmallTable(t *testing.T) {
	for _, tg := range testdb.Targets() {
		if tg.Dialect != "postgres" {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			driver, dsn := tg.OpenDSN(t)
			if strings.Contains(dsn, "://") {
				sep := "?"
				if strings.Contains(dsn, "?") {
					sep = "&"
				}
				dsn += sep + "plan_cache_mode=force_generic_plan"
			} else {
				dsn += " plan_cache_mode=force_generic_plan"
			}
			db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			sqlDB, err := db.DB()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sqlDB.Close() }()
			// One connection: the plans cached on it are those made on the
			// small table.
			sqlDB.SetMaxOpenConns(1)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := rawStore(t, db)
			if _, err := s.Migrate(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			var mode string
			if err := db.WithContext(ctx).Raw("SHOW plan_cache_mode").Row().Scan(&mode); err != nil || mode != "force_generic_plan" {
				t.Fatalf("plan_cache_mode %q (%v), want force_generic_plan from the DSN", mode, err)
			}
			const session, holder = "generic-plan-session", "node-a/c/0123456789abcdef0123456789abcdef"
			if err := s.CreateSession(ctx, session, holder, time.Minute); err != nil {
				t.Fatal(err)
			}
			// The plans, made on a table of one row.
			if err := s.EnsureRows(ctx, []string{"warm"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, []string{"warm"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Acquire(ctx, session, holder, []string{"warm"}); err != nil {
				t.Fatal(err)
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
				absent[i] = fmt.Sprintf("absent-%06d", i)
			}

			begin := time.Now()
			rows, err := s.Get(ctx, absent)
			if err != nil || len(rows) != 0 {
				t.Fatalf("read of absent names: %d rows, %v", len(rows), err)
			}
			read := time.Since(begin)
			begin = time.Now()
			terms, err := s.Acquire(ctx, session, holder, grown[:1000])
			if err != nil || len(terms) != 1000 {
				t.Fatalf("acquire: %d terms, %v", len(terms), err)
			}
			acquire := time.Since(begin)
			t.Logf("10,000 names read in %v, 1,000 acquired in %v, on 50,001 rows with generic plans", read, acquire)
			if bound := 1500 * time.Millisecond; read+acquire > bound {
				t.Errorf("reading 10,000 names and acquiring 1,000 took %v (read %v, acquire %v), want under %v: "+
					"a generic plan compares every row with every name", read+acquire, read, acquire, bound)
			}
		})
	}
}
