package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/storetest"
	"github.com/leasehold/leasehold/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// sqlStore is the store of a database as the suite uses it: the lease and
// pool statements beside the owners of the session rows and of the rows
// of keyed locks.
type sqlStore struct {
	*store.Store
	*store.Sessions
	*store.LockRows
}

// TestStoreConformance runs the store conformance suite on every database,
// PostgreSQL behind PgBouncer in transaction mode and a MariaDB Galera
// cluster (on its node 0) included: the reference the in-process store
// (internal/memstore) is checked against.
func TestStoreConformance(t *testing.T) {
	for _, tg := range testdb.ClusterTargets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, storetest.Target{Open: func(t *testing.T) storetest.Store {
				st, err := store.New(tg.Open(t), store.Options{FailoverHold: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := st.Schema().Migrate(ctx, 30*time.Second); err != nil {
					t.Fatalf("migrate: %v", err)
				}
				if _, err := st.Failover().ProbeFailover(ctx); err != nil {
					t.Fatalf("probe failover: %v", err)
				}
				return sqlStore{Store: st, Sessions: st.Sessions(), LockRows: st.LockRows()}
			}})
		})
	}
}
