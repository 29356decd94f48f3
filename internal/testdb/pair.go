package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/dbopen"
)

// ReplicationMode says whether a Pair's primary waits for its standby.
type ReplicationMode int

const (
	// Async means a commit returns once it is on the primary; the standby
	// follows as soon as it can, so a failover can lose the last commits.
	Async ReplicationMode = iota
	// Sync means a commit returns once the standby has flushed it too, so a
	// failover loses no acknowledged commit.
	Sync
)

// String returns "async" or "sync".
func (m ReplicationMode) String() string {
	switch m {
	case Async:
		return "async"
	case Sync:
		return "sync"
	default:
		return "ReplicationMode(" + strconv.Itoa(int(m)) + ")"
	}
}

// pairTimeout bounds each wait of a Pair: for the standby to catch up, for
// a promotion to finish, for a base backup. Like startTimeout it allows
// for a busy two-core machine.
const pairTimeout = 60 * time.Second

// Pair is a replicated pair of private servers: a primary and a standby
// that replicates from it, each a Server with its own temporary directory
// and port. PostgreSQL's (StartPostgresPair) is a streaming standby, and
// its DSN names both ports and asks for the one that accepts writes;
// MariaDB's (StartMariaDBPair) is a GTID replica, and its DSN names a
// forwarding port of the Pair's own that leads to the primary. Either
// way a client follows a failover by reconnecting.
//
// A failover is: stop or kill the primary (Primary().Stop or Kill), then
// Promote. After it, Primary is the promoted server and Standby the old
// primary, which Rebuild turns into a standby of the new primary on its
// old port, ready for the next failover.
//
// A Pair's methods may be called from several goroutines, but a failover
// and a Rebuild must not overlap each other.
type Pair struct {
	repl replication // what differs between PostgreSQL and MariaDB
	// forward is MariaDB's forwarding port, which leads to the primary;
	// nil on PostgreSQL.
	forward *forwarder
	// ports are the first primary's and the first standby's ports: the
	// DSN's hosts, which Rebuild keeps.
	ports [2]int

	mu               sync.Mutex
	mode             ReplicationMode
	primary, standby *Server
}

// pairSettings are the settings of both servers of a pair, before the
// caller's. Each server gets all of them, since each may be the primary
// after a failover.
//
// synchronous_commit is on in both modes, against the package's default.
// An acknowledged commit is then in the primary's written WAL, which is
// what WaitCaughtUp compares the standby with; with fsync off the cost is
// nothing. In Sync mode "on" also makes a commit wait until the standby
// has flushed it: that is all a failover needs, because a promotion
// replays every flushed record before it accepts writes. remote_apply
// would also wait for the replay, which matters only to readers of the
// standby, and the pair's DSN never reads from it.
var pairSettings = []string{
	"wal_level=replica",
	"max_wal_senders=4",
	"hot_standby=on",
	"synchronous_commit=on",
	// A standby stopped for a while finds the WAL it missed still there.
	"wal_keep_size=128MB",
}

// StartPostgresPair starts a private primary and makes a streaming standby
// of it with pg_basebackup -R, each on its own free port and temporary
// directory, and returns once the standby has caught up (in Sync mode,
// once it is the primary's synchronous standby). settings are extra
// "name=value" settings for both servers, passed after the pair's own (see
// StartPostgresWith). The caller must Close the pair.
//
// In Sync mode the primary has synchronous_standby_names='*', set with
// ALTER SYSTEM rather than on the command line so that Promote and
// Rebuild can change it without a restart. Setting it in settings defeats
// that.
//
// It returns an error wrapping ErrBinariesMissing when PostgreSQL or
// pg_basebackup is not installed.
func StartPostgresPair(ctx context.Context, mode ReplicationMode, settings ...string) (*Pair, error) {
	if mode != Async && mode != Sync {
		return nil, fmt.Errorf("testdb: start PostgreSQL pair: unknown mode %v", mode)
	}
	initdb, _, err := findPostgres()
	if err != nil {
		return nil, err
	}
	basebackup, err := findBinary("pg_basebackup", filepath.Join(filepath.Dir(initdb), "pg_basebackup"))
	if err != nil {
		return nil, err
	}
	all := append(append([]string(nil), pairSettings...), settings...)
	primary, err := StartPostgresWith(ctx, all...)
	if err != nil {
		return nil, err
	}
	standby, err := newServer(primary.eng, primary.bin, primary.dir.cred)
	if err != nil {
		_ = primary.Close()
		return nil, err
	}
	standby.settings = primary.settings
	p := &Pair{mode: mode, repl: postgresReplication{basebackup: basebackup}, primary: primary, standby: standby}
	if err := p.startStandby(ctx, primary, standby, true); err != nil {
		_ = p.Close()
		return nil, err
	}
	p.ports = [2]int{primary.port, standby.port}
	return p, nil
}

// replication is what a Pair does differently on each kind of server:
// postgresReplication and mariadbReplication.
type replication interface {
	// startStandby makes s a standby of primary and starts it: on a new
	// free port when first is true, else on its own. It returns once the
	// standby has caught up.
	startStandby(ctx context.Context, primary, s *Server, first bool) error
	// setSync makes primary's commits wait for its standby (on) or not.
	// With on it returns once a standby is synchronous, so that every
	// commit from then on waits for it.
	setSync(ctx context.Context, primary, standby *Server, on bool) error
	// waitCaughtUp waits until standby has applied everything primary
	// had written when the wait began.
	waitCaughtUp(ctx context.Context, primary, standby *Server) error
	// promote makes standby a primary that accepts writes and does not
	// wait for a standby of its own.
	promote(ctx context.Context, standby *Server) error
	// isStandby reports whether s replicates from another server.
	isStandby(ctx context.Context, s *Server) (bool, error)
	// dsn is Pair.DSN.
	dsn(p *Pair, database string) string
	// driver is Pair.Driver.
	driver() string
}

// startStandby makes s a standby of primary and starts it (see
// replication.startStandby). In Sync mode it then makes it the primary's
// synchronous standby.
func (p *Pair) startStandby(ctx context.Context, primary, s *Server, first bool) error {
	if err := p.repl.startStandby(ctx, primary, s, first); err != nil {
		return err
	}
	if p.Mode() != Sync {
		return nil
	}
	return p.repl.setSync(ctx, primary, s, true)
}

// postgresReplication is a PostgreSQL pair's: a streaming standby made
// with pg_basebackup.
type postgresReplication struct {
	basebackup string // the pg_basebackup binary
}

// startStandby makes s a standby of primary from a fresh base backup.
func (r postgresReplication) startStandby(ctx context.Context, primary, s *Server, first bool) error {
	// pg_basebackup creates the data directory and refuses a non-empty one.
	if err := os.RemoveAll(s.dir.dataDir); err != nil {
		return fmt.Errorf("testdb: remove the data directory of the server on port %d: %w", s.port, err)
	}
	err := s.runSetup(ctx, r.basebackup,
		"--pgdata="+s.dir.dataDir,
		"--host=127.0.0.1",
		"--port="+strconv.Itoa(primary.port),
		"--username=postgres",
		"--no-password",
		"--write-recovery-conf", // standby.signal and primary_conninfo
		"--wal-method=stream",
		"--checkpoint=fast",
		"--no-sync",
	)
	if err != nil {
		return err
	}
	if err := startAgainOrFirst(ctx, s, first); err != nil {
		return err
	}
	return r.waitCaughtUp(ctx, primary, s)
}

// startAgainOrFirst starts s on a new free port (first) or on its own.
func startAgainOrFirst(ctx context.Context, s *Server, first bool) error {
	if first {
		return s.startFirst(ctx)
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return s.start(sctx)
}

// setSync sets synchronous_standby_names on primary ('*', or reset) and
// reloads its configuration.
func (postgresReplication) setSync(ctx context.Context, primary, _ *Server, on bool) error {
	stmt := "ALTER SYSTEM RESET synchronous_standby_names"
	if on {
		stmt = "ALTER SYSTEM SET synchronous_standby_names = '*'"
	}
	for _, q := range []string{stmt, "SELECT pg_reload_conf()"} {
		if err := primary.exec(ctx, q); err != nil {
			return fmt.Errorf("testdb: pair: %s on port %d: %w", q, primary.port, err)
		}
	}
	if !on {
		return nil
	}
	return poll(ctx, fmt.Sprintf("a synchronous standby of the primary on port %d", primary.port), func(ctx context.Context) (bool, error) {
		db, err := primary.adminPool()
		if err != nil {
			return false, err
		}
		var n int
		err = db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(&n)
		return n > 0, err
	})
}

// Mode returns the pair's replication mode.
func (p *Pair) Mode() ReplicationMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the running pair to mode, without a restart: in Sync
// mode it returns once the standby is synchronous. Both servers must be
// running, as after StartPostgresPair or Rebuild.
func (p *Pair) SetMode(ctx context.Context, mode ReplicationMode) error {
	if mode != Async && mode != Sync {
		return fmt.Errorf("testdb: pair: unknown mode %v", mode)
	}
	p.mu.Lock()
	p.mode = mode
	p.mu.Unlock()
	primary, standby := p.servers()
	return p.repl.setSync(ctx, primary, standby, mode == Sync)
}

// Primary returns the server that is the primary: the promoted one after
// Promote.
func (p *Pair) Primary() *Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.primary
}

// Standby returns the other server: the standby, or after Promote and
// until Rebuild, the old primary.
func (p *Pair) Standby() *Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.standby
}

// servers returns the primary and the standby.
func (p *Pair) servers() (primary, standby *Server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.primary, p.standby
}

// DSN returns a DSN for the named database that follows the primary
// through failovers, in the form of the driver Driver names. It never
// changes: Rebuild reuses the old primary's port.
//
// On PostgreSQL (default database "postgres") it names both servers'
// ports, in the order of the first start (the first primary's first), and
// target_session_attrs=read-write, so a connection goes to whichever
// server accepts writes; connect_timeout=2 bounds the attempt on each
// host, so a host that does not answer delays a connection by at most two
// seconds. On MariaDB (default: no particular database) it names the
// pair's forwarding port (see StartMariaDBPair), with parseTime=true,
// loc=UTC and timeout=2s.
func (p *Pair) DSN(database string) string { return p.repl.dsn(p, database) }

// Driver returns the dbopen driver name of DSN: dbopen.Postgres or
// dbopen.MySQL.
func (p *Pair) Driver() string { return p.repl.driver() }

func (postgresReplication) dsn(p *Pair, database string) string {
	if database == "" {
		database = "postgres"
	}
	return fmt.Sprintf("host=127.0.0.1,127.0.0.1 port=%d,%d user=postgres dbname=%s sslmode=disable connect_timeout=2 target_session_attrs=read-write",
		p.ports[0], p.ports[1], database)
}

func (postgresReplication) driver() string { return dbopen.Postgres }

// CreateDatabase creates an empty database on the primary and returns once
// the standby has replayed its creation.
func (p *Pair) CreateDatabase(ctx context.Context, name string) error {
	primary, _ := p.servers()
	if err := primary.CreateDatabase(ctx, name); err != nil {
		return err
	}
	return p.WaitCaughtUp(ctx)
}

// WaitCaughtUp waits until the standby has replayed everything the
// primary has written when the wait began (on PostgreSQL
// pg_last_wal_replay_lsn on the standby at least pg_current_wal_lsn on
// the primary, on MariaDB the standby's gtid_slave_pos at the primary's
// gtid_binlog_pos), at most a minute. Both servers must be running.
func (p *Pair) WaitCaughtUp(ctx context.Context) error {
	primary, standby := p.servers()
	return p.repl.waitCaughtUp(ctx, primary, standby)
}

func (postgresReplication) waitCaughtUp(ctx context.Context, primary, standby *Server) error {
	db, err := primary.adminPool()
	if err != nil {
		return fmt.Errorf("testdb: pair: the primary on port %d: %w", primary.port, err)
	}
	var lsn string
	if err := db.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return fmt.Errorf("testdb: pair: read the primary's WAL position on port %d: %w", primary.port, err)
	}
	what := fmt.Sprintf("the standby on port %d to replay the primary's WAL up to %s", standby.port, lsn)
	return poll(ctx, what, func(ctx context.Context) (bool, error) {
		sdb, err := standby.adminPool()
		if err != nil {
			return false, err
		}
		var ok sql.NullBool
		err = sdb.QueryRowContext(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&ok)
		return ok.Valid && ok.Bool, err
	})
}

// Promote promotes the standby and returns once it accepts writes; from
// then on Primary returns it, and the DSN leads to it. The caller stops or
// kills the primary first: Promote does not, so that a test can choose
// how the primary fails. On MariaDB, where the DSN leads through the
// pair's forwarding port, the connections it forwarded to the old primary
// are cut, so a running old primary is cut off from the pair's clients.
//
// On PostgreSQL it calls pg_promote, which waits for the end of recovery.
// On MariaDB it stops the replica's I/O thread, waits until it has
// applied everything it received (in Sync mode that is every commit the
// primary acknowledged), and runs STOP SLAVE, RESET SLAVE ALL and SET
// GLOBAL read_only = 0.
//
// In Sync mode the promoted server has no standby until Rebuild, so
// Promote stops it waiting for one (PostgreSQL's
// synchronous_standby_names, MariaDB's rpl_semi_sync_master_enabled): its
// commits would otherwise wait for a standby that is not there. Until
// Rebuild the pair is a single server.
func (p *Pair) Promote(ctx context.Context) error {
	_, standby := p.servers()
	ctx, cancel := context.WithTimeout(ctx, pairTimeout)
	defer cancel()
	if err := p.repl.promote(ctx, standby); err != nil {
		return err
	}
	p.mu.Lock()
	p.primary, p.standby = standby, p.primary
	p.mu.Unlock()
	if p.forward != nil {
		p.forward.switchTo(standby.port)
	}
	return nil
}

func (r postgresReplication) promote(ctx context.Context, standby *Server) error {
	db, err := standby.adminPool()
	if err != nil {
		return fmt.Errorf("testdb: promote the standby on port %d: %w", standby.port, err)
	}
	var done bool
	if err := db.QueryRowContext(ctx, "SELECT pg_promote(true, 60)").Scan(&done); err != nil {
		return fmt.Errorf("testdb: promote the standby on port %d: %w", standby.port, err)
	}
	if !done {
		return fmt.Errorf("testdb: promote the standby on port %d: pg_promote did not finish within 60s", standby.port)
	}
	if err := r.setSync(ctx, standby, nil, false); err != nil {
		return err
	}
	// A transaction that takes a transaction id fails in recovery and, in
	// a sync pair whose setting has not been reloaded yet, waits for a
	// standby: it succeeding within pingTimeout shows writes are accepted.
	return poll(ctx, fmt.Sprintf("the promoted server on port %d to accept writes", standby.port), func(ctx context.Context) (bool, error) {
		wctx, wcancel := context.WithTimeout(ctx, pingTimeout)
		defer wcancel()
		_, err := db.ExecContext(wctx, "SELECT txid_current()")
		return err == nil, err
	})
}

// Rebuild makes the old primary a standby of the new one after Promote:
// it stops the old primary if it is running, discards its data, takes a
// base backup of the new primary into it (MariaDB: starts it from the
// installed data directory, with a new server_id, to replay the new
// primary's binary log) and starts it on its old port, so the pair, and
// its DSN, are ready for the next failover. In Sync mode it makes it the
// synchronous standby again.
func (p *Pair) Rebuild(ctx context.Context) error {
	primary, old := p.servers()
	if isStandby, err := p.repl.isStandby(ctx, primary); err != nil || isStandby {
		if err == nil {
			err = errors.New("it is still a standby: Promote first")
		}
		return fmt.Errorf("testdb: rebuild the pair: the primary on port %d: %w", primary.port, err)
	}
	if err := old.Stop(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*pairTimeout)
	defer cancel()
	if err := p.startStandby(ctx, primary, old, false); err != nil {
		return fmt.Errorf("testdb: rebuild the pair: %w", err)
	}
	return nil
}

// isStandby: a PostgreSQL standby is in recovery.
func (postgresReplication) isStandby(ctx context.Context, s *Server) (bool, error) {
	db, err := s.adminPool()
	if err != nil {
		return false, err
	}
	var rec bool
	err = db.QueryRowContext(ctx, "SELECT pg_is_in_recovery()").Scan(&rec)
	return rec, err
}

// Close stops both servers and removes their directories. It may be
// called more than once.
func (p *Pair) Close() error {
	if p.forward != nil {
		p.forward.close()
	}
	primary, standby := p.servers()
	return errors.Join(standby.Close(), primary.Close())
}

// poll calls check every pollInterval until it reports true, at most
// pairTimeout or until ctx is done. An error from check is not final: it
// is kept for the message if the wait times out.
func poll(ctx context.Context, what string, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, pairTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	began := time.Now()
	for {
		ok, err := check(ctx)
		if ok {
			return nil
		}
		if err == nil {
			err = errors.New("not yet")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testdb: pair: waited %s for %s: %w (last check: %w)",
				time.Since(began).Round(time.Millisecond), what, ctx.Err(), err)
		case <-ticker.C:
		}
	}
}

// PostgresPair starts a private PostgreSQL pair in the given mode for the
// test and closes it when the test ends. It skips the test when PostgreSQL
// or pg_basebackup is not installed, or fails it when REQUIRE_DIALECTS
// names postgres.
func PostgresPair(t testing.TB, mode ReplicationMode) *Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	p, err := StartPostgresPair(ctx, mode)
	if err != nil {
		if errors.Is(err, ErrBinariesMissing) {
			unavailable(t, "postgres", err)
		}
		t.Fatalf("testdb: start %s PostgreSQL pair: %v", mode, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("testdb: close PostgreSQL pair: %v", err)
		}
	})
	return p
}
