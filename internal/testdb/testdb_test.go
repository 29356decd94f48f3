package testdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/redact"
	"go.uber.org/goleak"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

func TestMain(m *testing.M) {
	code := Run(m)
	if code == 0 {
		// After Run every server is stopped, so no goroutine of this
		// package (process reapers, admin pools) may be left.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines leaked: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

var quiet = &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)}

// selectOne connects with a new gorm handle and runs SELECT 1.
func selectOne(t *testing.T, driver, dsn string) error {
	t.Helper()
	db, err := dbopen.Open(driver, dsn, quiet)
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var one int
	if err := db.WithContext(ctx).Raw("SELECT 1").Scan(&one).Error; err != nil {
		return err
	}
	if one != 1 {
		return fmt.Errorf("SELECT 1 returned %d", one)
	}
	return nil
}

// TestServerLifecycle starts a private server of each kind, uses it, stops
// it, starts it again on the same port and data directory, and closes it.
func TestServerLifecycle(t *testing.T) {
	kinds := []struct {
		kind, dialect, driver, params string
		start                         func(context.Context) (*Server, error)
	}{
		{KindPostgres, "postgres", dbopen.Postgres, "", StartPostgres},
		{KindMySQL, "mysql", dbopen.MySQL, "?parseTime=true", StartMariaDB},
	}
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			began := time.Now()
			srv, err := k.start(ctx)
			if errors.Is(err, ErrBinariesMissing) {
				unavailable(t, k.dialect, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: setup and first start took %s (port %d, pid %d)", k.kind, time.Since(began).Round(time.Millisecond), srv.Port(), srv.Pid())
			defer func() {
				if err := srv.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				if _, err := os.Stat(srv.dir.root); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Close left the server directory %s behind (stat: %v)", srv.dir.root, err)
				}
				if err := srv.Start(); err == nil {
					t.Error("Start after Close succeeded, want an error")
				}
			}()

			if srv.Kind() != k.kind || srv.Pid() == 0 || !srv.Running() {
				t.Fatalf("Kind=%q Pid=%d Running=%v, want %q, non-zero, true", srv.Kind(), srv.Pid(), srv.Running(), k.kind)
			}
			if err := srv.CreateDatabase(ctx, "lifecycle"); err != nil {
				t.Fatal(err)
			}
			if err := srv.CreateDatabase(ctx, "bad name; DROP"); err == nil {
				t.Error("CreateDatabase accepted a name with a space and a semicolon")
			}
			dsn := srv.DSN("lifecycle") + k.params
			if err := selectOne(t, k.driver, dsn); err != nil {
				t.Fatalf("before Stop: %v", err)
			}
			// A table written before the restart must survive it: Start
			// reuses the data directory.
			db, err := dbopen.Open(k.driver, dsn, quiet)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Exec("CREATE TABLE kept (id INT PRIMARY KEY)").Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Exec("INSERT INTO kept (id) VALUES (7)").Error; err != nil {
				t.Fatal(err)
			}
			// The server's temporary files go to a directory of its own.
			if !strings.HasPrefix(srv.dir.tmpDir, srv.dir.root+string(os.PathSeparator)) {
				t.Errorf("temporary directory %s is not inside the server directory %s", srv.dir.tmpDir, srv.dir.root)
			}
			if k.kind == KindMySQL {
				var tmp string
				if err := db.Raw("SELECT @@tmpdir").Row().Scan(&tmp); err != nil {
					t.Fatal(err)
				}
				if filepath.Clean(tmp) != srv.dir.tmpDir {
					t.Errorf("@@tmpdir = %q, want the server's own %q", tmp, srv.dir.tmpDir)
				}
			}
			closeGorm(t, db)

			port := srv.Port()
			began = time.Now()
			if err := srv.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			t.Logf("%s: Stop took %s", k.kind, time.Since(began).Round(time.Millisecond))
			if srv.Running() || srv.Pid() != 0 {
				t.Fatalf("after Stop: Running=%v Pid=%d", srv.Running(), srv.Pid())
			}
			if err := srv.Stop(); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			if err := selectOne(t, k.driver, dsn); err == nil {
				t.Fatal("SELECT 1 succeeded while the server was stopped")
			}
			if err := srv.CreateDatabase(ctx, "while_stopped"); err == nil {
				t.Fatal("CreateDatabase succeeded while the server was stopped")
			}

			// While another process holds the port, Start must fail, say
			// why, and show the end of the server log.
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				t.Fatalf("occupy the port: %v", err)
			}
			began = time.Now()
			err = srv.Start()
			l.Close()
			t.Logf("%s: failed Start took %s: %v", k.kind, time.Since(began).Round(time.Millisecond), err)
			if err == nil {
				t.Fatal("Start succeeded while the port was taken")
			}
			if !errors.Is(err, errPortInUse) || !strings.Contains(err.Error(), "--- end of ") {
				t.Fatalf("Start on a taken port: error does not report the port or lacks the log tail: %v", err)
			}
			if srv.Running() {
				t.Fatal("Running after a failed Start")
			}

			began = time.Now()
			if err := srv.Start(); err != nil {
				t.Fatalf("Start after Stop: %v", err)
			}
			t.Logf("%s: restart after Stop took %s", k.kind, time.Since(began).Round(time.Millisecond))
			if srv.Port() != port {
				t.Fatalf("port changed from %d to %d", port, srv.Port())
			}
			if err := srv.Start(); err != nil {
				t.Fatalf("Start while running: %v", err)
			}
			checkKept(t, k.driver, dsn)

			pid := srv.Pid()
			if err := srv.Restart(); err != nil {
				t.Fatalf("Restart: %v", err)
			}
			if srv.Pid() == pid || srv.Pid() == 0 {
				t.Errorf("Restart: pid %d before, %d after, want a new process", pid, srv.Pid())
			}
			checkKept(t, k.driver, dsn)
			if err := srv.Stop(); err != nil {
				t.Fatalf("final Stop: %v", err)
			}
		})
	}
}

func closeGorm(t *testing.T, db *gorm.DB) {
	t.Helper()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlDB.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkKept checks that the row written before a restart is still there.
func checkKept(t *testing.T, driver, dsn string) {
	t.Helper()
	db, err := dbopen.Open(driver, dsn, quiet)
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	defer closeGorm(t, db)
	var id int
	if err := db.Raw("SELECT id FROM kept").Scan(&id).Error; err != nil || id != 7 {
		t.Fatalf("after restart: SELECT id FROM kept = %d, %v; want 7, nil", id, err)
	}
}

// TestTargetsOpenFreshDatabases opens two databases on every target and
// checks that each works and that they are separate and empty.
func TestTargetsOpenFreshDatabases(t *testing.T) {
	for _, tg := range Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			first := tg.Open(t)
			if err := first.Exec("CREATE TABLE marker (id INT PRIMARY KEY)").Error; err != nil {
				t.Fatalf("create table: %v", err)
			}
			second := tg.Open(t)
			if second.Migrator().HasTable("marker") {
				t.Fatal("the second database is not fresh: it has the first one's table")
			}
			var one int
			if err := second.Raw("SELECT 1").Scan(&one).Error; err != nil || one != 1 {
				t.Fatalf("SELECT 1 = %d, %v", one, err)
			}
			if got := first.Name(); got != tg.Dialect {
				t.Errorf("dialector %q, want %q", got, tg.Dialect)
			}

			// The DSN form is for other processes; check it connects.
			driver, dsn := tg.OpenDSN(t)
			if err := selectOne(t, driver, dsn); err != nil {
				t.Fatalf("OpenDSN gave %s %q, which does not work: %s",
					driver, redact.DSN(driver, dsn), redact.Message(driver, dsn, err.Error()))
			}

			if tg.External() {
				return // no private server behind it; Server skips
			}
			srv := tg.Server(t)
			switch tg.Dialect {
			case "sqlite":
				if srv != nil {
					t.Errorf("Server(%s) = %v, want nil", tg.Name, srv)
				}
			default:
				if srv == nil || srv.Kind() != tg.Name || !srv.Running() {
					t.Errorf("Server(%s) is nil, of the wrong kind or not running", tg.Name)
				}
			}
		})
	}
}

// TestSharedServerIsStartedAgain stops a shared server inside a subtest
// and checks that the subtest's cleanup started it again, so that later
// tests find it running.
func TestSharedServerIsStartedAgain(t *testing.T) {
	for _, tg := range Targets() {
		if tg.Dialect == "sqlite" {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			var srv *Server
			t.Run("stops it", func(t *testing.T) {
				db := tg.Open(t)
				srv = tg.Server(t)
				if err := srv.Restart(); err != nil {
					t.Fatal(err)
				}
				// The old pool's connections died with the old process;
				// database/sql replaces them, possibly after one error.
				var one int
				var err error
				for range 2 {
					if err = db.Raw("SELECT 1").Scan(&one).Error; err == nil {
						break
					}
				}
				if err != nil {
					t.Fatalf("SELECT 1 after Restart: %v", err)
				}
				if err := srv.Stop(); err != nil {
					t.Fatal(err)
				}
			})
			if srv == nil {
				t.Skip("the subtest was skipped")
			}
			if !srv.Running() {
				t.Fatal("the shared server is still stopped after the test that stopped it ended")
			}
			tg.Open(t) // creating a database needs the server up
		})
	}
}

func TestRequiredAndDecide(t *testing.T) {
	reason := fmt.Errorf("%w: initdb not found in PATH", ErrBinariesMissing)
	tests := []struct {
		list, dialect string
		fail          bool
	}{
		{"", "postgres", false},
		{"postgres,mysql,sqlite", "postgres", true},
		{"postgres,mysql,sqlite", "mysql", true},
		{"postgres,mysql,sqlite", "sqlite", true},
		{" Postgres , MYSQL ", "mysql", true},
		{"postgres", "mysql", false},
		{"postgresql", "postgres", false},
		{",,", "sqlite", false},
	}
	for _, tt := range tests {
		fail, msg := decide(tt.list, tt.dialect, reason)
		if fail != tt.fail {
			t.Errorf("decide(%q, %q) fail = %v, want %v", tt.list, tt.dialect, fail, tt.fail)
		}
		if requiredIn(tt.list, tt.dialect) != tt.fail {
			t.Errorf("requiredIn(%q, %q) = %v, want %v", tt.list, tt.dialect, !tt.fail, tt.fail)
		}
		if !strings.Contains(msg, "initdb not found") || !strings.Contains(msg, RequireEnv) {
			t.Errorf("decide(%q, %q) message %q lacks the reason or the variable name", tt.list, tt.dialect, msg)
		}
	}
	t.Setenv(RequireEnv, "sqlite")
	if !Required("sqlite") || Required("postgres") {
		t.Errorf("with %s=sqlite: Required(sqlite)=%v Required(postgres)=%v", RequireEnv, Required("sqlite"), Required("postgres"))
	}
}

func TestFindBinaryMissing(t *testing.T) {
	_, err := findBinary("no-such-binary-leasehold", "/nonexistent/bin/no-such-binary-leasehold")
	if !errors.Is(err, ErrBinariesMissing) {
		t.Fatalf("err = %v, want ErrBinariesMissing", err)
	}
	if !strings.Contains(err.Error(), "no-such-binary-leasehold not found") {
		t.Errorf("error %q does not name the binary", err)
	}
}

func TestUniqueName(t *testing.T) {
	a, b := uniqueName(t), uniqueName(t)
	if a == b || !validName.MatchString(a) || !strings.HasPrefix(a, "t_testuniquename_") {
		t.Fatalf("uniqueName gave %q and %q", a, b)
	}
	t.Run("a very long subtest name with spaces/slashes and ÜNICODE that goes on and on", func(t *testing.T) {
		if n := uniqueName(t); !validName.MatchString(n) {
			t.Fatalf("uniqueName gave invalid %q", n)
		}
	})
}

func TestSweepStaleRemovesOnlyDeadOwners(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	// A pid that surely belongs to no process: one that has exited and
	// been reaped.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid

	mkdir := func(name, owner string) string {
		dir := filepath.Join(tmp, dirPrefix+name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mkdir("postgres-1", strconv.Itoa(dead))
	alive := mkdir("postgres-2", "1") // init is always alive
	mine := mkdir("mysql-3", strconv.Itoa(os.Getpid()))
	unknown := mkdir("mysql-4", "")
	other := filepath.Join(tmp, "unrelated")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}

	sweepStale()

	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory of dead pid %d was not removed (stat: %v)", dead, err)
	}
	for _, dir := range []string{alive, mine, unknown, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed or is unreadable: %v", dir, err)
		}
	}
}

// TestStopKillsAStuckServer freezes a shared server with SIGSTOP, so that
// it cannot act on the shutdown signal, and checks that Stop kills its
// process group after stopTimeout. Server's cleanup then starts it again
// (after crash recovery), which the next Open relies on.
func TestStopKillsAStuckServer(t *testing.T) {
	saved := stopTimeout
	stopTimeout = 300 * time.Millisecond
	defer func() { stopTimeout = saved }()
	for _, tg := range Targets() {
		if tg.Dialect == "sqlite" {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			t.Run("freeze and stop", func(t *testing.T) {
				srv := tg.Server(t)
				pid := srv.Pid()
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				began := time.Now()
				if err := srv.Stop(); err != nil {
					t.Fatalf("Stop of a frozen server: %v", err)
				}
				took := time.Since(began)
				if took < stopTimeout {
					t.Errorf("Stop returned after %s, before the %s bound: the frozen server cannot have exited", took, stopTimeout)
				}
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("pid %d still exists after Stop (kill 0: %v)", pid, err)
				}
			})
			db := tg.Open(t)
			var one int
			if err := db.Raw("SELECT 1").Scan(&one).Error; err != nil || one != 1 {
				t.Fatalf("after the killed server was started again: SELECT 1 = %d, %v", one, err)
			}
		})
	}
}

// TestWaitGroupExited: the wait sees every running process of a group, the
// leader's children included, and ends when the group is killed.
func TestWaitGroupExited(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	pgid := cmd.Process.Pid
	defer func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}()
	// The shell and its two sleeps, once the shell has started them.
	live := waitGroupSize(t, pgid, 3)
	if got := waitGroupExited(pgid, 50*time.Millisecond); len(got) != 3 {
		t.Fatalf("waitGroupExited of a running group = %v, want its 3 processes %v", got, live)
	}
	// Kill the leader alone: its children live on in the group.
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	if got := waitGroupExited(pgid, 50*time.Millisecond); len(got) != 2 {
		t.Fatalf("after the leader was killed, waitGroupExited = %v, want its 2 children", got)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := waitGroupExited(pgid, 10*time.Second); len(got) != 0 {
		t.Fatalf("after the group was killed, waitGroupExited = %v, want none", got)
	}
}

// waitGroupSize waits until group pgid has n running processes.
func waitGroupSize(t *testing.T, pgid, n int) []int {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		live := groupRunning(pgid)
		if len(live) == n {
			return live
		}
		select {
		case <-deadline.C:
			t.Fatalf("group %d has processes %v, want %d", pgid, live, n)
		case <-poll.C:
		}
	}
}

// TestStartPostgresWithSettings checks that extra settings reach the
// server, override the defaults, and that a malformed one is refused.
func TestStartPostgresWithSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, bad := range []string{"max_connections", "=5"} {
		if _, err := StartPostgresWith(ctx, bad); err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("StartPostgresWith(%q): err = %v, want an error naming the setting", bad, err)
		}
	}
	srv, err := StartPostgresWith(ctx, "max_connections=321", "work_mem=8MB")
	if errors.Is(err, ErrBinariesMissing) {
		unavailable(t, "postgres", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	db, err := dbopen.Open(dbopen.Postgres, srv.DSN(""), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer closeGorm(t, db)
	for name, want := range map[string]string{"max_connections": "321", "work_mem": "8MB", "fsync": "off"} {
		var got string
		if err := db.WithContext(ctx).Raw("SELECT current_setting(?)", name).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}
