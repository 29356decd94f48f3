package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/migrations"
	"github.com/leasehold/leasehold/pgnotify"
	"github.com/leasehold/leasehold/status"
)

const wait = 60 * time.Second

func TestMain(m *testing.M) { testdb.Main(m) }

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// runCmd runs the command in-process with no environment but env.
func runCmd(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runTo(t, &bytes.Buffer{}, env, args...)
}

func runTo(t *testing.T, stdout interface {
	Write([]byte) (int, error)
	String() string
}, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, args, stdout, &stderr, func(k string) string { return env[k] })
	return result{code, stdout.String(), stderr.String()}
}

// dbEnv is the environment that selects a database.
func dbEnv(driver, dsn string) map[string]string {
	return map[string]string{"LEASEHOLD_DRIVER": driver, "LEASEHOLD_DSN": dsn}
}

// holdLease runs a coordinator of node-a on the database that takes the
// global election name, and stops it when the test ends.
func holdLease(t *testing.T, driver, dsn, name string) (*coordination.Coordinator, *coordination.Lease) {
	t.Helper()
	return holdLeaseAs(t, "node-a", driver, dsn, name)
}

// holdLeaseAs is holdLease for a process of the given node.
func holdLeaseAs(t *testing.T, node, driver, dsn, name string) (*coordination.Coordinator, *coordination.Lease) {
	t.Helper()
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.New(node, "eu")
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordination.New(db, id, coordination.Config{Notifications: pgnotify.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("coordinator: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	e, err := c.Election(coordination.GlobalScope, name)
	if err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, wait)
	defer tcancel()
	l, err := e.TryAcquire(tctx)
	if err != nil {
		t.Fatalf("take %s: %v", name, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return c, l
}

// TestCommands runs the subcommands against every database target.
func TestCommands(t *testing.T) {
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Run("MigrateDryRunThenMigrate", func(t *testing.T) { caseMigrate(t, tg) })
			t.Run("StatusOfHeldLease", func(t *testing.T) { caseStatus(t, tg) })
			t.Run("StatusOfSchedule", func(t *testing.T) { caseStatusOfSchedule(t, tg) })
			t.Run("WatchMarksChange", func(t *testing.T) { caseWatch(t, tg) })
			t.Run("Resign", func(t *testing.T) { caseResign(t, tg) })
		})
	}
}

func caseMigrate(t *testing.T, tg testdb.Target) {
	driver, dsn := tg.OpenDSN(t)
	env := dbEnv(driver, dsn)
	r := runCmd(t, env, "migrate", "-dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "CREATE TABLE") || !strings.Contains(r.stdout, "dry run") {
		t.Fatalf("migrate -dry-run on an empty database: %+v", r)
	}
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	ctx := context.Background()
	if v, err := migrations.Version(ctx, db, migrations.Options{}); err != nil || v != 0 {
		t.Fatalf("after a dry run the schema is at version %d, %v; want 0 (nothing applied)", v, err)
	}
	r = runCmd(t, env, "migrate")
	if r.code != 0 || !strings.Contains(r.stdout, "applied versions 1,") {
		t.Fatalf("migrate: %+v", r)
	}
	if v, err := migrations.Version(ctx, db, migrations.Options{}); err != nil || v != migrations.LatestVersion {
		t.Fatalf("after migrate the schema is at version %d, %v", v, err)
	}
	for _, args := range [][]string{{"migrate"}, {"migrate", "-dry-run"}} {
		if r := runCmd(t, env, args...); r.code != 0 || !strings.Contains(r.stdout, "nothing to apply") {
			t.Fatalf("%v on a current schema: %+v", args, r)
		}
	}
}

func caseStatus(t *testing.T, tg testdb.Target) {
	driver, dsn := tg.OpenDSN(t)
	c, l := holdLease(t, driver, dsn, "cli-status")
	key := runPool(t, c, "cli-pool")
	locks, err := c.Locks(coordination.GlobalScope, "cli-locks")
	if err != nil {
		t.Fatal(err)
	}
	sem, err := c.Semaphore(coordination.GlobalScope, "cli-sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lock, err := locks.Lock(ctx, "order|7")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release(context.Background()) }()
	slot, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slot.Release(context.Background()) }()

	r := runCmd(t, dbEnv(driver, dsn), "status")
	if r.code != 0 {
		t.Fatalf("status: %+v", r)
	}
	line := ""
	for s := range strings.Lines(r.stdout) {
		if strings.HasPrefix(s, l.Key()+" ") {
			line = s
		}
	}
	if !strings.Contains(line, c.Holder()) || !strings.Contains(line, " yes ") {
		t.Fatalf("status lists no live line for %s held by %s:\n%s", l.Key(), c.Holder(), r.stdout)
	}

	t.Logf("status:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "POOL "+key+"  generation ") {
		t.Fatalf("status lists no pool %s:\n%s", key, r.stdout)
	}
	// The keyed lock and the semaphore have their sections; the floor rows
	// of the keyed locks are no leases.
	for _, want := range []string{"LOCKS global/cli-locks  1 held\n", "SEMAPHORE global/cli-sem  slots>="} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "lockfloor|") || strings.Contains(r.stdout, "sem|") || strings.Contains(r.stdout, "lock|") {
		t.Errorf("status lists internal rows as leases:\n%s", r.stdout)
	}
	lines := map[string]bool{}
	for s := range strings.Lines(r.stdout) {
		f := strings.Fields(s)
		switch {
		case len(f) > 3 && f[0] == "order|7" && f[1] == c.Holder() && f[2] == strconv.FormatInt(lock.Epoch(), 10) && f[3] == "yes":
			lines["lock"] = true
		case len(f) > 3 && (f[0] == "0" || f[0] == "1") && f[1] == c.Holder() && f[2] == strconv.FormatInt(slot.Epoch(), 10) && f[3] == "yes":
			lines["slot"] = true
		case len(f) > 1 && f[0] == c.Holder() && f[1] == "live":
			lines["process"] = true
		}
	}
	if !lines["lock"] || !lines["slot"] || !lines["process"] {
		t.Errorf("status lacks the line of the held lock, slot or live process (found %v):\n%s", lines, r.stdout)
	}

	r = runCmd(t, nil, "-driver", driver, "-dsn", dsn, "status", "-json")
	if r.code != 0 {
		t.Fatalf("status -json: %+v", r)
	}
	var s status.Snapshot
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status -json does not decode: %v\n%s", err, r.stdout)
	}
	if len(s.Leases) != 1 || s.Leases[0].Key != l.Key() || s.Leases[0].Holder != c.Holder() ||
		!s.Leases[0].Live || s.Leases[0].Epoch != l.Epoch() || !s.Leases[0].ExpiresAt.After(s.Leases[0].DatabaseTime) ||
		s.DatabaseTime.IsZero() {
		t.Fatalf("status -json = %+v, want %s live, held by %s at epoch %d", s, l.Key(), c.Holder(), l.Epoch())
	}
	if len(s.Locks) != 2 || s.Locks[0].Key != "global/cli-locks" || s.Locks[0].Slots != 0 || len(s.Locks[0].Holders) != 1 ||
		s.Locks[0].Holders[0].Key != "order|7" || s.Locks[0].Holders[0].Holder != c.Holder() || !s.Locks[0].Holders[0].Live ||
		s.Locks[1].Key != "global/cli-sem" || s.Locks[1].Slots < 1 || s.Locks[1].Slots > 2 || len(s.Locks[1].Holders) != 1 || s.Locks[1].Holders[0].Epoch != slot.Epoch() {
		t.Fatalf("status -json locks = %+v, want global/cli-locks with order|7 held, global/cli-sem with 1 or 2 slots, 1 held", s.Locks)
	}
	if len(s.Sessions) != 1 || s.Sessions[0].Holder != c.Holder() || !s.Sessions[0].Live || !s.Sessions[0].ExpiresAt.After(s.Sessions[0].DatabaseTime) {
		t.Fatalf("status -json sessions = %+v, want %s live", s.Sessions, c.Holder())
	}
	if len(s.Pools) != 1 || s.Pools[0].Key != key || s.Pools[0].Generation < 1 || len(s.Pools[0].Members) != 1 {
		t.Fatalf("status -json pools = %+v, want %s with one member", s.Pools, key)
	}
	// Index 0 is the first of the generation's list; acknowledged, the
	// generation is its ack.
	if p, m := s.Pools[0], s.Pools[0].Members[0]; len(p.List) != 1 || p.List[0] != m.ID || m.Holder != c.Holder() || !m.Live ||
		m.Ack != p.Generation {
		t.Fatalf("status -json pool = %+v, want member 0 held by %s, live and acknowledged", p, c.Holder())
	}
}

// runPool makes c's process a member of the global pool name until the
// test ends, and returns once it has its assignment.
func runPool(t *testing.T, c *coordination.Coordinator, name string) string {
	t.Helper()
	p, err := c.Pool(coordination.GlobalScope, name, coordination.PoolConfig{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	assigned := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := p.Run(ctx, func(ctx context.Context, _ coordination.Assignment) error {
			select {
			case assigned <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return nil
		}, nil)
		if err != nil {
			t.Errorf("pool: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-assigned:
	case <-time.After(wait):
		t.Fatalf("no assignment in pool %s within %v", name, wait)
	}
	return p.Key()
}

// hookWriter calls first with the first write, before it returns.
type hookWriter struct {
	bytes.Buffer
	first func()
	once  sync.Once
}

func (w *hookWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	w.once.Do(w.first)
	return n, err
}

func caseWatch(t *testing.T, tg testdb.Target) {
	driver, dsn := tg.OpenDSN(t)
	if r := runCmd(t, dbEnv(driver, dsn), "migrate"); r.code != 0 {
		t.Fatalf("migrate: %+v", r)
	}
	// watchTaking runs watch with args; between its first refresh and the
	// second, a lease is taken and kept. It returns the printed refreshes
	// and the lease's key.
	watchTaking := func(node string, args ...string) ([]string, string) {
		t.Helper()
		var name string
		w := &hookWriter{first: func() {
			_, l := holdLeaseAs(t, node, driver, dsn, "cli-watch-"+node)
			name = l.Key()
		}}
		r := runTo(t, w, dbEnv(driver, dsn), append([]string{"watch", "-interval", "100ms"}, args...)...)
		if r.code != 0 {
			t.Fatalf("watch %v: %+v", args, r)
		}
		t.Logf("watch %v:\n%s", args, r.stdout)
		refreshes := strings.Split(r.stdout, "--- refresh ")[1:]
		if len(refreshes) > 0 && strings.Contains(refreshes[0], name) {
			t.Fatalf("the first refresh lists %s, taken only after it:\n%s", name, r.stdout)
		}
		return refreshes, name
	}
	marks := func(refresh, name string) bool {
		for s := range strings.Lines(refresh) {
			if f := strings.Fields(s); len(f) > 1 && f[0] == "new" && f[1] == name {
				return true
			}
		}
		return false
	}

	// By default the first refresh is whole, the second names the new
	// lease alone, and the third, with nothing changed, prints nothing.
	refreshes, name := watchTaking("node-w", "-count", "3")
	if len(refreshes) != 2 {
		t.Fatalf("watch -count 3 with one change printed %d refreshes, want 2 (a refresh without changes prints nothing)", len(refreshes))
	}
	if !strings.HasPrefix(refreshes[1], "2, ") || !marks(refreshes[1], name) {
		t.Fatalf("the second refresh does not mark %s new", name)
	}
	if n := len(slices.Collect(strings.Lines(refreshes[1]))); n != 3 || !strings.Contains(refreshes[1], "new  process node-w/") {
		t.Fatalf("the second refresh is %d lines, want 3 (its header, the lease and the new process of node-w)", n)
	}

	// -full prints every refresh whole, with a CHANGE column.
	refreshes, name = watchTaking("node-f", "-count", "3", "-full")
	if len(refreshes) != 3 {
		t.Fatalf("watch -full -count 3 printed %d refreshes, want 3", len(refreshes))
	}
	if !marks(refreshes[1], name) || !strings.Contains(refreshes[1], "CHANGE") {
		t.Fatalf("the second refresh of -full does not mark %s new in a CHANGE column", name)
	}
	if !strings.Contains(refreshes[2], name) {
		t.Fatalf("the third refresh of -full does not list %s", name)
	}
}

func caseResign(t *testing.T, tg testdb.Target) {
	driver, dsn := tg.OpenDSN(t)
	c, l := holdLease(t, driver, dsn, "cli-resign")
	// node-b is live: it holds a lease of its own.
	holdLeaseAs(t, "node-b", driver, dsn, "cli-resign-b")
	env := dbEnv(driver, dsn)
	r := runCmd(t, env, "resign", "global/no-such-lease")
	if r.code != 1 || !strings.Contains(r.stderr, `no lease named "global/no-such-lease"`) {
		t.Fatalf("resign of an unknown lease: %+v", r)
	}
	// A name without its scope: the command names the lease it meant.
	r = runCmd(t, env, "resign", "cli-resign")
	if r.code != 1 || !strings.Contains(r.stderr, `did you mean "global/cli-resign"?`) {
		t.Fatalf("resign of a name without its scope: %+v", r)
	}
	// Rows that are not an election's say what they are.
	for key, want := range map[string]string{
		"lock|global/cli-locks|k1":       "keyed lock",
		"pool|global/cli-pool|member|m1": "pool membership",
		"sem|global/cli-sem|0":           "semaphore's slot",
		"lockfloor|global/cli-locks|3":   "the keyed locks keep",
	} {
		if r := runCmd(t, env, "resign", key); r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("resign %s: %+v; want a message saying it is a %s", key, r, want)
		}
	}
	r = runCmd(t, env, "resign", l.Key(), "-prefer", "node-b")
	if r.code != 0 || !strings.Contains(r.stdout, c.Holder()) || !strings.Contains(r.stdout, "node-b") {
		t.Fatalf("resign %s: %+v", l.Key(), r)
	}
	select {
	case <-l.Context().Done():
	case <-time.After(wait):
		t.Fatalf("the holder did not end its term within %v of the resign request", wait)
	}
}

// TestUnreachableDatabase: a closed loopback port gives exit status 1 and
// a message naming the driver, with the password in no output.
func TestUnreachableDatabase(t *testing.T) {
	for _, tc := range []struct{ driver, dsn string }{
		{"postgres", "postgres://u:secret@127.0.0.1:1/db"},
		{"postgres", "host=127.0.0.1 port=1 user=u password=secret dbname=db"},
		{"mysql", "u:secret@tcp(127.0.0.1:1)/db"},
	} {
		for _, sub := range [][]string{{"status"}, {"migrate"}, {"migrate", "-dry-run"}, {"watch", "-count", "1"}, {"resign", "global/x"}} {
			r := runCmd(t, dbEnv(tc.driver, tc.dsn), sub...)
			if r.code != 1 {
				t.Errorf("%s %v: exit %d, want 1: %+v", tc.driver, sub, r.code, r)
			}
			if strings.Contains(r.stdout+r.stderr, "secret") {
				t.Errorf("%s %v: the password is in the output: %+v", tc.driver, sub, r)
			}
			if !strings.Contains(r.stderr, "cannot reach the "+tc.driver+" database") || !strings.Contains(r.stderr, "xxxxx") {
				t.Errorf("%s %v: stderr does not name the driver and the redacted DSN: %q", tc.driver, sub, r.stderr)
			}
		}
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no subcommand"},
		{[]string{"frobnicate"}, 2, `unknown subcommand "frobnicate"`},
		{[]string{"status", "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-driver", "oracle", "status"}, 2, `invalid value "oracle" for flag -driver`},
		{[]string{"-driver", "postgres", "status"}, 2, "flag -dsn (or LEASEHOLD_DSN) is required"},
		{[]string{"-table-prefix", "x;y", "ddl"}, 2, `invalid value "x;y" for flag -table-prefix`},
		{[]string{"ddl", "-from", "99"}, 2, "invalid value 99 for flag -from"},
		{[]string{"ddl", "-dialect", "oracle"}, 2, `invalid value "oracle" for flag -dialect`},
		{[]string{"watch", "-interval", "0s"}, 2, "invalid value 0s for flag -interval"},
		{[]string{"resign"}, 2, "resign takes one lease name"},
		{[]string{"-h"}, 0, "Subcommands:"},
		{[]string{"status", "-h"}, 0, "-json"},
		{[]string{"watch", "-h"}, 0, "-interval"},
		{[]string{"migrate", "-h"}, 0, "-dry-run"},
		{[]string{"ddl", "-h"}, 0, "-from"},
		{[]string{"resign", "-h"}, 0, "-prefer"},
	} {
		r := runCmd(t, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "Usage: leasehold") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and usage with %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

// TestUsageShowsDefaults: the usage after a flag error shows what applies
// without each flag, not the values given before the error.
func TestUsageShowsDefaults(t *testing.T) {
	r := runCmd(t, nil, "-driver", "postgres", "-dsn", "postgres://ops:hunter2@db/app", "-table-prefix", "ops_", "watch", "-interval", "5s", "-bogus")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2: %+v", r.code, r)
	}
	for _, want := range []string{`(default "sqlite-pure")`, "(default 2s)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the usage lacks %s:\n%s", want, r.stderr)
		}
	}
	for _, given := range []string{`(default "postgres")`, "postgres://", "hunter2", `(default "ops_")`, "(default 5s)"} {
		if strings.Contains(r.stderr, given) {
			t.Errorf("the usage shows %s, a value given on the command line:\n%s", given, r.stderr)
		}
	}
	// A value from the environment is what applies without the flag.
	r = runCmd(t, map[string]string{"LEASEHOLD_DRIVER": "mysql"}, "status", "-bogus")
	if !strings.Contains(r.stderr, `(default "mysql")`) {
		t.Errorf("the usage does not show LEASEHOLD_DRIVER's value as -driver's default:\n%s", r.stderr)
	}
}

// TestMissingSQLiteDirectory: migrate of a SQLite file in a directory
// that does not exist names the directory, and creates nothing.
func TestMissingSQLiteDirectory(t *testing.T) {
	dir := t.TempDir() + "/absent"
	r := runCmd(t, nil, "-dsn", dir+"/new.db", "migrate")
	if r.code != 1 || !strings.Contains(r.stderr, "no directory "+dir+" for the SQLite database") {
		t.Fatalf("migrate in a missing directory: %+v", r)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("migrate created %s", dir)
	}
}

func TestMissingSQLiteFile(t *testing.T) {
	path := t.TempDir() + "/absent.db"
	r := runCmd(t, nil, "-dsn", path, "status")
	if r.code != 1 || !strings.Contains(r.stderr, "no SQLite database at") {
		t.Fatalf("status on a missing file: %+v", r)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("status created %s", path)
	}
}

func TestDDL(t *testing.T) {
	for _, d := range migrations.Dialects() {
		for from := 0; from <= migrations.LatestVersion; from++ {
			want, err := migrations.DDL(d, migrations.Options{TablePrefix: "ops_", From: from})
			if err != nil {
				t.Fatal(err)
			}
			r := runCmd(t, map[string]string{"LEASEHOLD_TABLE_PREFIX": "ops_"}, "ddl", "-dialect", d, "-from", strconv.Itoa(from))
			if r.code != 0 || r.stdout != want.Script {
				t.Fatalf("ddl -dialect %s -from %d: exit %d, stderr %q; output differs from migrations.DDL's Script", d, from, r.code, r.stderr)
			}
		}
	}
	// The dialect defaults to -driver's.
	if r := runCmd(t, nil, "-driver", "postgres", "-dsn", "postgres://x@127.0.0.1:1/x", "ddl"); r.code != 0 || !strings.Contains(r.stdout, "for postgres") {
		t.Fatalf("ddl with -driver postgres: %+v", r)
	}
}
