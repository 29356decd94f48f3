package dbopen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestUnknownDriverNamesTheValue(t *testing.T) {
	for _, driver := range []string{"", "sqlite3", "Postgres", "oracle"} {
		_, err := Open(driver, "whatever", nil)
		if err == nil {
			t.Fatalf("Open(%q) succeeded, want an error", driver)
		}
		if !strings.Contains(err.Error(), `"`+driver+`"`) {
			t.Errorf("Open(%q) error %q does not name the driver value", driver, err)
		}
	}
}

func TestDialectorNames(t *testing.T) {
	// Building a dialector does not connect, so every driver can be checked
	// here, including sqlserver, for which no server is available.
	want := map[string]string{
		Postgres:   "postgres",
		MySQL:      "mysql",
		SQLServer:  "sqlserver",
		SQLite:     "sqlite",
		SQLitePure: "sqlite",
	}
	for _, driver := range Drivers() {
		d, err := Dialector(driver, "dsn")
		if err != nil {
			t.Fatalf("Dialector(%q): %v", driver, err)
		}
		if got := d.Name(); got != want[driver] {
			t.Errorf("Dialector(%q).Name() = %q, want %q", driver, got, want[driver])
		}
	}
}

func TestSQLiteDSN(t *testing.T) {
	tests := []struct {
		driver, path, want string
	}{
		{SQLite, "/tmp/a.db", "file:/tmp/a.db?_busy_timeout=5000&_journal_mode=WAL&_txlock=immediate"},
		{SQLitePure, "/tmp/a.db", "file:/tmp/a.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"},
		{SQLite, "/tmp/a?b#c%d.db", "file:/tmp/a%3fb%23c%25d.db?_busy_timeout=5000&_journal_mode=WAL&_txlock=immediate"},
	}
	for _, tt := range tests {
		if got := SQLiteDSN(tt.driver, tt.path); got != tt.want {
			t.Errorf("SQLiteDSN(%q, %q) = %q, want %q", tt.driver, tt.path, got, tt.want)
		}
	}
}

func TestSQLiteDSNPanicsForOtherDrivers(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("SQLiteDSN(postgres, ...) did not panic")
		}
		if !strings.Contains(r.(string), `"postgres"`) {
			t.Errorf("panic message %q does not name the driver", r)
		}
	}()
	SQLiteDSN(Postgres, "/tmp/x.db")
}

// TestSQLiteSettingsTakeEffect opens a real file with each SQLite driver and
// reads back the pragmas that the DSN sets. The directory name holds the
// characters that SQLiteDSN has to escape.
func TestSQLiteSettingsTakeEffect(t *testing.T) {
	drivers := []string{SQLitePure}
	if cgoEnabled {
		drivers = append(drivers, SQLite)
	} else {
		t.Log("built without cgo: only the pure-Go SQLite driver is checked")
	}
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "odd?#%name")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "test.db")
			db, err := Open(driver, SQLiteDSN(driver, path), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			sqlDB, err := db.DB()
			if err != nil {
				t.Fatal(err)
			}
			defer sqlDB.Close()
			if err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY)").Error; err != nil {
				t.Fatalf("create table: %v", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("the database file is not at the escaped path: %v", err)
			}
			var mode string
			var busy, syncMode int
			if err := db.Raw("PRAGMA journal_mode").Scan(&mode).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Raw("PRAGMA busy_timeout").Scan(&busy).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Raw("PRAGMA synchronous").Scan(&syncMode).Error; err != nil {
				t.Fatal(err)
			}
			if mode != "wal" || busy != 5000 || syncMode != 1 {
				t.Errorf("journal_mode=%q busy_timeout=%d synchronous=%d, want wal, 5000, 1 (NORMAL)", mode, busy, syncMode)
			}
		})
	}
}

// TestOpenLeavesConfigAlone opens several databases at once with one shared
// Config. gorm.Open writes into its Config, so without Open's copy this is
// a data race (go test -race finds it) and the handles share a dialector.
func TestOpenLeavesConfigAlone(t *testing.T) {
	cfg := &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)}
	dir := t.TempDir()
	const n = 4
	dbs := make([]*gorm.DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(dir, fmt.Sprintf("db%d.db", i))
			dbs[i], errs[i] = Open(SQLitePure, SQLiteDSN(SQLitePure, path), cfg)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Open %d: %v", i, errs[i])
		}
		sqlDB, err := dbs[i].DB()
		if err != nil {
			t.Fatal(err)
		}
		defer sqlDB.Close()
	}
	if cfg.Dialector != nil || cfg.ClauseBuilders != nil || cfg.Plugins != nil || cfg.NowFunc != nil {
		t.Errorf("Open changed the caller's Config: %+v", cfg)
	}
	if dbs[0].Config == dbs[1].Config {
		t.Error("two handles share one *gorm.Config")
	}
}
