package store

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	gormtests "gorm.io/gorm/utils/tests"
)

// TestTenThousandLeasesWithinParameterLimits: every statement that carries
// names or terms does so in chunks, so 10,000 leases (or any number) stay
// within SQL Server's 2,100 bound parameters, the smallest limit of the
// four databases, in a bounded number of statements; and a tick's renewal
// binds one parameter whatever the number of leases.
func TestTenThousandLeasesWithinParameterLimits(t *testing.T) {
	const n, limit = 10000, 2100
	names := make([]string, n)
	terms := make([]Term, n)
	for i := range names {
		names[i] = fmt.Sprintf("global/lease-%05d", i)
		terms[i] = Term{Name: names[i], Epoch: int64(i + 1)}
	}
	tables, _ := TablesFor("")
	const session, holder = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef"
	for _, name := range Dialects {
		t.Run(name, func(t *testing.T) {
			d := dialects[name]
			if st := d.sessions().sqlRenewSession(tables, session, time.Minute); len(st.args) != 1 {
				t.Errorf("the renewal binds %d parameters, want 1", len(st.args))
			}
			check := func(what string, want int, each func(yield func(stmt))) {
				t.Helper()
				count := 0
				each(func(st stmt) {
					count++
					if len(st.args) > limit {
						t.Errorf("%s: a statement binds %d parameters, over %d", what, len(st.args), limit)
					}
					if name == SQLServer {
						// gorm numbers them @p1 ... @pN as sent: N is the
						// number of values bound once gorm has expanded the
						// arguments, whatever the dialector.
						if n := len(dryRun(t).Exec(st.q, st.args...).Statement.Vars); n > limit {
							t.Errorf("%s: rendered with %d parameters, more than %d", what, n, limit)
						}
					}
				})
				if count != want {
					t.Errorf("%s of %d leases: %d statements, want %d", what, n, count, want)
				}
				t.Logf("%s of %d leases: %d statements", what, n, count)
			}
			check("release", n/WriteChunk, func(yield func(stmt)) {
				_ = chunks(terms, WriteChunk, func(p []Term) error { yield(d.leases().sqlRelease(tables, session, p)); return nil })
			})
			check("insert if absent", n/WriteChunk, func(yield func(stmt)) {
				_ = chunks(names, WriteChunk, func(p []string) error { yield(d.sqlEnsureRows(tables, p)); return nil })
			})
			check("acquire", n/WriteChunk, func(yield func(stmt)) {
				_ = chunks(names, WriteChunk, func(p []string) error {
					if d.acquire == acquireLockThenUpdate {
						yield(d.leases().sqlAcquireLock(tables, session, holder, p))
						return nil
					}
					yield(d.leases().sqlAcquire(tables, session, holder, p))
					return nil
				})
			})
			if d.lockFirst() {
				check("lock before acquire", n/WriteChunk, func(yield func(stmt)) {
					_ = chunks(names, WriteChunk, func(p []string) error { yield(d.leases().sqlLockRows(tables, p)); return nil })
				})
			}
			check("read", n/ReadChunk, func(yield func(stmt)) {
				_ = chunks(names, ReadChunk, func(p []string) error { yield(d.leases().sqlSelect(tables, p)); return nil })
			})
		})
	}
}

// dryRun opens a gorm handle that renders statements without a server
// or a driver: gorm's own stand-in dialector, which binds every value as
// "?". What a statement binds does not depend on the dialector.
func dryRun(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(gormtests.DummyDialector{}, &gorm.Config{DryRun: true, DisableAutomaticPing: true, SkipDefaultTransaction: true, Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open gorm in dry-run mode: %v", err)
	}
	return db
}
