package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestPoolerCheck: the start-up probe refuses pgx's exec modes that keep
// prepared statements on the server (its default, cache_statement) behind
// PgBouncer in transaction mode, with an error wrapping ErrPoolerMode that
// names the DSN setting, and passes the modes that keep none there, and
// pgx's default on a direct connection, where it also runs the store.
func TestPoolerCheck(t *testing.T) {
	for _, c := range []struct {
		target  testdb.Target
		setting string // replaces testdb.PgBouncerDSNSetting
		refused bool
	}{
		{testdb.PgBouncerTarget, "", true},
		{testdb.PgBouncerTarget, " default_query_exec_mode=cache_statement", true},
		{testdb.PgBouncerTarget, " default_query_exec_mode=exec", false},
		{testdb.PgBouncerTarget, " default_query_exec_mode=simple_protocol", false},
		{testdb.PgBouncerTarget, " default_query_exec_mode=cache_describe", false},
		{testdb.Target{Name: "postgres", Dialect: "postgres"}, "", false},
	} {
		t.Run(c.target.Name+c.setting, func(t *testing.T) {
			driver, dsn := c.target.OpenDSN(t)
			dsn = strings.TrimSuffix(dsn, testdb.PgBouncerDSNSetting) + c.setting
			db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if sqlDB, err := db.DB(); err == nil {
				t.Cleanup(func() { _ = sqlDB.Close() })
			}
			st, err := store.New(db, store.Options{FailoverHold: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = st.Failover().ProbeFailover(ctx)
			switch {
			case c.refused && (!errors.Is(err, store.ErrPoolerMode) || !strings.Contains(err.Error(), "default_query_exec_mode")):
				t.Fatalf("ProbeFailover = %v; want an error wrapping ErrPoolerMode that names default_query_exec_mode", err)
			case c.refused:
				t.Logf("refused as it should be: %v", err)
				return
			case err != nil:
				t.Fatalf("ProbeFailover = %v; want it to pass", err)
			}
			if _, err := st.Schema().Migrate(ctx, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := st.Sessions().CreateSession(ctx, "s", "node-a/test/1", time.Minute); err != nil {
				t.Fatal(err)
			}
			if ok, _, err := st.Sessions().RenewSession(ctx, "s", time.Minute); err != nil || !ok {
				t.Fatalf("RenewSession = %v, %v; want the session renewed", ok, err)
			}
		})
	}
}
