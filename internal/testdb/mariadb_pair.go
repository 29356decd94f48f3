package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/leasehold/leasehold/internal/dbopen"
)

// StartMariaDBPair starts a private MariaDB primary and a replica of it,
// each on its own free port and temporary directory, and returns once the
// replica has caught up (in Sync mode, once the primary's semi-synchronous
// replication is on with the replica connected). The caller must Close
// the pair.
//
// Both servers write a binary log with the replica's transactions in it
// (log_slave_updates), have distinct server_ids (1 for the first primary,
// 2 for the first replica, and a new one at each Rebuild, see
// mariadbReplication.startStandby) and run the built-in semi-synchronous
// replication's replica side; either may be the primary after a failover.
// The replica replicates with GTIDs (MASTER_USE_GTID=slave_pos) and is
// read-only. In Sync mode the primary has rpl_semi_sync_master_enabled
// with wait point AFTER_SYNC: a commit returns once the replica has
// received it, and Promote applies everything received before it accepts
// writes, so a failover loses no acknowledged commit. Its timeout is an
// hour: the primary does not fall back to asynchronous replication within
// a test.
//
// mariadb-install-db runs once: both servers start from copies of the data
// directory it made, which the pair keeps, so that Rebuild can make a
// replica again from it, replaying the new primary's whole binary log.
//
// The MySQL driver takes one address, so the DSN names a forwarding port
// of the pair's own, which leads to the primary (see Pair.Promote).
//
// It returns an error wrapping ErrBinariesMissing when MariaDB is not
// installed.
func StartMariaDBPair(ctx context.Context, mode ReplicationMode) (*Pair, error) {
	if mode != Async && mode != Sync {
		return nil, fmt.Errorf("testdb: start MariaDB pair: unknown mode %v", mode)
	}
	primary, err := installMariaDB(ctx)
	if err != nil {
		return nil, err
	}
	// The template is the installed data directory, before any start.
	repl := &mariadbReplication{template: filepath.Join(primary.dir.root, "template"), serverID: 1}
	if err := copyDir(primary.dir.dataDir, repl.template); err != nil {
		_ = primary.Close()
		return nil, err
	}
	primary.settings = mariadbPairArgs(1)
	if err := primary.startFirst(ctx); err != nil {
		return nil, err
	}
	standby, err := newServer(mariadbEngine, primary.bin, primary.dir.cred)
	if err != nil {
		_ = primary.Close()
		return nil, err
	}
	p := &Pair{mode: mode, repl: repl, primary: primary, standby: standby}
	p.forward, err = newForwarder(primary.port)
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("testdb: start MariaDB pair: listen for the forwarding port: %w", err)
	}
	if mode == Sync {
		// Before the replica connects, so that it connects as a
		// semi-synchronous replica.
		if err := setSemiSync(ctx, primary, true); err != nil {
			_ = p.Close()
			return nil, err
		}
	}
	if err := p.startStandby(ctx, primary, standby, true); err != nil {
		_ = p.Close()
		return nil, err
	}
	p.ports = [2]int{primary.port, standby.port}
	return p, nil
}

// mariadbPairArgs are the options of a pair's server with that server_id.
func mariadbPairArgs(serverID int) []string {
	return []string{
		"--server-id=" + strconv.Itoa(serverID),
		"--log-bin=mysql-bin",
		"--binlog-format=ROW",
		// A replica logs what it applies, so that once promoted its binary
		// log has every transaction: Rebuild replays it from the start.
		"--log-slave-updates",
		"--relay-log=relay-bin",
		"--rpl-semi-sync-slave-enabled=ON",
		"--rpl-semi-sync-master-wait-point=AFTER_SYNC",
		"--rpl-semi-sync-master-timeout=3600000",
	}
}

// copyDir copies the directory src to dst, which must not exist, keeping
// owners and modes.
func copyDir(src, dst string) error {
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("testdb: copy %s to %s: %w: %s", src, dst, err, out)
	}
	return nil
}

// mariadbReplication is a MariaDB pair's: a GTID replica, started from a
// copy of the installed data directory. Its startStandby is not called
// concurrently (Pair: a failover and a Rebuild do not overlap).
type mariadbReplication struct {
	template string // the data directory as mariadb-install-db left it
	serverID int    // the last server_id given to a server
}

// startStandby gives s a fresh copy of the template and a server_id never
// used in the pair, starts it and makes it a read-only replica of primary
// from the start of primary's binary log.
//
// A rebuilt server needs the new server_id: a replica skips the events
// that carry its own server_id (they would come back to their origin in a
// circular setup), and the primary's binary log starts with the events
// the rebuilt server wrote as the first primary.
func (r *mariadbReplication) startStandby(ctx context.Context, primary, s *Server, first bool) error {
	r.serverID++
	s.settings = mariadbPairArgs(r.serverID)
	if err := os.RemoveAll(s.dir.dataDir); err != nil {
		return fmt.Errorf("testdb: remove the data directory of the server on port %d: %w", s.port, err)
	}
	if err := copyDir(r.template, s.dir.dataDir); err != nil {
		return err
	}
	if err := startAgainOrFirst(ctx, s, first); err != nil {
		return err
	}
	for _, q := range []string{
		"SET GLOBAL read_only = 1",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', "+
			"MASTER_CONNECT_RETRY = 1, MASTER_USE_GTID = slave_pos", primary.port),
		"START SLAVE",
	} {
		if err := s.exec(ctx, q); err != nil {
			return fmt.Errorf("testdb: pair: %s on port %d: %w", q, s.port, err)
		}
	}
	return r.waitCaughtUp(ctx, primary, s)
}

// setSync turns the primary's semi-synchronous replication on or off. With
// on it returns once a semi-synchronous replica is connected and the
// primary waits for it.
func (*mariadbReplication) setSync(ctx context.Context, primary, _ *Server, on bool) error {
	if err := setSemiSync(ctx, primary, on); err != nil || !on {
		return err
	}
	return waitSemiSync(ctx, primary)
}

func setSemiSync(ctx context.Context, primary *Server, on bool) error {
	q := "SET GLOBAL rpl_semi_sync_master_enabled = " + map[bool]string{true: "ON", false: "OFF"}[on]
	if err := primary.exec(ctx, q); err != nil {
		return fmt.Errorf("testdb: pair: %s on port %d: %w", q, primary.port, err)
	}
	return nil
}

// waitSemiSync waits until primary has a semi-synchronous replica and
// waits for it.
func waitSemiSync(ctx context.Context, primary *Server) error {
	return poll(ctx, fmt.Sprintf("a semi-synchronous replica of the primary on port %d", primary.port), func(ctx context.Context) (bool, error) {
		st, err := globalStatus(ctx, primary, "Rpl_semi_sync_master_clients", "Rpl_semi_sync_master_status")
		if err != nil {
			return false, err
		}
		n, _ := strconv.Atoi(st["Rpl_semi_sync_master_clients"])
		if n > 0 && st["Rpl_semi_sync_master_status"] == "ON" {
			return true, nil
		}
		return false, fmt.Errorf("semi-synchronous clients %d, status %q", n, st["Rpl_semi_sync_master_status"])
	})
}

// globalStatus reads the named status variables of s.
func globalStatus(ctx context.Context, s *Server, names ...string) (map[string]string, error) {
	db, err := s.adminPool()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range names {
		var n, v string
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
			return nil, fmt.Errorf("read %s on port %d: %w", name, s.port, err)
		}
		out[n] = v
	}
	return out, nil
}

// waitCaughtUp waits until the replica's gtid_slave_pos has reached the
// primary's gtid_binlog_pos as it was when the wait began.
func (*mariadbReplication) waitCaughtUp(ctx context.Context, primary, standby *Server) error {
	db, err := primary.adminPool()
	if err != nil {
		return fmt.Errorf("testdb: pair: the primary on port %d: %w", primary.port, err)
	}
	var pos string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos); err != nil {
		return fmt.Errorf("testdb: pair: read the primary's binary log position on port %d: %w", primary.port, err)
	}
	return waitApplied(ctx, standby, pos, fmt.Sprintf("the replica on port %d to apply the primary's binary log up to %q", standby.port, pos))
}

// waitApplied waits until the replica s has applied the GTID position pos.
func waitApplied(ctx context.Context, s *Server, pos, what string) error {
	return poll(ctx, what, func(ctx context.Context) (bool, error) {
		sdb, err := s.adminPool()
		if err != nil {
			return false, err
		}
		var res sql.NullInt64
		if err := sdb.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 0.5)", pos).Scan(&res); err != nil {
			return false, err
		}
		if res.Valid && res.Int64 == 0 {
			return true, nil
		}
		st, err := slaveStatus(ctx, s)
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("gtid_slave_pos %q; I/O thread %s %q, SQL thread %s %q",
			st["Gtid_Slave_Pos"], st["Slave_IO_Running"], st["Last_IO_Error"], st["Slave_SQL_Running"], st["Last_SQL_Error"])
	})
}

// slaveStatus reads SHOW SLAVE STATUS of s by column name: nil when s
// replicates from nothing.
func slaveStatus(ctx context.Context, s *Server) (map[string]string, error) {
	db, err := s.adminPool()
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(cols))
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out, rows.Err()
}

// promote stops the replica receiving, waits until it has applied all it
// received, and makes it a writable primary of its own that waits for no
// replica.
func (*mariadbReplication) promote(ctx context.Context, standby *Server) error {
	fail := func(err error) error {
		return fmt.Errorf("testdb: promote the replica on port %d: %w", standby.port, err)
	}
	if err := standby.exec(ctx, "STOP SLAVE IO_THREAD"); err != nil {
		return fail(err)
	}
	st, err := slaveStatus(ctx, standby)
	if err != nil {
		return fail(err)
	}
	if st == nil {
		return fail(errors.New("it replicates from nothing"))
	}
	received := st["Gtid_IO_Pos"]
	if err := waitApplied(ctx, standby, received, fmt.Sprintf("the replica on port %d to apply what it received, up to %q", standby.port, received)); err != nil {
		return err
	}
	for _, q := range []string{"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = 0", "SET GLOBAL rpl_semi_sync_master_enabled = OFF"} {
		if err := standby.exec(ctx, q); err != nil {
			return fail(fmt.Errorf("%s: %w", q, err))
		}
	}
	return nil
}

// isStandby: a MariaDB replica has a slave status.
func (*mariadbReplication) isStandby(ctx context.Context, s *Server) (bool, error) {
	st, err := slaveStatus(ctx, s)
	return st != nil, err
}

func (*mariadbReplication) dsn(p *Pair, database string) string {
	return "root@tcp(" + p.forward.addr() + ")/" + database + "?parseTime=true&loc=UTC&timeout=2s"
}

func (*mariadbReplication) driver() string { return dbopen.MySQL }

// MariaDBPair starts a private MariaDB pair in the given mode for the test
// and closes it when the test ends. It skips the test when MariaDB is not
// installed, or fails it when REQUIRE_DIALECTS names mysql.
func MariaDBPair(t testing.TB, mode ReplicationMode) *Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	p, err := StartMariaDBPair(ctx, mode)
	if err != nil {
		if errors.Is(err, ErrBinariesMissing) {
			unavailable(t, "mysql", err)
		}
		t.Fatalf("testdb: start %s MariaDB pair: %v", mode, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("testdb: close MariaDB pair: %v", err)
		}
	})
	return p
}
