package main

import (
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDialectorForEveryDriver builds each driver's dialector. Building one
// does not connect, so SQL Server is checked too.
func TestDialectorForEveryDriver(t *testing.T) {
	want := map[string]string{
		driverPostgres:   "postgres",
		driverMySQL:      "mysql",
		driverSQLServer:  "sqlserver",
		driverSQLite:     "sqlite",
		driverSQLitePure: "sqlite",
	}
	for _, driver := range drivers() {
		d, err := dialector(driver, "dsn")
		if err != nil {
			t.Fatalf("dialector(%q): %v", driver, err)
		}
		if got := d.Name(); got != want[driver] {
			t.Errorf("dialector(%q).Name() = %q, want %q", driver, got, want[driver])
		}
	}
	if _, err := dialector("oracle", "dsn"); err == nil || !strings.Contains(err.Error(), `"oracle"`) {
		t.Errorf("dialector(oracle) error = %v, want one naming the driver", err)
	}
}

// TestMySQLOpensWhileTheServerIsDown opens a MySQL handle on an address
// where nothing listens: the sample must be able to start before its
// database.
func TestMySQLOpensWhileTheServerIsDown(t *testing.T) {
	db, err := openGorm(driverMySQL, "u:p@tcp(127.0.0.1:1)/db?timeout=1s")
	if err != nil {
		t.Fatalf("openGorm(mysql) with no server: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	_ = sqlDB.Close()
}

// TestSQLiteSettingsTakeEffect opens a real file with each SQLite driver
// through the sample's DSN and reads back the pragmas the DSN sets, and
// checks that a transaction takes the write lock when it begins. The
// directory name holds the characters sqliteDSN has to escape.
func TestSQLiteSettingsTakeEffect(t *testing.T) {
	ds := []string{driverSQLitePure}
	if cgoEnabled {
		ds = append(ds, driverSQLite)
	} else {
		t.Log("built without cgo: only the pure-Go SQLite driver is checked")
	}
	for _, driver := range ds {
		t.Run(driver, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "odd?#%name")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "test.db")
			db, err := openGorm(driver, sqliteDSN(driver, path))
			if err != nil {
				t.Fatalf("openGorm: %v", err)
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
			mustScan(t, db, &mode, "PRAGMA journal_mode")
			mustScan(t, db, &busy, "PRAGMA busy_timeout")
			mustScan(t, db, &syncMode, "PRAGMA synchronous")
			if mode != "wal" || busy != 5000 || syncMode != 1 {
				t.Errorf("journal_mode=%q busy_timeout=%d synchronous=%d, want wal, 5000, 1 (NORMAL)", mode, busy, syncMode)
			}

			// With _txlock=immediate a transaction holds the write lock
			// from BEGIN, so a write on another connection waits for it
			// (and fails after the busy timeout, here shortened).
			tx := db.Begin()
			if tx.Error != nil {
				t.Fatal(tx.Error)
			}
			defer tx.Rollback()
			var n int
			if err := tx.Raw("SELECT COUNT(*) FROM t").Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			other, err := openGorm(driver, sqliteDSN(driver, path))
			if err != nil {
				t.Fatal(err)
			}
			otherDB, err := other.DB()
			if err != nil {
				t.Fatal(err)
			}
			defer otherDB.Close()
			otherDB.SetMaxOpenConns(1)
			if err := other.Exec("PRAGMA busy_timeout = 50").Error; err != nil {
				t.Fatal(err)
			}
			if err := other.Exec("INSERT INTO t (id) VALUES (1)").Error; err == nil {
				t.Error("a write beside a transaction that has only read succeeded: the transaction did not take the write lock at BEGIN")
			}
		})
	}
}

// TestImportsNothingInternal keeps the sample copyable: none of its files,
// tests included, imports a package under internal/.
func TestImportsNothingInternal(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found in the working directory")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains("/"+path+"/", "/internal/") {
				t.Errorf("%s imports %s: the sample must only use leasehold's public packages", name, path)
			}
		}
	}
}

// TestSQLiteFilePathGetsTheDefaultSettings: a bare file path given as
// -dsn is opened with the default DSN's settings (a busy timeout above
// all, which the pure-Go driver otherwise lacks); a file: URI, a DSN with
// parameters and ":memory:" are used as given.
func TestSQLiteFilePathGetsTheDefaultSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	cases := []struct {
		driver, dsn, want string
	}{
		{driverSQLitePure, path, sqliteDSN(driverSQLitePure, path)},
		{driverSQLite, path, sqliteDSN(driverSQLite, path)},
		{driverSQLitePure, "file:" + path, "file:" + path},
		{driverSQLitePure, path + "?_pragma=busy_timeout(100)", path + "?_pragma=busy_timeout(100)"},
		{driverSQLitePure, ":memory:", ":memory:"},
	}
	for _, c := range cases {
		cfg, err := parseConfig([]string{"-driver", c.driver, "-dsn", c.dsn}, func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Fatalf("-driver %s -dsn %s: %v", c.driver, c.dsn, err)
		}
		if cfg.dsn != c.want {
			t.Errorf("-driver %s -dsn %s opens %q, want %q", c.driver, c.dsn, cfg.dsn, c.want)
		}
	}
}
