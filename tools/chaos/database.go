package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/testdb"
)

// database is the dialect's database: its server, or the replicated
// pair, how a worker reaches it, and the runner's own handle on it, with
// which the runner seeds and feeds the items.
type database struct {
	*runLog
	dir string

	driver, dsn string
	// srv is the server the workers reach: the database, or on PgBouncer
	// the pooler, which the faults cut and restart.
	srv      *testdb.Server
	upstream *testdb.Server // PgBouncer only: the PostgreSQL server behind it
	pair     *testdb.Pair   // PostgresPair and MariaDBPair only; srv is then nil
	// galera is the Galera cluster and the runner's way to its nodes
	// (Galera only; srv is then nil).
	galera *galeraNodes
	// db is the runner's own handle: on PgBouncer to the server behind
	// it, so that seeding, feeding and checking do not depend on the
	// pooler the faults act on.
	db *gorm.DB
	// dsnVia builds a worker's DSN for its proxy's address (nil on
	// SQLite).
	dsnVia func(addr string) string
	// workerArgs are the dialect's own arguments of every worker.
	workerArgs []string
}

// open starts the dialect's database and opens the runner's handle.
func (d *database) open(ctx context.Context) error {
	var err error
	switch d.name {
	case "sqlite":
		d.driver = dbopen.SQLitePure
		d.dsn = dbopen.SQLiteDSN(dbopen.SQLitePure, filepath.Join(d.dir, "chaos.db"))
	case "postgres", "mysql":
		start := testdb.StartPostgres
		if d.name == "mysql" {
			start = testdb.StartMariaDB
		}
		d.srv, err = start(ctx)
		if err != nil {
			return err
		}
		if err := d.srv.CreateDatabase(ctx, "chaos"); err != nil {
			return err
		}
		if d.name == "postgres" {
			d.driver, d.dsn = dbopen.Postgres, d.srv.DSN("chaos")+" connect_timeout=2"
			d.dsnVia = func(addr string) string {
				host, port, _ := strings.Cut(addr, ":")
				return fmt.Sprintf("host=%s port=%s user=postgres dbname=chaos sslmode=disable connect_timeout=2", host, port)
			}
		} else {
			d.driver, d.dsn = dbopen.MySQL, d.srv.DSN("chaos")+"?parseTime=true&loc=UTC&timeout=2s"
			d.dsnVia = func(addr string) string {
				return "root@tcp(" + addr + ")/chaos?parseTime=true&loc=UTC&timeout=2s"
			}
		}
	case PgBouncer:
		if d.upstream, err = testdb.StartPostgres(ctx); err != nil {
			return err
		}
		if err := d.upstream.CreateDatabase(ctx, "chaos"); err != nil {
			return err
		}
		if d.srv, err = testdb.StartPgBouncer(ctx, d.upstream); err != nil {
			return err
		}
		// Behind a transaction pooler the library and the workers' own
		// statements (their fenced writes) need the exec mode
		// docs/operations.md asks for: the store refuses a DSN without
		// it when the coordinator starts (store.ErrPoolerMode).
		d.driver, d.dsn = dbopen.Postgres, d.srv.DSN("chaos")+" connect_timeout=2"+testdb.PgBouncerDSNSetting
		d.dsnVia = func(addr string) string {
			host, port, _ := strings.Cut(addr, ":")
			return fmt.Sprintf("host=%s port=%s user=postgres dbname=chaos sslmode=disable connect_timeout=2", host, port) +
				testdb.PgBouncerDSNSetting
		}
		// Behind the pooler LISTEN cannot work: the workers wake each
		// other by datagrams, as docs/operations.md advises.
		d.workerArgs = []string{"-peer-wakeups"}
		d.db, err = dbopen.Open(dbopen.Postgres, d.upstream.DSN("chaos")+" connect_timeout=2", &gorm.Config{Logger: logger.Discard})
		return err
	case PostgresPair, MariaDBPair:
		if d.name == MariaDBPair {
			d.pair, err = testdb.StartMariaDBPair(ctx, testdb.Sync)
		} else {
			d.pair, err = testdb.StartPostgresPair(ctx, testdb.Sync)
		}
		if err != nil {
			return err
		}
		if err := d.pair.CreateDatabase(ctx, "chaos"); err != nil {
			return err
		}
		d.driver, d.dsn = d.pair.Driver(), d.pair.DSN("chaos")
	case Galera:
		if d.galera, err = startGalera(ctx); err != nil {
			return err
		}
		d.driver, d.dsn = dbopen.MySQL, d.galera.runnerDSN()
		d.dsnVia = func(addr string) string {
			return "root@tcp(" + addr + ")/chaos" + galeraWorkerParams
		}
		d.db, err = dbopen.Open(d.driver, d.dsn, &gorm.Config{Logger: logger.Discard})
		if err != nil {
			return err
		}
		// The runner's connections follow its dialer away from a faulted
		// node: none lasts long.
		sqlDB, err := d.db.DB()
		if err != nil {
			return err
		}
		sqlDB.SetConnMaxLifetime(time.Second)
		return nil
	default:
		return fmt.Errorf("unknown dialect %q", d.name)
	}
	d.db, err = dbopen.Open(d.driver, d.dsn, &gorm.Config{Logger: logger.Discard})
	return err
}

// close closes the runner's handle and stops the server or the pair.
func (d *database) close() {
	if d.db != nil {
		if s, err := d.db.DB(); err == nil {
			_ = s.Close()
		}
	}
	if d.srv != nil {
		if err := d.srv.Close(); err != nil {
			d.problem("closing the %s server: %v", d.name, err)
		}
	}
	if d.upstream != nil {
		if err := d.upstream.Close(); err != nil {
			d.problem("closing the PostgreSQL server behind %s: %v", d.name, err)
		}
	}
	if d.pair != nil {
		if err := d.pair.Close(); err != nil {
			d.problem("closing the %s: %v", d.name, err)
		}
	}
	if d.galera != nil {
		if err := d.galera.cluster.Close(); err != nil {
			d.problem("closing the %s cluster: %v", d.name, err)
		}
	}
}

// proxyTarget is the address the fault proxy of a worker on Galera node node
// (-1 elsewhere) forwards to: the server's, or the node's; "" where a
// worker has no proxy.
func (d *database) proxyTarget(node int) string {
	switch {
	case d.galera != nil:
		return d.galera.addr(node)
	case d.srv != nil:
		return fmt.Sprintf("127.0.0.1:%d", d.srv.Port())
	}
	return ""
}

// workerDSN is the DSN of a worker on Galera node node (-1 elsewhere).
func (d *database) workerDSN(node int) string {
	if d.galera != nil {
		return d.dsnVia(d.galera.addr(node))
	}
	return d.dsn
}

// feedResult is what feed did: n items in all, and failed inserts.
type feedResult struct{ n, failures int }

// feed adds items numbered on after the seeded ones, FeedRate a second,
// until stop is closed, and then sends how many there are in all. After a
// failed insert (the database restarting) it reads the highest id, since
// the insert may have committed, and goes on from there.
func (d *database) feed(ctx context.Context, stop <-chan struct{}, seeded int) <-chan feedResult {
	out := make(chan feedResult, 1)
	rate := FeedRate
	if d.name == "sqlite" {
		rate = SQLiteFeedRate
	}
	per := max(1, rate*int(feedEvery/time.Millisecond)/1000)
	go func() {
		res := feedResult{n: seeded}
		defer func() { out <- res }()
		t := time.NewTicker(feedEvery)
		defer t.Stop()
		resync := false
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
			db := d.db.WithContext(ictx)
			if resync {
				var top int64
				if err := db.Model(&Item{}).Select("COALESCE(MAX(id), 0)").Scan(&top).Error; err != nil {
					cancel()
					continue
				}
				res.n, resync = int(top), false
			}
			batch := make([]Item, per)
			for i := range batch {
				batch[i].ID = int64(res.n + i + 1)
			}
			err := db.Create(&batch).Error
			cancel()
			if err != nil {
				res.failures++
				resync = true
				continue
			}
			res.n += per
		}
	}()
	return out
}

// seed creates the tables and the first n items.
func (d *database) seed(ctx context.Context, n int) error {
	db := d.db.WithContext(ctx)
	if err := db.AutoMigrate(&Item{}, &LedgerRow{}, &GrantRow{}, &SlotRow{}); err != nil {
		return fmt.Errorf("create the chaos tables: %w", err)
	}
	items := make([]Item, n)
	for i := range items {
		items[i].ID = int64(i + 1)
	}
	if err := db.CreateInBatches(items, 500).Error; err != nil {
		return fmt.Errorf("seed %d items: %w", n, err)
	}
	return nil
}
