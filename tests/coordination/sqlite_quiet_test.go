package coordination_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	zapobserver "go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
)

// quietLogger returns a logger that writes through t and records every
// entry at WARN or above.
func quietLogger(t *testing.T) (*zap.Logger, *zapobserver.ObservedLogs) {
	core, logs := zapobserver.New(zap.WarnLevel)
	return zaptest.NewLogger(t, zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, core)
	}))), logs
}

// openSQLiteFile opens a SQLite file in a fresh directory with the
// pure-Go driver and the given DSN parameters.
func openSQLiteFile(t *testing.T, params string) (*gorm.DB, string) {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "quiet.db") + "?" + params
	db, err := dbopen.Open(dbopen.SQLitePure, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, dsn
}

// TestSQLiteFencedWorkIsQuiet: one process on a SQLite file in WAL mode
// with a busy timeout, and transactions left deferred (no _txlock), runs
// a singleton's and a pool member's fenced transactions while another
// connection commits between the pool's fencing read and the rest of its
// check. Fence takes the write lock before it reads, so neither check
// meets SQLITE_BUSY, and the process logs nothing at WARN or above from
// its start to its shutdown.
func TestSQLiteFencedWorkIsQuiet(t *testing.T) {
	t.Parallel()
	db, dsn := openSQLiteFile(t, "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err := db.Exec("CREATE TABLE work (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	// Another process's writer: its own pool on the same file.
	other, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	// Once armed, the first read of a pool's generation row inside a
	// transaction is followed by a commit on the other connection, which
	// is waited for up to commitWait: at once where the read took no write
	// lock; after the transaction, where it did.
	const commitWait = time.Second
	var armed atomic.Bool
	otherDone := make(chan error, 1)
	err = db.Callback().Row().After("gorm:row").Register("test:commit-between", func(tx *gorm.DB) {
		if _, inTx := tx.Statement.ConnPool.(gorm.TxCommitter); !inTx || !readsGeneration(tx.Statement.Vars) {
			return
		}
		if !armed.CompareAndSwap(true, false) {
			return
		}
		go func() {
			_, err := other.Exec("INSERT INTO work (what) VALUES ('other')")
			otherDone <- err
		}()
		select {
		case err := <-otherDone:
			otherDone <- err
		case <-time.After(commitWait):
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	log, logs := quietLogger(t)
	cfg := steady(fastConfig())
	cfg.Logger = log
	r := start(t, db, "node-a", cfg)

	l := mustCampaign(t, election(t, r.Coordinator, coordination.GlobalScope, "ledger"))
	fenced := func(fence func(tx *gorm.DB) error, what string) error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := fence(tx); err != nil {
				return err
			}
			return tx.Exec("INSERT INTO work (what) VALUES (?)", what).Error
		})
	}
	for i := range 3 {
		if err := fenced(l.Fence, "ledger"); err != nil {
			t.Fatalf("fenced transaction %d of the lease: %v", i, err)
		}
	}

	p, err := r.Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	assigned := make(chan coordination.Assignment, 1)
	pctx, leave := context.WithCancel(context.Background())
	poolDone := make(chan struct{})
	go func() {
		defer close(poolDone)
		_ = p.Run(pctx, func(ctx context.Context, a coordination.Assignment) error {
			select {
			case assigned <- a:
			default:
			}
			<-ctx.Done()
			return nil
		}, nil)
	}()
	var a coordination.Assignment
	select {
	case a = <-assigned:
	case <-time.After(wait):
		t.Fatalf("no pool assignment within %v", wait)
	}
	armed.Store(true)
	if err := fenced(a.Fence, "orders"); err != nil {
		t.Errorf("fenced transaction of the pool with a commit after its read: %v", err)
	}
	if armed.Load() {
		t.Error("the pool's fencing check read no generation row in its transaction")
	} else {
		select {
		case err := <-otherDone:
			if err != nil {
				t.Errorf("the other connection's commit: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("the other connection's commit did not end within %v", wait)
		}
	}
	for i := range 3 {
		if err := fenced(a.Fence, "orders"); err != nil {
			t.Errorf("fenced transaction %d of the pool: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := p.State(ctx); err != nil {
		t.Errorf("pool state: %v", err)
	}
	if _, err := r.Admin().Leases(ctx); err != nil {
		t.Errorf("leases: %v", err)
	}

	leave()
	<-poolDone
	release(t, l)
	r.cancel()
	select {
	case <-r.Done():
	case <-time.After(wait):
		t.Fatalf("coordinator did not stop within %v", wait)
	}
	for _, e := range logs.All() {
		t.Errorf("logged at %s: %s %v", e.Level, e.Message, e.ContextMap())
	}
}

// readsGeneration reports whether a statement's arguments name a pool's
// generation row.
func readsGeneration(vars []any) bool {
	for _, v := range vars {
		if s, ok := v.(string); ok && strings.HasSuffix(s, "|generation") {
			return true
		}
	}
	return false
}

// TestSQLiteWithoutBusyTimeoutWarnsOnce: on a DSN without a busy timeout
// (modernc.org/sqlite's default is 0), the coordinator says so once at
// start, naming the DSN setting for each driver.
func TestSQLiteWithoutBusyTimeoutWarnsOnce(t *testing.T) {
	t.Parallel()
	db, _ := openSQLiteFile(t, "_pragma=journal_mode(WAL)&_txlock=immediate")
	log, logs := quietLogger(t)
	cfg := steady(fastConfig())
	cfg.Logger = log
	r := start(t, db, "node-a", cfg)
	r.cancel()
	select {
	case <-r.Done():
	case <-time.After(wait):
		t.Fatalf("coordinator did not stop within %v", wait)
	}
	var advice []string
	for _, e := range logs.All() {
		if err, ok := e.ContextMap()["error"].(string); ok && strings.Contains(err, "busy_timeout is 0") {
			advice = append(advice, err)
		}
	}
	if len(advice) != 1 {
		t.Fatalf("logged the busy timeout advice %d times, want once: %q", len(advice), advice)
	}
	for _, setting := range []string{"_pragma=busy_timeout(5000)", "_busy_timeout=5000"} {
		if !strings.Contains(advice[0], setting) {
			t.Errorf("the advice %q does not name %s", advice[0], setting)
		}
	}
}
