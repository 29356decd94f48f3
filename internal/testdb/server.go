package testdb

import (
	"github.com/leasehold/leasehold/internal/proc"

	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrBinariesMissing is returned, wrapped with the name of the missing
// binary, when a server kind's binaries are not installed on this machine.
var ErrBinariesMissing = errors.New("database server binaries are not installed")

// Server kinds, as returned by Server.Kind.
const (
	KindPostgres  = "postgres"
	KindMySQL     = "mysql"
	KindPgBouncer = "pgbouncer"
)

// Time limits. Every wait in this package is bounded by one of them.
const (
	// startTimeout bounds the wait for a started server to accept
	// connections. Two test binaries may start servers at once on a busy
	// two-core machine, so it is generous.
	startTimeout = 60 * time.Second
	// pollInterval is how often a starting server is probed.
	pollInterval = 50 * time.Millisecond
	// pingTimeout bounds one readiness probe.
	pingTimeout = 2 * time.Second
	// killTimeout bounds the wait for the process to go after SIGKILL.
	killTimeout = 10 * time.Second
	// logTailBytes is how much of the end of the server log goes into a
	// start error.
	logTailBytes = 4096
)

// stopTimeout bounds the fast shutdown; after it the process group is
// killed. It is a variable so that a test can shorten it.
var stopTimeout = 15 * time.Second

// Server is a private database server process owned by this test binary:
// PostgreSQL or MariaDB (or PgBouncer in front of PostgreSQL), on 127.0.0.1 and a port of its own, with its data
// in a temporary directory. It can be stopped and started again on the same
// port and data directory, which is what fault tests need.
//
// A Server's methods may be called from several goroutines.
type Server struct {
	eng  *engine   // what differs between the kinds of server
	bin  string    // the server binary: postgres or mariadbd
	dir  serverDir // where its files are, and whom it runs as
	port int
	// settings are extra "name=value" server settings (PostgreSQL's -c),
	// passed after the defaults.
	settings []string

	mu     sync.Mutex
	proc   *process // the running server; nil while stopped
	admin  *sql.DB  // a pool on the admin database; nil while stopped
	closed bool
}

// engine is what differs between the kinds of private server: the
// server's command line, its DSNs and the signals that end it. A Server
// has one, chosen by the function that starts it: postgresEngine
// (StartPostgresWith), mariadbEngine (StartMariaDB) or pgbouncerEngine
// (StartPgBouncer).
type engine struct {
	kind    string   // KindPostgres or KindMySQL
	dialect *dialect // the admin pool's driver, and the statements that create and drop databases
	// dsn is Server.DSN for a server on port.
	dsn func(port int, database string) string
	// The admin pool, which probes the server and creates and drops
	// databases, connects to dsn(port, adminDatabase) + adminParams.
	adminDatabase, adminParams string
	// configure, when set, writes the server's configuration file before
	// each start (PgBouncer, which takes its port from it).
	configure func(s *Server) error
	// args is the command line of the server binary.
	args func(s *Server) []string
	// stop asks the server for a fast shutdown; death is what the server
	// gets when the test binary dies (Pdeathsig).
	stop, death syscall.Signal
}

// adminDSN is the DSN of the admin pool of a server on port.
func (e *engine) adminDSN(port int) string {
	return e.dsn(port, e.adminDatabase) + e.adminParams
}

// serverDir is a server's temporary directory, the files in it, and the
// OS user the server's processes run as.
type serverDir struct {
	root    string              // temporary directory holding everything
	dataDir string              // the data directory, inside root
	tmpDir  string              // the server's own temporary directory, inside root
	logPath string              // the server's stdout and stderr, inside root
	cred    *syscall.Credential // the OS user to run as; nil: the current user
}

// process is one run of a server binary.
type process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // the result of Wait; read it only after done is closed
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kind returns "postgres", "mysql" or "pgbouncer".
func (s *Server) Kind() string { return s.eng.kind }

// Port returns the TCP port on 127.0.0.1 that the server listens on. It
// stays the same across Stop and Start.
func (s *Server) Port() int { return s.port }

// Pid returns the process id of the running server, or 0 when it is not
// running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return 0
	}
	return s.proc.pid
}

// Running reports whether the server process is running. It does not check
// that the server accepts connections.
func (s *Server) Running() bool {
	return s.Pid() != 0
}

// DSN returns a DSN for the named database that the matching gorm driver
// (and database/sql driver) accepts, over TCP to 127.0.0.1:Port.
//
// For PostgreSQL it is "host=127.0.0.1 port=P user=postgres dbname=DB
// sslmode=disable". For MariaDB it is "root@tcp(127.0.0.1:P)/DB" with no
// parameters, so that callers can append their own ("?parseTime=true" and
// so on). An empty database name connects to no particular database on
// MariaDB and to the "postgres" database on PostgreSQL.
func (s *Server) DSN(database string) string { return s.eng.dsn(s.port, database) }

// validName matches the database names that CreateDatabase accepts. They
// need no quoting rules beyond the plain identifier quotes, and fit in both
// servers' 63-character limit.
var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// CreateDatabase creates an empty database with the given name. The name
// must be a plain identifier: letters, digits and underscores, not starting
// with a digit, at most 63 characters.
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("testdb: create %s database %q: the name must match %s", s.eng.kind, name, validName)
	}
	if err := s.exec(ctx, s.eng.dialect.create(name)); err != nil {
		return fmt.Errorf("testdb: create %s database %q on port %d: %w", s.eng.kind, name, s.port, err)
	}
	return nil
}

// DropDatabase drops the named database if it exists. On PostgreSQL it
// ends any sessions still connected to it first.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("testdb: drop %s database %q: the name must match %s", s.eng.kind, name, validName)
	}
	if err := s.exec(ctx, s.eng.dialect.drop(name)); err != nil {
		return fmt.Errorf("testdb: drop %s database %q on port %d: %w", s.eng.kind, name, s.port, err)
	}
	return nil
}

// exec runs one statement on the admin pool.
func (s *Server) exec(ctx context.Context, stmt string, args ...any) error {
	admin, err := s.adminPool()
	if err != nil {
		return err
	}
	_, err = admin.ExecContext(ctx, stmt, args...)
	return err
}

// adminPool returns the admin pool of the running server.
func (s *Server) adminPool() (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil || s.proc == nil || s.proc.exited() {
		return nil, errors.New("the server is not running")
	}
	return s.admin, nil
}

// Start starts the server again after Stop, on the same port and data
// directory, and waits (at most a minute) until it accepts connections.
// It does nothing if the server is running. It fails after Close.
func (s *Server) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return s.start(ctx)
}

func (s *Server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("testdb: start %s server on port %d: the server was closed", s.eng.kind, s.port)
	}
	if s.proc != nil {
		if !s.proc.exited() {
			return nil
		}
		// It died on its own; clear up and start it again.
		s.clearLocked()
	}
	return s.startLocked(ctx)
}

// Stop shuts the server down fast (PostgreSQL's fast shutdown, MariaDB's
// normal shutdown on SIGTERM) and keeps its data directory, so that Start
// can bring it back. If the server has not exited within 15 s, its whole
// process group is killed. Stop does nothing if the server is not running.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Restart stops the server and starts it again on the same port and data
// directory.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start()
}

// Close stops the server and removes its temporary directory, data and
// log included. The server cannot be started again. Close may be called
// more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	unregister(s)
	if p := s.proc; p != nil && p.exited() {
		// Neither Stop nor Kill ended it: it died on its own while the
		// tests used it, and the tests that failed then saw only refused
		// connections. Say so, with its log, before the log is removed.
		fmt.Fprintf(os.Stderr, "testdb: LOUD: the %s server (pid %d) had exited on its own (%v) before it was closed\n%s\n",
			s.eng.kind, p.pid, p.err, s.dir.logTail(0))
	}
	err := s.stopLocked()
	if rmErr := os.RemoveAll(s.dir.root); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("testdb: remove %s server directory: %w", s.eng.kind, rmErr))
	}
	return err
}

// clearLocked forgets a process that has exited and closes the admin pool.
func (s *Server) clearLocked() {
	if s.admin != nil {
		_ = s.admin.Close()
		s.admin = nil
	}
	s.proc = nil
}

func (s *Server) stopLocked() error {
	p := s.proc
	if p == nil {
		return nil
	}
	s.clearLocked()
	if p.exited() {
		return nil
	}
	sig := s.eng.stop
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("testdb: stop %s server (pid %d): send %v: %w", s.eng.kind, p.pid, sig, err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	// The fast shutdown did not finish in time.
	if err := p.kill(); err != nil {
		return fmt.Errorf("testdb: stop %s server (pid %d): it ignored %v for %s: %w", s.eng.kind, p.pid, sig, stopTimeout, err)
	}
	return nil
}

// Kill kills the server at once with SIGKILL, the postmaster and every
// backend, as a crash of the machine or an OOM kill would: nothing is
// flushed or shut down cleanly, and a standby gets no more WAL from it.
// Start brings it back through crash recovery. Kill does nothing if the
// server is not running.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return nil
	}
	s.clearLocked()
	if p.exited() {
		return nil
	}
	if err := p.kill(); err != nil {
		return fmt.Errorf("testdb: kill %s server (pid %d): %w", s.eng.kind, p.pid, err)
	}
	return nil
}

// kill kills p's process group and its children and waits until they
// are gone. The leader has not been reaped yet (done is still open),
// so its process group id cannot have been reused: kill the whole group,
// and the leader's children, which PostgreSQL moves to sessions of their
// own (setsid): they hold the shared memory that a restart must find
// released. They are listed before the kill, while they are still the
// leader's.
func (p *process) kill() error {
	children := running(func(_, ppid, _ int) bool { return ppid == p.pid })
	for _, pid := range children {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing its process group failed: %w", err)
	}
	timer := time.NewTimer(killTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		return fmt.Errorf("still running %s after SIGKILL to its process group", killTimeout)
	}
	// The leader is reaped, but its backends may still be exiting, and a
	// PostgreSQL started before they have refuses the data directory
	// ("pre-existing shared memory block is still in use").
	if live := waitGroupExited(p.pid, killTimeout); len(live) > 0 {
		return fmt.Errorf("processes %v of its group still running %s after SIGKILL", live, killTimeout)
	}
	if live := waitExited(killTimeout, func(pid, _, _ int) bool { return slices.Contains(children, pid) }); len(live) > 0 {
		return fmt.Errorf("its children %v still running %s after SIGKILL", live, killTimeout)
	}
	return nil
}

// waitGroupExited waits at most d until no process of process group pgid
// is running (zombies, which hold no resources, do not count), and returns
// the pids still running then.
func waitGroupExited(pgid int, d time.Duration) []int {
	return waitExited(d, func(_, _, pgrp int) bool { return pgrp == pgid })
}

// waitExited waits at most d until no running process matches, and
// returns the pids still running then.
func waitExited(d time.Duration, match func(pid, ppid, pgrp int) bool) []int {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		live := running(match)
		if len(live) == 0 {
			return nil
		}
		select {
		case <-deadline.C:
			return live
		case <-poll.C:
		}
	}
}

// groupRunning lists the processes of group pgid that are not zombies.
func groupRunning(pgid int) []int {
	return running(func(_, _, pgrp int) bool { return pgrp == pgid })
}

// running lists the processes that are not zombies and match, by pid,
// parent pid and process group, from /proc/<pid>/stat.
func running(match func(pid, ppid, pgrp int) bool) []int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var live []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		pgrp, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && match(pid, ppid, pgrp) {
			live = append(live, pid)
		}
	}
	return live
}

// errPortInUse marks a start that failed because another process took the
// port; the first start then tries another port.
var errPortInUse = errors.New("port already in use")

// portTaken reports whether the log of a failed start says that a port
// chosen for it was taken meanwhile: the server's own ("Address already
// in use"), or the receive port of a Galera joiner's rsync state transfer,
// whose script then ends with status 16 (EBUSY) whether it found the port
// taken or its rsync daemon ended for want of it.
func portTaken(log string) bool {
	return strings.Contains(log, "Address already in use") ||
		strings.Contains(log, "WSREP_SST: [ERROR] Cleanup after exit with status: 16")
}

// startLocked runs the server binary and waits until it accepts
// connections. On failure the process is gone when it returns.
func (s *Server) startLocked(ctx context.Context) error {
	if s.eng.configure != nil {
		if err := s.eng.configure(s); err != nil {
			return err
		}
	}
	logFile, err := os.OpenFile(s.dir.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testdb: start %s server: open log: %w", s.eng.kind, err)
	}
	// The log is appended to across restarts; remember where this run
	// begins so that a start error shows only this run's lines.
	logStart, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		logStart = 0
	}
	cmd := exec.Command(s.bin, s.eng.args(s)...)
	cmd.Dir = s.dir.root
	cmd.Env = s.dir.env()
	cmd.Stdout = logFile // an *os.File is handed to the child as is: no copying goroutine
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A process group of its own: a Ctrl-C meant for the test binary
		// does not reach the server, and Stop can kill the whole group.
		Setpgid:    true,
		Credential: s.dir.cred,
		// If the test binary dies (a panic, a -timeout, a kill), the server
		// goes too.
		Pdeathsig: s.eng.death,
	}
	p, err := launch(cmd)
	_ = logFile.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("testdb: start %s server: run %s: %w", s.eng.kind, s.bin, err)
	}

	admin, err := s.waitReady(ctx, p)
	if err != nil {
		// Kill it whatever state it is in. It has not been reaped (or it
		// has exited on its own and the group is empty), so the group id
		// is still its own.
		if !p.exited() {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			timer := time.NewTimer(killTimeout)
			select {
			case <-p.done:
			case <-timer.C:
			}
			timer.Stop()
		}
		tail := s.dir.logTail(logStart)
		if portTaken(tail) {
			err = fmt.Errorf("%w (%w)", err, errPortInUse)
		}
		return fmt.Errorf("%w\n%s", err, tail)
	}
	s.proc = p
	s.admin = admin
	return nil
}

// launch starts cmd and reaps it in a goroutine of its own, so that its
// Pdeathsig fires only when this process dies (see internal/proc).
func launch(cmd *exec.Cmd) (*process, error) {
	pp, err := proc.Start(cmd)
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, pid: pp.Pid, done: make(chan struct{})}
	go func() {
		<-pp.Done()
		p.err = pp.Err()
		close(p.done)
	}()
	return p, nil
}

// waitReady probes the server until it answers, the process exits, ctx is
// done, or startTimeout passes. It returns the open admin pool.
func (s *Server) waitReady(ctx context.Context, p *process) (*sql.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// A probe can hang, for instance on a port that another process has
	// taken and does not answer on. End it as soon as the server exits.
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	admin, err := s.eng.dialect.open(s.eng.adminDSN(s.port), 0)
	if err != nil {
		return nil, fmt.Errorf("testdb: start %s server: open admin pool: %w", s.eng.kind, err)
	}
	admin.SetMaxOpenConns(4)
	admin.SetMaxIdleConns(2)
	admin.SetConnMaxIdleTime(30 * time.Second)

	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	began := time.Now()
	for {
		pingCtx, pingCancel := context.WithTimeout(ctx, pingTimeout)
		lastErr := admin.PingContext(pingCtx)
		pingCancel()
		if lastErr == nil {
			return admin, nil
		}
		if p.exited() {
			_ = admin.Close()
			return nil, fmt.Errorf("testdb: start %s server on port %d: it exited before accepting connections: %w",
				s.eng.kind, s.port, p.err)
		}
		select {
		case <-p.done:
			_ = admin.Close()
			return nil, fmt.Errorf("testdb: start %s server on port %d: it exited before accepting connections: %w",
				s.eng.kind, s.port, p.err)
		case <-ctx.Done():
			_ = admin.Close()
			return nil, fmt.Errorf("testdb: start %s server on port %d: not accepting connections after %s: %w (last probe: %w)",
				s.eng.kind, s.port, time.Since(began).Round(time.Millisecond), ctx.Err(), lastErr)
		case <-ticker.C:
		}
	}
}

// logTail returns the end of the server log from offset from on, framed so
// that it reads well inside an error message.
func (d *serverDir) logTail(from int64) string {
	return fileTail(d.logPath, from)
}

// fileTail returns at most logTailBytes from the end of the file at path,
// starting no earlier than offset from.
func fileTail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log %s: %v)", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read log %s: %v)", path, err)
	}
	start := max(from, info.Size()-logTailBytes)
	buf := make([]byte, info.Size()-start)
	n, _ := f.ReadAt(buf, start)
	text := strings.TrimRight(string(buf[:n]), "\n")
	if text == "" {
		return fmt.Sprintf("(log %s is empty)", path)
	}
	return fmt.Sprintf("--- end of %s ---\n%s\n---", path, text)
}

// env is the environment for the server processes: this process's,
// without variables that would point the tools elsewhere (PGDATA, PGPORT,
// MYSQL_HOME, TMPDIR and so on), with the C locale and with TMPDIR set to
// the server's own temporary directory. A server that shared the machine's
// temporary directory would share its files' names too: mariadb-install-db
// has failed on another server's leftover "#sql-temptable-..." file.
func (d *serverDir) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PG"), strings.HasPrefix(name, "MYSQL"), strings.HasPrefix(name, "MARIADB"),
			strings.HasPrefix(name, "LC_"), name == "LANG", name == "LANGUAGE", name == "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "LANG=C", "TMPDIR="+d.tmpDir)
}

// serviceUser returns the credential to run a server as. PostgreSQL and
// MariaDB refuse to run as root, so when this process is root the server
// runs as the named OS user (postgres or mysql); otherwise it runs as the
// current user and the result is nil.
func serviceUser(name string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("testdb: running as root, so the server must run as OS user %q, but looking it up failed: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("testdb: OS user %q has a non-numeric uid %q", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("testdb: OS user %q has a non-numeric gid %q", name, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// newServer makes the temporary directory for a server of eng's kind,
// owned by the user it will run as, and the Server value describing it.
func newServer(eng *engine, bin string, cred *syscall.Credential) (*Server, error) {
	sweepOnce.Do(sweepStale)
	root, err := os.MkdirTemp("", dirPrefix+eng.kind+"-")
	if err != nil {
		return nil, fmt.Errorf("testdb: make %s server directory: %w", eng.kind, err)
	}
	// Record which process owns the directory, so that a later test binary
	// can remove it if this one is killed before it can clean up.
	owner := filepath.Join(root, ownerFile)
	if err := os.WriteFile(owner, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(root)
		return nil, fmt.Errorf("testdb: make %s server directory: %w", eng.kind, err)
	}
	tmpDir := filepath.Join(root, "tmp")
	if err := os.Mkdir(tmpDir, 0o700); err != nil {
		_ = os.RemoveAll(root)
		return nil, fmt.Errorf("testdb: make %s server directory: %w", eng.kind, err)
	}
	if cred != nil {
		for _, dir := range []string{root, tmpDir} {
			if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
				_ = os.RemoveAll(root)
				return nil, fmt.Errorf("testdb: hand %s server directory %s to uid %d: %w", eng.kind, dir, cred.Uid, err)
			}
		}
	}
	s := &Server{
		eng: eng,
		bin: bin,
		dir: serverDir{
			root:    root,
			dataDir: filepath.Join(root, "data"),
			tmpDir:  tmpDir,
			logPath: filepath.Join(root, "server.log"),
			cred:    cred,
		},
	}
	register(s)
	return s, nil
}

// dirPrefix starts the name of every server directory under os.TempDir,
// and ownerFile, inside it, holds the pid of the test binary that made it.
const (
	dirPrefix = "leasehold-testdb-"
	ownerFile = "owner.pid"
)

var sweepOnce sync.Once

// sweepStale removes server directories left behind by test binaries that
// were killed (a -timeout panic, a kill -9) before they could clean up.
// Their servers are already gone: they get Pdeathsig when the test binary
// dies. Directories whose owner is alive, or whose owner is unknown, are
// left alone. Errors are ignored; this only saves disk space.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// runSetup runs a one-off setup command (initdb, mariadb-install-db) as the
// server's user, bounded by ctx, and returns an error with the end of its
// output if it fails.
func (s *Server) runSetup(ctx context.Context, bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	out := filepath.Join(s.dir.root, filepath.Base(bin)+".log")
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("testdb: set up %s server: create %s: %w", s.eng.kind, out, err)
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = s.dir.root
	cmd.Env = s.dir.env()
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.dir.cred}
	// On cancellation kill the whole group: mariadb-install-db is a shell
	// script that runs mariadbd.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = killTimeout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testdb: set up %s server: %s failed: %w\n%s", s.eng.kind, filepath.Base(bin), err, fileTail(out, 0))
	}
	return nil
}

// startFirst starts a new server for the first time on a free port. If
// another process grabs the port between choosing and binding it, it tries
// again with another port, up to three times. On failure it closes s.
func (s *Server) startFirst(ctx context.Context) error {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var port int
		port, err = freePort()
		if err != nil {
			break
		}
		s.port = port
		if err = s.start(ctx); err == nil || !errors.Is(err, errPortInUse) {
			break
		}
	}
	if err != nil {
		_ = s.Close()
		return err
	}
	return nil
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testdb: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("testdb: find a free port: %w", err)
	}
	return port, nil
}

// findBinary returns the first of candidates that is an executable file,
// or else name as found in PATH. It returns an error wrapping
// ErrBinariesMissing if there is none.
func findBinary(name string, candidates ...string) (string, error) {
	for _, c := range candidates {
		if info, err := os.Stat(c); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	where := "PATH"
	if len(candidates) > 0 {
		where = strings.Join(candidates, ", ") + " or PATH"
	}
	return "", fmt.Errorf("%w: %s not found in %s", ErrBinariesMissing, name, where)
}

// All servers created by this package in this process, so that Run can
// stop them all, including ones whose test forgot to.
var (
	registryMu sync.Mutex
	registry   = map[*Server]struct{}{}
)

func register(s *Server) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[s] = struct{}{}
}

func unregister(s *Server) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, s)
}

// closeAll closes every server still registered.
func closeAll() error {
	registryMu.Lock()
	servers := make([]*Server, 0, len(registry))
	for s := range registry {
		servers = append(servers, s)
	}
	registryMu.Unlock()
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
