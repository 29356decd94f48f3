package testdb

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// innodbLogFileSize is passed both to mariadb-install-db and to mariadbd,
// so the redo log is created at this size and never resized. The default
// (96 MiB) would cost disk space for nothing in a test server.
const innodbLogFileSize = "--innodb-log-file-size=16M"

// StartMariaDB creates a private MariaDB data directory in a new temporary
// directory, starts mariadbd on a free port on 127.0.0.1 and waits until
// it accepts connections. The server runs with --skip-grant-tables, so
// any user (DSN uses root) connects without a password. Durability is
// relaxed for speed (innodb_flush_log_at_trx_commit=2, no doublewrite),
// max_connections is 300, and the default character set is utf8mb4.
//
// It returns an error wrapping ErrBinariesMissing when MariaDB is not
// installed. The caller must Close the server.
func StartMariaDB(ctx context.Context) (*Server, error) {
	s, err := installMariaDB(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.startFirst(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// findMariaDB finds the MariaDB server and its mariadb-install-db.
func findMariaDB() (mariadbd, installDB string, err error) {
	if mariadbd, err = findBinary("mariadbd", "/usr/sbin/mariadbd"); err != nil {
		return "", "", err
	}
	installDB, err = findBinary("mariadb-install-db", "/usr/bin/mariadb-install-db")
	return mariadbd, installDB, err
}

// installMariaDB makes a new MariaDB server's directory and data
// directory, not yet started. On failure nothing is left.
func installMariaDB(ctx context.Context) (*Server, error) {
	mariadbd, installDB, err := findMariaDB()
	if err != nil {
		return nil, err
	}
	cred, err := serviceUser("mysql")
	if err != nil {
		return nil, err
	}
	s, err := newServer(mariadbEngine, mariadbd, cred)
	if err != nil {
		return nil, err
	}
	// The server is started as the mysql user itself (not as root with
	// --user=mysql), so that Pdeathsig, which a change of user clears,
	// stays set.
	err = s.runSetup(ctx, installDB,
		"--no-defaults",
		"--datadir="+s.dir.dataDir,
		"--tmpdir="+s.dir.tmpDir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		innodbLogFileSize,
	)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// mariadbEngine is what is particular to the private MariaDB servers. The
// DSN is "root@tcp(127.0.0.1:P)/DB" with no parameters, on no particular
// database when none is named. The server stops on SIGTERM, its normal
// shutdown, which is quick, and gets SIGKILL when the test binary dies:
// it is a single process.
var mariadbEngine = &engine{
	kind:    KindMySQL,
	dialect: mysqlDialect,
	dsn: func(port int, database string) string {
		return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", port, database)
	},
	adminParams: "?timeout=" + pingTimeout.String(),
	args:        mariadbArgs,
	stop:        syscall.SIGTERM,
	death:       syscall.SIGKILL,
}

// mariadbArgs are the command-line arguments of mariadbd s, and then its
// settings (the options of a pair's servers, mariadbPairArgs). Its error
// log goes to stderr, which is the server log. The binary log is off
// unless the settings turn it on.
func mariadbArgs(s *Server) []string {
	logBin := "--skip-log-bin"
	if slices.ContainsFunc(s.settings, func(o string) bool { return strings.HasPrefix(o, "--log-bin") }) {
		logBin = "--log-bin"
	}
	args := []string{
		"--no-defaults", // must come first
		"--datadir=" + s.dir.dataDir,
		"--tmpdir=" + s.dir.tmpDir,
		"--socket=" + filepath.Join(s.dir.root, "mysqld.sock"),
		"--pid-file=" + filepath.Join(s.dir.root, "mysqld.pid"),
		"--port=" + strconv.Itoa(s.port),
		"--bind-address=127.0.0.1",
		"--skip-grant-tables",
		"--skip-name-resolve",
		logBin,
		"--max-connections=300",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
		"--innodb-flush-log-at-trx-commit=2",
		"--innodb-doublewrite=0",
		"--innodb-buffer-pool-size=64M",
		"--innodb-buffer-pool-load-at-startup=0",
		"--innodb-buffer-pool-dump-at-shutdown=0",
		innodbLogFileSize,
	}
	return append(args, s.settings...)
}
