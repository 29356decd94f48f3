package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"gorm.io/gorm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env returns a getenv function reading vars only.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestBadFlagsExitTwo(t *testing.T) {
	dsn := sqliteDSN(driverSQLitePure, filepath.Join(t.TempDir(), "flags.db"))
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // substrings of the error output
	}{
		{"bad duration", []string{"-ttl", "soon"}, nil, []string{"-ttl", `"soon"`}},
		{"bad duration in env", nil, map[string]string{"LEASEHOLD_RETRY": "fast"}, []string{"LEASEHOLD_RETRY", "-retry", `"fast"`}},
		{"negative work delay", []string{"-work-delay", "-1ms"}, nil, []string{"-work-delay", "-1ms"}},
		{"negative orders", []string{"-orders", "-5"}, nil, []string{"-orders", "-5"}},
		{"unknown driver", []string{"-driver", "oracle"}, nil, []string{"-driver", `"oracle"`}},
		{"unknown driver in env", nil, map[string]string{"LEASEHOLD_DRIVER": "db2"}, []string{"-driver", `"db2"`}},
		{"bad http address", []string{"-http", "8080"}, nil, []string{"-http", `"8080"`, "host:port"}},
		{"bad http address in env", nil, map[string]string{"SAMPLE_HTTP": "nowhere"}, []string{"-http", `"nowhere"`}},
		{"bad log format", []string{"-log-format", "xml"}, nil, []string{"-log-format", `"xml"`}},
		{"bad wake address", []string{"-wake-address", "7946"}, nil, []string{"-wake-address", `"7946"`, "host:port"}},
		{"bad wake advertise in env", nil, map[string]string{"LEASEHOLD_WAKE_ADVERTISE": "10.0.0.7,pod-a"},
			[]string{"-wake-advertise", `"pod-a"`, "IP"}},
		{"postgres needs a dsn", []string{"-driver", "postgres"}, nil, []string{"-dsn", "postgres"}},
		{"unknown flag", []string{"-bogus"}, nil, []string{"-bogus"}},
		{"stray argument", []string{"-dsn", dsn, "extra"}, nil, []string{`"extra"`}},
		{"bad node name", []string{"-dsn", dsn}, map[string]string{"HOSTNAME": "a b"}, []string{"HOSTNAME", `"a b"`}},
		{"renew too long for the ttl", []string{"-dsn", dsn, "-ttl", "1s", "-renew", "2s"}, nil, []string{"-ttl=1s", "-renew=2s", "RenewInterval"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"HOSTNAME": "test-node"}
			for k, v := range tc.env {
				vars[k] = v
			}
			var out syncBuffer
			if code := run(context.Background(), tc.args, env(vars), &out); code != exitUsage {
				t.Fatalf("run(%q) = %d, want %d; output:\n%s", tc.args, code, exitUsage, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output does not mention %s:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestWakeSettingsFromTheEnvironment(t *testing.T) {
	t.Run("UDPWhenGiven", func(t *testing.T) {
		cfg, err := parseConfig(nil, env(map[string]string{
			"LEASEHOLD_WAKE_ADDRESS":   ":7946",
			"LEASEHOLD_WAKE_ADVERTISE": " 10.0.0.7 , [fd00::7]:7946",
		}), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		c := coordinationConfig(cfg, zap.NewNop())
		if c.WakeAddress != ":7946" || !slices.Equal(c.WakeAdvertise, []string{"10.0.0.7", "[fd00::7]:7946"}) {
			t.Errorf("WakeAddress %q, WakeAdvertise %q; want \":7946\", [10.0.0.7 [fd00::7]:7946]", c.WakeAddress, c.WakeAdvertise)
		}
		if c.Notifications != nil {
			t.Error("Notifications set with a wake address given: PostgreSQL would use LISTEN/NOTIFY, not UDP")
		}
	})
	t.Run("PgnotifyOtherwise", func(t *testing.T) {
		cfg, err := parseConfig(nil, env(nil), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		c := coordinationConfig(cfg, zap.NewNop())
		if c.WakeAddress != "" || c.WakeAdvertise != nil || c.Notifications == nil {
			t.Errorf("WakeAddress %q, WakeAdvertise %q, Notifications %v; want none, none, pgnotify", c.WakeAddress, c.WakeAdvertise, c.Notifications)
		}
	})
}

func TestHelpExitsZero(t *testing.T) {
	var out syncBuffer
	if code := run(context.Background(), []string{"-h"}, env(nil), &out); code != exitOK {
		t.Fatalf("run(-h) = %d, want 0", code)
	}
	if !strings.Contains(out.String(), "-work-delay") {
		t.Errorf("usage does not list -work-delay:\n%s", out.String())
	}
}

// TestProcessesEveryOrderOnce runs the sample in-process on a SQLite file
// until it has processed every order, stops it as SIGTERM would, and
// checks the database.
func TestProcessesEveryOrderOnce(t *testing.T) {
	const orders = 300
	dsn := sqliteDSN(driverSQLitePure, filepath.Join(t.TempDir(), "sample.db"))
	args := []string{"-dsn", dsn, "-orders", "300", "-work-delay", "50us", "-ttl", "3s", "-renew", "1s", "-retry", "300ms"}
	vars := map[string]string{"HOSTNAME": "test-node", "CLUSTER_NAME": "test"}

	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, args, env(vars), &logs) }()
	defer func() {
		if t.Failed() {
			t.Logf("sample logs:\n%s", logs.String())
		}
	}()

	var db *gorm.DB
	defer func() {
		if db == nil {
			return
		}
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()

	// Wait, polling the database, until every order is processed.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	var processed int64
	var err error
	for processed < orders {
		select {
		case code := <-exited:
			t.Fatalf("sample exited early with status %d", code)
		case <-deadline.C:
			t.Fatalf("only %d of %d orders processed after 60s", processed, orders)
		case <-tick.C:
		}
		// Errors (a file being created, tables not there yet) count as
		// not done.
		if db == nil {
			if db, err = openGorm(driverSQLitePure, dsn); err != nil {
				continue
			}
		}
		db.Raw("SELECT COUNT(*) FROM sample_orders WHERE processed_by IS NOT NULL").Scan(&processed)
	}

	cancel() // what SIGTERM does through signal.NotifyContext
	stopped := time.NewTimer(30 * time.Second)
	defer stopped.Stop()
	select {
	case code := <-exited:
		if code != exitOK {
			t.Fatalf("sample exited with status %d, want 0", code)
		}
	case <-stopped.C:
		t.Fatal("sample did not stop within 30s of cancellation")
	}

	var total, audited, distinct, notOnce int64
	mustScan(t, db, &total, "SELECT COUNT(*) FROM sample_orders")
	mustScan(t, db, &audited, "SELECT COUNT(*) FROM sample_processing")
	mustScan(t, db, &distinct, "SELECT COUNT(DISTINCT order_id) FROM sample_processing")
	mustScan(t, db, &notOnce, "SELECT COUNT(*) FROM (SELECT order_id FROM sample_processing GROUP BY order_id HAVING COUNT(*) <> 1) d")
	if total != orders || audited != orders || distinct != orders || notOnce != 0 {
		t.Errorf("orders %d, audit rows %d, distinct audited orders %d, orders not processed exactly once %d; want %d, %d, %d, 0",
			total, audited, distinct, notOnce, orders, orders, orders)
	}
	var mismatched int64
	mustScan(t, db, &mismatched, "SELECT COUNT(*) FROM sample_orders o JOIN sample_processing p ON p.order_id = o.id "+
		"WHERE o.processed_by <> p.member OR o.processed_generation <> p.generation")
	if mismatched != 0 {
		t.Errorf("%d orders disagree with their audit row", mismatched)
	}

	var ledgerRows, holdersPerEpoch int64
	mustScan(t, db, &ledgerRows, "SELECT COUNT(*) FROM sample_ledger")
	mustScan(t, db, &holdersPerEpoch, "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(DISTINCT holder) AS n FROM sample_ledger GROUP BY epoch) e")
	if ledgerRows == 0 || holdersPerEpoch != 1 {
		t.Errorf("ledger: %d rows, at most %d holders per epoch; want rows and exactly 1 holder per epoch", ledgerRows, holdersPerEpoch)
	}

	var kinds []string
	if err := db.Raw("SELECT DISTINCT kind || ':' || worker FROM sample_timeline").Scan(&kinds).Error; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"process-start:", "started-leading:ledger", "started-leading:cluster-report",
		"assignment-started:orders", "assignment-stopped:orders", "report:cluster-report",
		"stopped-leading:ledger", "stopped-leading:cluster-report", "process-stop:",
	} {
		if !strings.Contains(strings.Join(kinds, " "), want) {
			t.Errorf("timeline has no %q row; it has %q", want, kinds)
		}
	}
	var stop string
	mustScan(t, db, &stop, "SELECT detail FROM sample_timeline WHERE kind = 'process-stop'")
	if stop != "stopped cleanly" {
		t.Errorf("process-stop detail = %q, want %q", stop, "stopped cleanly")
	}
}

func mustScan(t *testing.T, db *gorm.DB, dest any, query string) {
	t.Helper()
	if err := db.Raw(query).Scan(dest).Error; err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestServerDSNForSQLiteRefused: a server's DSN given to a SQLite driver
// is a usage error that says which -driver to set, without the password,
// and creates no file (the driver would take the DSN for a file name).
func TestServerDSNForSQLiteRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct{ dsn, driver string }{
		{"postgres://alice:S3cretPW@db.example/app", "postgres"},
		{"host=db.example user=alice password=S3cretPW dbname=app", "postgres"},
		{"alice:S3cretPW@tcp(db.example:3306)/app", "mysql"},
		{"sqlserver://alice:S3cretPW@db.example?database=app", "sqlserver"},
	} {
		for _, driver := range []string{driverSQLitePure, driverSQLite} {
			var out syncBuffer
			vars := map[string]string{"HOSTNAME": "test-node", "LEASEHOLD_DRIVER": driver, "LEASEHOLD_DSN": tc.dsn}
			// Bounded: a sample that took the DSN for a file would run on it.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			code := run(ctx, nil, env(vars), &out)
			cancel()
			if code != exitUsage {
				t.Errorf("%s with %q: exit %d, want %d:\n%s", driver, tc.dsn, code, exitUsage, out.String())
			}
			if !strings.Contains(out.String(), "-driver "+tc.driver) || strings.Contains(out.String(), "S3cretPW") {
				t.Errorf("%s with %q: want -driver %s named and no password:\n%s", driver, tc.dsn, tc.driver, out.String())
			}
		}
	}
	if es, err := os.ReadDir(dir); err != nil || len(es) > 0 {
		t.Fatalf("the working directory holds %v (%v); want nothing", es, err)
	}
}
