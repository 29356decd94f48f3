package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
	procs "github.com/leasehold/leasehold/internal/proc"
	"github.com/leasehold/leasehold/internal/redact"
	"github.com/leasehold/leasehold/internal/testdb"
)

// planted is the password the secret tests plant in every DSN.
const planted = "Pw7Secr3tZ"

// plantedDSNs are the forms of DSN, each with the planted password, for a
// server on a loopback port nothing listens on.
var plantedDSNs = []struct{ form, dsn string }{
	{"url", "postgres://alice:" + planted + "@127.0.0.1:1/app?connect_timeout=5"},
	{"key=value", "host=127.0.0.1 port=1 user=alice password=" + planted + " dbname=app connect_timeout=5"},
	{"mysql", "alice:" + planted + "@tcp(127.0.0.1:1)/app?timeout=5s"},
}

// unreachablePG points libpq's defaults, which pgx reads, at a loopback
// port nothing listens on.
var unreachablePG = map[string]string{"PGHOST": "127.0.0.1", "PGPORT": "1", "PGCONNECT_TIMEOUT": "5"}

// allDrivers lists every driver name the command accepts.
var allDrivers = []string{dbopen.SQLite, dbopen.SQLitePure, dbopen.Postgres, dbopen.MySQL, dbopen.SQLServer}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestSecretsNeverPrinted plants a password in a DSN of every form, gives it
// to every driver, and runs every subcommand that opens a database, and
// the sample until it logs a retry or exits. The password appears in no
// output, and no file appears in the working directory. A server's DSN
// given to a SQLite driver is a usage error that names -driver.
func TestSecretsNeverPrinted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Built from the module, before the test moves to its directory.
	bin, err := procs.Build(ctx, "../../sample", t.TempDir(), "sample")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	// pgx takes a DSN it cannot parse as a URL for settings, and would
	// try the default server for the rest: make that unreachable too.
	for k, v := range unreachablePG {
		t.Setenv(k, v)
	}
	for _, driver := range allDrivers {
		for _, p := range plantedDSNs {
			for _, sub := range [][]string{
				{"status"}, {"status", "-json"}, {"watch", "-count", "1"}, {"migrate"}, {"migrate", "-dry-run"},
				{"resign", "global/x"}, {"resign", "global/x", "-prefer", "node-b"},
			} {
				for _, viaEnv := range []bool{true, false} {
					env, args := dbEnv(driver, p.dsn), sub
					if !viaEnv {
						env, args = nil, append([]string{"-driver", driver, "-dsn", p.dsn}, sub...)
					}
					r := runCmd(t, env, args...)
					what := fmt.Sprintf("%s with a %s DSN, %v (env %v)", driver, p.form, sub, viaEnv)
					if strings.Contains(r.stdout+r.stderr, planted) {
						t.Errorf("%s: the password is in the output: %+v", what, r)
					}
					if r.code == exitOK {
						t.Errorf("%s: exit 0 on a database nothing listens for: %+v", what, r)
					}
					if isSQLite(driver) && (r.code != exitUsage || !strings.Contains(r.stderr, "set -driver ")) {
						t.Errorf("%s: want a usage error that says which -driver to set: %+v", what, r)
					}
					if names := entries(t, dir); len(names) > 0 {
						t.Fatalf("%s: created %q in the working directory", what, names)
					}
				}
			}
		}
	}

	t.Run("sample", func(t *testing.T) {
		for _, driver := range allDrivers {
			for _, p := range plantedDSNs {
				for _, format := range []string{"console", "json"} {
					what := fmt.Sprintf("sample, %s with a %s DSN, %s log", driver, p.form, format)
					out, code := runSampleUntilRetry(t, bin, dir, driver, p.dsn, format)
					if strings.Contains(out, planted) {
						t.Errorf("%s: the password is in the output:\n%s", what, out)
					}
					if isSQLite(driver) && (code != exitUsage || !strings.Contains(out, "set -driver ")) {
						t.Errorf("%s: exit %d, want a usage error that says which -driver to set:\n%s", what, code, out)
					}
					if !isSQLite(driver) && !strings.Contains(out, "retrying") {
						t.Errorf("%s: exit %d without logging a retry:\n%s", what, code, out)
					}
					if names := entries(t, dir); len(names) > 0 {
						t.Fatalf("%s: created %q in the working directory", what, names)
					}
				}
			}
		}
	})
}

// signalWriter collects what is written, and closes seen once it holds
// want.
type signalWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
	// on, unless nil, is called once in the Write that first holds want,
	// before it returns: what it does is done before the writer goes on.
	on   func()
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() {
			if w.on != nil {
				w.on()
			}
			close(w.seen)
		})
	}
	return n, err
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// runSampleUntilRetry runs the sample binary in dir on the database until
// it logs a retry, then stops it with SIGTERM, or until it exits; it
// returns its output and exit status.
func runSampleUntilRetry(t *testing.T, bin, dir, driver, dsn, format string) (string, int) {
	t.Helper()
	out := &signalWriter{want: "retrying", seen: make(chan struct{})}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{"HOSTNAME=test-node", "CLUSTER_NAME=test", "LEASEHOLD_DRIVER=" + driver, "LEASEHOLD_DSN=" + dsn,
		"LOG_FORMAT=" + format, "PATH=" + os.Getenv("PATH")}
	for k, v := range unreachablePG {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := procs.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.seen:
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	case <-p.Done():
	case <-time.After(wait):
		_ = p.Signal(syscall.SIGKILL)
		t.Fatalf("the sample neither logged a retry nor exited within %v:\n%s", wait, out.String())
	}
	if !p.WaitExit(context.Background(), wait) {
		_ = p.Signal(syscall.SIGKILL)
		<-p.Done()
		t.Fatalf("the sample did not exit within %v of SIGTERM:\n%s", wait, out.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(p.Err(), &ee) {
		code = ee.ExitCode()
	}
	return out.String(), code
}

// TestNoDefaultDatabase: a subcommand that opens a database needs -dsn;
// without one it says how to give one and creates nothing. ddl needs none.
func TestNoDefaultDatabase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, sub := range [][]string{{"status"}, {"status", "-json"}, {"watch", "-count", "1"}, {"migrate"}, {"migrate", "-dry-run"}, {"resign", "global/x"}} {
		for _, driver := range []string{"", dbopen.SQLite, dbopen.SQLitePure} {
			args := sub
			if driver != "" {
				args = append([]string{"-driver", driver}, sub...)
			}
			r := runCmd(t, nil, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "flag -dsn (or LEASEHOLD_DSN) is required") ||
				!strings.Contains(r.stderr, "-dsn ./leasehold-sample.db") {
				t.Errorf("%v without a DSN: want exit 2 and how to give one: %+v", args, r)
			}
			if names := entries(t, dir); len(names) > 0 {
				t.Fatalf("%v created %q", args, names)
			}
		}
	}
	if r := runCmd(t, nil, "ddl"); r.code != exitOK || !strings.Contains(r.stdout, "CREATE TABLE") {
		t.Errorf("ddl without a DSN: %+v", r)
	}
}

// TestReadingCommandsCreateNothing: status, watch and resign on a SQLite
// path that does not exist fail naming the path, and migrate -dry-run
// prints what migrate would create there; none creates the file. On an
// existing empty database they create no table.
func TestReadingCommandsCreateNothing(t *testing.T) {
	reading := [][]string{{"status"}, {"status", "-json"}, {"watch", "-count", "1"}, {"migrate", "-dry-run"}, {"resign", "global/x"}}
	for _, driver := range sqliteDrivers() {
		t.Run(driver, func(t *testing.T) {
			dir := t.TempDir()
			for _, dsn := range []string{filepath.Join(dir, "absent.db"), "file:" + filepath.Join(dir, "absent.db") + "?_pragma=busy_timeout(1000)"} {
				for _, sub := range reading {
					r := runCmd(t, dbEnv(driver, dsn), sub...)
					if sub[0] == "migrate" {
						// A dry run says what migrate would do: create the file.
						if r.code != exitOK || !strings.Contains(r.stdout, "no file at "+filepath.Join(dir, "absent.db")+" yet") ||
							!strings.Contains(r.stdout, "CREATE TABLE") {
							t.Errorf("%v on %s: want exit 0, the path and the script from nothing: %+v", sub, dsn, r)
						}
					} else if r.code != exitFailure || !strings.Contains(r.stderr, "no SQLite database at "+filepath.Join(dir, "absent.db")) {
						t.Errorf("%v on %s: want exit 1 naming the path: %+v", sub, dsn, r)
					}
					if names := entries(t, dir); len(names) > 0 {
						t.Fatalf("%v on %s created %q", sub, dsn, names)
					}
				}
			}

			// An empty database: a file with no table at all.
			path := filepath.Join(dir, "empty.db")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, sub := range reading {
				r := runCmd(t, dbEnv(driver, path), sub...)
				dry := sub[0] == "migrate"
				if dry && (r.code != exitOK || !strings.Contains(r.stdout, "nothing was applied")) {
					t.Errorf("%v on an empty database: %+v", sub, r)
				}
				if !dry && (r.code != exitFailure || !strings.Contains(r.stderr, "no leasehold tables")) {
					t.Errorf("%v on an empty database: want exit 1, no leasehold tables: %+v", sub, r)
				}
				if tables := sqliteTables(t, driver, path); len(tables) > 0 {
					t.Fatalf("%v on an empty database created the tables %q", sub, tables)
				}
			}

			// A migrated database, closed: the reads leave no file beside
			// it, not even the -wal and -shm of its WAL mode.
			migrated := filepath.Join(t.TempDir(), "migrated.db")
			if r := runCmd(t, dbEnv(driver, migrated), "migrate"); r.code != exitOK {
				t.Fatalf("migrate: %+v", r)
			}
			before := entries(t, filepath.Dir(migrated))
			for _, sub := range [][]string{{"status"}, {"watch", "-count", "1"}, {"migrate", "-dry-run"}, {"resign", "global/x"}} {
				r := runCmd(t, dbEnv(driver, migrated), sub...)
				if want := map[bool]int{true: exitFailure, false: exitOK}[sub[0] == "resign"]; r.code != want {
					t.Errorf("%v on a migrated database: exit %d, want %d: %+v", sub, r.code, want, r)
				}
				if after := entries(t, filepath.Dir(migrated)); !slices.Equal(after, before) {
					t.Fatalf("%v on a migrated database left %q beside it; before: %q", sub, after, before)
				}
			}
		})
	}
}

// sqliteDrivers lists the SQLite drivers this test binary can use.
func sqliteDrivers() []string {
	if cgoEnabled {
		return []string{dbopen.SQLitePure, dbopen.SQLite}
	}
	return []string{dbopen.SQLitePure}
}

// sqliteTables lists the tables of the SQLite file at path.
func sqliteTables(t *testing.T, driver, path string) []string {
	t.Helper()
	db, err := dbopen.Open(driver, "file:"+path+"?mode=ro", &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	var names []string
	if err := db.Raw("SELECT name FROM sqlite_master WHERE type = 'table'").Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	return names
}

// TestCommandsNameTheDatabase: every subcommand names the driver and the
// DSN it used, the password replaced: status and watch in their first
// line, status -json on stderr, migrate and resign in their success line.
func TestCommandsNameTheDatabase(t *testing.T) {
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			driver, dsn := tg.OpenDSN(t)
			want := "the " + driver + " database at " + redact.DSN(driver, dsn)
			env := dbEnv(driver, dsn)
			for _, tc := range []struct {
				args   []string
				stream string // "stdout first line", "stdout", "stderr"
			}{
				{[]string{"migrate", "-dry-run"}, "stdout first line"},
				{[]string{"migrate"}, "stdout first line"},
				{[]string{"migrate"}, "stdout first line"},
				{[]string{"migrate", "-dry-run"}, "stdout first line"},
				{[]string{"status"}, "stdout first line"},
				{[]string{"status", "-json"}, "stderr"},
				{[]string{"watch", "-count", "1"}, "stdout first line"},
			} {
				r := runCmd(t, env, tc.args...)
				got := r.stderr
				if tc.stream != "stderr" {
					got, _, _ = strings.Cut(r.stdout, "\n")
				}
				if r.code != exitOK || !strings.Contains(got, want) {
					t.Errorf("%v: want %q in the %s: %+v", tc.args, want, tc.stream, r)
				}
			}
			_, l := holdLease(t, driver, dsn, "cli-name")
			_, _ = holdLeaseAs(t, "node-b", driver, dsn, "cli-name-b")
			r := runCmd(t, env, "resign", l.Key(), "-prefer", "node-b")
			if r.code != exitOK || !strings.Contains(r.stdout, want) {
				t.Errorf("resign: want %q in its success line: %+v", want, r)
			}
		})
	}
}

// TestUsagePrintedOnce: -h and every usage error print the usage once.
func TestUsagePrintedOnce(t *testing.T) {
	for _, args := range [][]string{
		{"-h"}, {"-bogus"}, {"frobnicate"}, {}, {"-driver", "oracle", "status"},
		{"status", "-h"}, {"status", "-bogus"}, {"watch", "-interval", "soon"}, {"watch", "-interval", "99ms"},
		{"migrate", "-h"}, {"ddl", "-from", "99"}, {"resign"}, {"resign", "-h"},
		{"-dsn", "postgres://alice:pw@127.0.0.1:1/app", "status"},
	} {
		r := runCmd(t, nil, args...)
		if n := strings.Count(r.stderr, "Usage: leasehold"); n != 1 {
			t.Errorf("%v printed the usage %d times:\n%s", args, n, r.stderr)
		}
		if n := strings.Count(r.stderr, "leasehold: "); !slices.Contains(args, "-h") && n != 1 {
			t.Errorf("%v printed %d error lines:\n%s", args, n, r.stderr)
		}
	}
	r := runCmd(t, nil, "watch", "-interval", "99ms")
	if r.code != exitUsage || !strings.Contains(r.stderr, "invalid value 99ms for flag -interval: must be at least 100ms") {
		t.Errorf("watch -interval 99ms: %+v", r)
	}
}

// TestResignPreferredHolder: resign refuses a -prefer that no live process
// answers to, listing the live ones, and records nothing; -force records
// it anyway; a live process's holder string, node or instance id is
// accepted.
func TestResignPreferredHolder(t *testing.T) {
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			driver, dsn := tg.OpenDSN(t)
			env := dbEnv(driver, dsn)
			a, la := holdLease(t, driver, dsn, "cli-prefer")
			b, _ := holdLeaseAs(t, "node-b", driver, dsn, "cli-prefer-b")
			for _, bad := range []string{"bad holder!", "node-c", "node-b/eu/nope"} {
				r := runCmd(t, env, "resign", la.Key(), "-prefer", bad)
				if r.code != exitUsage || !strings.Contains(r.stderr, fmt.Sprintf("invalid value %q for flag -prefer", bad)) ||
					!strings.Contains(r.stderr, b.Holder()) || !strings.Contains(r.stderr, "-force") {
					t.Errorf("resign -prefer %q: want exit 2 listing %s and naming -force: %+v", bad, b.Holder(), r)
				}
				if strings.Contains(r.stderr, "are "+a.Holder()) {
					t.Errorf("resign -prefer %q lists the current holder among the others: %s", bad, r.stderr)
				}
				select {
				case <-la.Context().Done():
					t.Fatalf("resign -prefer %q was refused, yet the holder ended its term", bad)
				default:
				}
			}
			if r := runCmd(t, env, "resign", "global/no-such-lease", "-prefer", "node-c"); r.code != exitFailure ||
				!strings.Contains(r.stderr, "no lease named") {
				t.Errorf("resign of an unknown lease -prefer node-c: want the unknown lease reported: %+v", r)
			}
			r := runCmd(t, env, "resign", la.Key(), "-prefer", "node-c", "-force")
			if r.code != exitOK || !strings.Contains(r.stdout, "node-c") {
				t.Fatalf("resign -prefer node-c -force: %+v", r)
			}
			select {
			case <-la.Context().Done():
			case <-time.After(wait):
				t.Fatalf("the holder did not end its term within %v of the forced resign request", wait)
			}
		})
	}
}

// TestResignPrefersALiveProcess: a -prefer naming a live process's node,
// instance id or holder string is accepted.
func TestResignPrefersALiveProcess(t *testing.T) {
	tg := testdb.Target{Name: "sqlite-pure", Dialect: "sqlite"}
	driver, dsn := tg.OpenDSN(t)
	b, _ := holdLeaseAs(t, "node-b", driver, dsn, "cli-live-b")
	id, err := identity.ParseHolder(b.Holder())
	if err != nil {
		t.Fatal(err)
	}
	for i, good := range []string{id.Node, id.Instance, b.Holder()} {
		_, l := holdLease(t, driver, dsn, fmt.Sprintf("cli-live-%d", i))
		r := runCmd(t, dbEnv(driver, dsn), "resign", l.Key(), "-prefer", good)
		if r.code != exitOK || !strings.Contains(r.stdout, good) {
			t.Errorf("resign -prefer %q (live): %+v", good, r)
		}
	}
}

// faultProxy forwards TCP connections to a server, and can cut them:
// "down" resets every connection, "blackhole" accepts them and forwards
// nothing either way.
type faultProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	mode   string // "", "down" or "blackhole"
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.set("down")
		p.wg.Wait()
	})
	return p
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		if mode == "down" {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		if mode == "blackhole" {
			continue // held open, silent, until set closes it
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies from src to dst while the proxy forwards; in a blackhole it
// drops what it reads.
func (p *faultProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			drop := p.mode == "blackhole"
			p.mu.Unlock()
			if !drop {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

// set changes the mode. Leaving a fault closes every connection it held,
// as a database that comes back has lost its sessions; entering "down"
// closes them too.
func (p *faultProxy) set(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != "" || mode == "down" {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
	p.mode = mode
}

// TestWatchRidesOutAnOutage: watch keeps going through a database that
// goes away mid-watch, refused or silent, saying so on stderr, and reads
// again when it is back.
func TestWatchRidesOutAnOutage(t *testing.T) {
	for _, tg := range testdb.Targets() {
		if tg.Dialect != "postgres" && tg.Dialect != "mysql" {
			continue
		}
		for _, fault := range []string{"down", "blackhole"} {
			t.Run(tg.Name+"/"+fault, func(t *testing.T) {
				srv := tg.Server(t)
				driver, dsn := tg.OpenDSN(t)
				if r := runCmd(t, dbEnv(driver, dsn), "migrate"); r.code != exitOK {
					t.Fatalf("migrate: %+v", r)
				}
				addr := fmt.Sprintf("127.0.0.1:%d", srv.Port())
				proxy := startProxy(t, addr)
				_, proxyPort, err := net.SplitHostPort(proxy.ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				// "host=127.0.0.1 port=P ..." or "user@tcp(127.0.0.1:P)/db"
				port := fmt.Sprintf("port=%d ", srv.Port())
				viaProxy := strings.Replace(strings.Replace(dsn, addr, "127.0.0.1:"+proxyPort, 1), port, "port="+proxyPort+" ", 1)
				if viaProxy == dsn {
					t.Fatalf("the DSN names neither %s nor %s", addr, port)
				}

				// The fault starts as the first refresh is printed, and
				// ends as the second failed read is: in the writes
				// themselves, so that no read of watch comes between,
				// however late a busy machine runs a goroutine. The
				// timeout is that of a read that must succeed, through
				// the proxy, once the fault is over.
				stdout := &signalWriter{want: "--- refresh 1,", seen: make(chan struct{}), on: func() { proxy.set(fault) }}
				stderr := &signalWriter{want: "(2 in a row)", seen: make(chan struct{}), on: func() { proxy.set("") }}
				ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
				defer cancel()
				code := run(ctx, []string{"watch", "-interval", "100ms", "-timeout", "3s", "-count", "2", "-full"}, stdout, stderr,
					func(k string) string { return dbEnv(driver, viaProxy)[k] })
				out, errs := stdout.String(), stderr.String()
				if code != exitOK {
					t.Fatalf("watch exited %d:\nstdout:\n%s\nstderr:\n%s", code, out, errs)
				}
				if n := strings.Count(out, "--- refresh "); n != 2 {
					t.Errorf("watch -count 2 printed %d refreshes:\n%s", n, out)
				}
				if !strings.Contains(errs, "failed (1 in a row)") || !strings.Contains(errs, "again after 2 failed reads") {
					t.Errorf("stderr does not tell of the failed reads and the recovery:\n%s", errs)
				}
				if fault == "blackhole" && !regexp.MustCompile(`deadline exceeded|timeout|i/o timeout`).MatchString(errs) {
					t.Errorf("a silent database: stderr does not say the read timed out:\n%s", errs)
				}
			})
		}
	}
}

// TestSQLiteDSNForAccess: the DSN a subcommand opens a SQLite database
// with: query_only for reads, never created for reads and resign, a file:
// URI kept with a mode added unless it names one.
func TestSQLiteDSNForAccess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		driver, dsn string
		a           access
		want        string
	}{
		{dbopen.SQLitePure, path, create, dbopen.SQLiteDSN(dbopen.SQLitePure, path)},
		{dbopen.SQLitePure, path, readOnly, "file:" + path + "?mode=rw&_pragma=busy_timeout(5000)&_pragma=query_only(1)"},
		{dbopen.SQLite, path, readOnly, "file:" + path + "?mode=rw&_busy_timeout=5000&_query_only=1"},
		{dbopen.SQLitePure, path, readWrite, dbopen.SQLiteDSN(dbopen.SQLitePure, path) + "&mode=rw"},
		{dbopen.SQLite, "file:" + path + "?_busy_timeout=5000&_journal_mode=WAL", readOnly,
			"file:" + path + "?_busy_timeout=5000&_journal_mode=WAL&mode=rw&_query_only=1"},
		{dbopen.SQLitePure, "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=query_only(0)", readOnly,
			"file:" + path + "?_pragma=busy_timeout(5000)&_pragma=query_only(0)&mode=rw"},
		{dbopen.SQLite, "file:" + path, readWrite, "file:" + path + "?mode=rw"},
		{dbopen.SQLite, "file:" + path + "?mode=ro", readOnly, "file:" + path + "?mode=ro&_query_only=1"},
		{dbopen.SQLitePure, "file:" + path + "?mode=ro", create, "file:" + path + "?mode=ro"},
		{dbopen.SQLitePure, "file:mem?mode=memory&cache=shared", readWrite, "file:mem?mode=memory&cache=shared"},
	} {
		got, err := sqliteDSN(tc.driver, tc.dsn, tc.a)
		if err != nil || got != tc.want {
			t.Errorf("sqliteDSN(%s, %q, %d) = %q, %v; want %q", tc.driver, tc.dsn, tc.a, got, err, tc.want)
		}
	}
	for _, a := range []access{readOnly, readWrite} {
		for _, dsn := range []string{filepath.Join(dir, "absent.db"), "file:" + filepath.Join(dir, "absent.db") + "?_txlock=immediate",
			"file://localhost" + filepath.Join(dir, "absent.db"), "file:" + strings.ReplaceAll(filepath.Join(dir, "x.db"), "x.db", "%78.db2")} {
			if _, err := sqliteDSN(dbopen.SQLitePure, dsn, a); err == nil || !strings.Contains(err.Error(), "no SQLite database at "+dir) {
				t.Errorf("sqliteDSN(%q, %d) on a missing file: %v, want an error naming the path", dsn, a, err)
			}
		}
	}
	if _, err := sqliteDSN(dbopen.SQLitePure, "file://localhost"+strings.ReplaceAll(path, "x.db", "%78.db"), readOnly); err != nil {
		t.Errorf("a file: URI with a host and an escaped name: %v", err)
	}
}
