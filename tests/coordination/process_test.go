package coordination_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestContentionProcesses runs 20 contenders for one global election in
// separate OS processes (5 processes of 4 coordinators each), over repeated
// terms. Most terms end by release; every fourth epoch's leader is killed
// with SIGKILL by the test, so its term ends only by expiry, and a new
// process replaces the killed one. Every leader records its term in a
// history table, with the database clock read inside fenced transactions.
// The history must show strictly increasing epochs, no gaps the leaders did
// not explain, and no two terms at once by the database clock.
//
// The contenders are this test binary run again: an init function turns
// the binary into a contender when contenderEnv is set.
func TestContentionProcesses(t *testing.T) {
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			runContentionProcesses(t, tg)
		})
	}
}

// Settings of the contention test, shared by the test and its contender
// processes.
const (
	// contenderEnv switches the test binary into a contender process.
	contenderEnv = "LEASEHOLD_CONTENDER"
	// contenderDriverEnv and contenderDSNEnv say which database to use,
	// contenderProcEnv numbers the process (it goes into node names).
	contenderDriverEnv = "LEASEHOLD_CONTENDER_DRIVER"
	contenderDSNEnv    = "LEASEHOLD_CONTENDER_DSN"
	contenderProcEnv   = "LEASEHOLD_CONTENDER_PROC"

	contenderProcs    = 5  // processes alive at any time
	contendersPerProc = 4  // coordinators per process
	contentionTerms   = 30 // finished terms to wait for
	// contentionKillEvery: a leader whose epoch is a multiple of it waits
	// to be killed instead of releasing.
	contentionKillEvery = 4
	// contentionHold is how long a leader holds the lease between its two
	// fenced writes before it releases.
	contentionHold = 50 * time.Millisecond
	// contentionElection is the election every contender campaigns for.
	contentionElection = "contended-procs"
	// contentionTable records one row per term.
	contentionTable = "contention_history"
)

func init() {
	if os.Getenv(contenderEnv) != "1" {
		return
	}
	// This is a contender process started by TestContentionProcesses: run
	// its body and exit before the testing package gets to run anything.
	os.Exit(contenderMain())
}

// contenderOut writes one protocol line to the parent on stdout.
var contenderOut struct {
	mu sync.Mutex
	w  io.Writer
}

func contenderSay(format string, args ...any) {
	line := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	contenderOut.mu.Lock()
	defer contenderOut.mu.Unlock()
	_, _ = fmt.Fprintln(contenderOut.w, line)
}

// contenderMain is the body of a contender process. It runs
// contendersPerProc coordinators campaigning for contentionElection until
// SIGTERM, then shuts down gracefully and returns 0. It tells the parent,
// one line each on stdout:
//
//	holder H              a coordinator of this process, before it campaigns
//	nostart E REASON      the term of epoch E ended before its start was recorded
//	noend E REASON        the term of epoch E ended before its end was recorded
//	ambiguous TEXT        an acquire failed without telling whether it committed
//	error TEXT            something that must fail the test
//
// If the parent dies (stdin reaches EOF), it exits at once with code 3.
func contenderMain() int {
	contenderOut.w = os.Stdout
	driver, dsn, proc := os.Getenv(contenderDriverEnv), os.Getenv(contenderDSNEnv), os.Getenv(contenderProcEnv)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3) // the parent is gone: leave no orphan behind
	}()
	stopCtx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()

	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()),
		zapcore.Lock(os.Stderr), zap.InfoLevel)).With(zap.String("proc", proc))
	defer func() { _ = log.Sync() }()

	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		contenderSay("error open database: %v", err)
		return 1
	}
	sqlDB, err := db.DB()
	if err != nil {
		contenderSay("error get *sql.DB: %v", err)
		return 1
	}
	defer func() { _ = sqlDB.Close() }()

	cfg := notifying(fastConfig())
	cfg.Logger = log
	var coords []*coordination.Coordinator
	for i := range contendersPerProc {
		id, err := identity.New(fmt.Sprintf("proc%s-c%d", proc, i), "test")
		if err != nil {
			contenderSay("error identity: %v", err)
			return 1
		}
		c, err := coordination.New(db, id, cfg)
		if err != nil {
			contenderSay("error New: %v", err)
			return 1
		}
		coords = append(coords, c)
		// An acquire that times out may still have committed: the epoch
		// it took then has no term, and the parent must be told.
		evs := c.Subscribe(stopCtx, 64) // closed when Run returns, at the latest
		go func() {
			for ev := range evs {
				if ev.Kind == coordination.EventError && strings.HasSuffix(ev.Key, "/"+contentionElection) &&
					ev.Err != nil && strings.HasPrefix(ev.Err.Error(), "acquire: ") {
					contenderSay("ambiguous %v", ev.Err)
				}
			}
		}()
		contenderSay("holder %s", c.Holder())
	}

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	runErrs := make(chan error, len(coords))
	for _, c := range coords {
		go func() { runErrs <- c.Run(runCtx) }()
	}
	var wg sync.WaitGroup
	for _, c := range coords {
		e, err := c.Election(coordination.GlobalScope, contentionElection)
		if err != nil {
			contenderSay("error Election: %v", err)
			return 1
		}
		wg.Go(func() {
			if err := e.Run(stopCtx, contenderTerm(db, c), nil); err != nil {
				contenderSay("error Election.Run: %v", err)
			}
		})
	}
	wg.Wait() // until SIGTERM
	cancelRun()
	code := 0
	for range coords {
		if err := <-runErrs; err != nil {
			contenderSay("error Run: %v", err)
			code = 1
		}
	}
	return code
}

// contenderTerm is the leader work of one contender. It records the start
// of the term (fenced, with the database clock), then either waits to be
// killed (every contentionKillEvery-th epoch) or holds the lease for
// contentionHold, records the end the same way and returns, which releases.
func contenderTerm(db *gorm.DB, c *coordination.Coordinator) coordination.LeaderFunc {
	return func(ctx context.Context, l *coordination.Lease) error {
		epoch := l.Epoch()
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := l.Fence(tx); err != nil {
				return err
			}
			now, err := dbClockIn(tx)
			if err != nil {
				return err
			}
			return tx.Exec("INSERT INTO "+contentionTable+" (epoch, holder, start_us) VALUES (?, ?, ?)",
				epoch, c.Holder(), now).Error
		})
		if err != nil {
			contenderEnded(ctx, "nostart", epoch, err)
			return nil
		}
		if epoch%contentionKillEvery == 0 {
			<-ctx.Done() // the parent kills this process now
			contenderSay("noend %d not killed: %v", epoch, context.Cause(ctx))
			return nil
		}
		hold := time.NewTimer(contentionHold)
		defer hold.Stop()
		select {
		case <-hold.C:
		case <-ctx.Done():
			contenderSay("noend %d %v", epoch, context.Cause(ctx))
			return nil
		}
		err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := l.Fence(tx); err != nil {
				return err
			}
			now, err := dbClockIn(tx)
			if err != nil {
				return err
			}
			res := tx.Exec("UPDATE "+contentionTable+" SET end_us = ? WHERE epoch = ? AND holder = ? AND end_us IS NULL",
				now, epoch, c.Holder())
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return fmt.Errorf("end of epoch %d updated %d rows, want 1", epoch, res.RowsAffected)
			}
			return nil
		})
		if err != nil {
			contenderEnded(ctx, "noend", epoch, err)
		}
		return nil
	}
}

// contenderEnded reports a term whose record could not be written. A fenced
// check that failed, or a term that ended meanwhile, is an expected way for
// a term to end; anything else (a duplicate epoch above all) fails the test.
func contenderEnded(ctx context.Context, what string, epoch int64, err error) {
	if errors.Is(err, coordination.ErrFenced) || ctx.Err() != nil {
		contenderSay("%s %d %v", what, epoch, err)
		return
	}
	contenderSay("error %s of epoch %d: %v", what, epoch, err)
}

// dbClockIn reads the database clock in microseconds inside tx, with the
// library's own expression for each dialect.
func dbClockIn(tx *gorm.DB) (int64, error) {
	s, err := store.New(tx, store.Options{})
	if err != nil {
		return 0, err
	}
	now, err := s.Now(tx.Statement.Context)
	return now.UnixMicro(), err
}

// contenderProc is one contender process seen from the parent.
type contenderProc struct {
	n      int
	cmd    *exec.Cmd
	stdin  io.Closer
	stderr string        // path of its stderr log
	ready  chan struct{} // closed once it has announced all its holders
	done   chan struct{} // closed after its stdout ended and it was reaped

	// Guarded by contention.mu.
	holders int
	killed  bool
	waitErr error
}

// contention is the parent's view of all contender processes.
type contention struct {
	t      *testing.T
	driver string
	dsn    string
	dir    string

	mu      sync.Mutex
	procs   []*contenderProc
	holders map[string]*contenderProc
	nostart map[int64]string // epoch -> reason
	noend   map[int64]string
	// ambiguous lists the acquires that failed without telling whether
	// they committed; each may have taken an epoch that has no term.
	ambiguous []string
	errs      []string
}

func runContentionProcesses(t *testing.T, tg testdb.Target) {
	driver, dsn := tg.OpenDSN(t)
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatalf("open %s database: %v", tg.Name, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	if err := db.Exec("CREATE TABLE " + contentionTable +
		" (epoch BIGINT PRIMARY KEY, holder VARCHAR(255) NOT NULL, start_us BIGINT NOT NULL, end_us BIGINT)").Error; err != nil {
		t.Fatalf("create %s: %v", contentionTable, err)
	}

	ct := &contention{
		t: t, driver: driver, dsn: dsn, dir: t.TempDir(),
		holders: make(map[string]*contenderProc),
		nostart: make(map[int64]string),
		noend:   make(map[int64]string),
	}
	t.Cleanup(ct.killAll)
	began := time.Now()
	for range contenderProcs {
		ct.spawn()
	}

	leaseName := "global/" + contentionElection
	killed := make(map[int64]int64) // epoch -> expiry observed just before the kill
	handled := make(map[int64]bool) // kill epochs dealt with
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.NewTimer(4 * wait)
	defer deadline.Stop()
	var hist []historyRow
	for len(hist) <= contentionTerms { // the last row is the term still running
		select {
		case <-ticker.C:
		case <-deadline.C:
			t.Fatalf("only %d of %d terms recorded within %v (%d kills)", max(len(hist)-1, 0), contentionTerms, 4*wait, len(killed))
		}
		ct.checkAlive()
		var err error
		if hist, err = readHistory(db); err != nil {
			t.Fatalf("read history: %v", err)
		}
		// Kill the leader of every term that waits to be killed, once the
		// database confirms it is the current holder of that epoch.
		for _, h := range hist {
			if h.Epoch%contentionKillEvery != 0 || h.EndUS.Valid || handled[h.Epoch] {
				continue
			}
			p := ct.procOf(h.Holder)
			if p == nil {
				continue // its holder line is not read yet
			}
			rows, err := rawStore(t, db).Get(context.Background(), []string{leaseName})
			if err != nil {
				t.Fatalf("read lease: %v", err)
			}
			if len(rows) != 1 || rows[0].Holder != h.Holder || rows[0].Epoch != h.Epoch || !rows[0].Live() {
				handled[h.Epoch] = true // the term is already over; the leader says why
				continue
			}
			ct.kill(p)
			handled[h.Epoch] = true
			killed[h.Epoch] = rows[0].ExpiresAt.UnixMicro()
			ct.spawn()
		}
	}
	recorded := time.Since(began)

	ct.stopAll()
	hist, err = readHistory(db)
	if err != nil {
		t.Fatalf("read history: %v", err)
	}
	ct.check(hist, killed)
	t.Logf("%s: %d terms (epochs %d..%d) in %v by %d distinct holders in %d processes; %d leaders killed with SIGKILL, %d terms ended by release",
		tg.Name, len(hist), hist[0].Epoch, hist[len(hist)-1].Epoch, recorded.Round(time.Millisecond),
		distinctHolders(hist), len(ct.procs), len(killed), countEnded(hist))
}

// historyRow is one row of contentionTable.
type historyRow struct {
	Epoch   int64
	Holder  string
	StartUS int64
	EndUS   sql.NullInt64
}

func readHistory(db *gorm.DB) ([]historyRow, error) {
	rs, err := db.Raw("SELECT epoch, holder, start_us, end_us FROM " + contentionTable + " ORDER BY epoch").Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []historyRow
	for rs.Next() {
		var h historyRow
		if err := rs.Scan(&h.Epoch, &h.Holder, &h.StartUS, &h.EndUS); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rs.Err()
}

func distinctHolders(hist []historyRow) int {
	seen := make(map[string]bool)
	for _, h := range hist {
		seen[h.Holder] = true
	}
	return len(seen)
}

func countEnded(hist []historyRow) int {
	n := 0
	for _, h := range hist {
		if h.EndUS.Valid {
			n++
		}
	}
	return n
}

// spawn starts one more contender process.
func (ct *contention) spawn() {
	t := ct.t
	ct.mu.Lock()
	n := len(ct.procs)
	ct.mu.Unlock()
	errPath := filepath.Join(ct.dir, fmt.Sprintf("proc%02d.stderr", n))
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close() // the child has its own descriptor
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		contenderEnv+"=1",
		contenderDriverEnv+"="+ct.driver,
		contenderDSNEnv+"="+ct.dsn,
		contenderProcEnv+"="+fmt.Sprintf("%02d", n),
	)
	cmd.Stderr = errFile // an *os.File: no copying goroutine
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start contender process: %v", err)
	}
	p := &contenderProc{n: n, cmd: cmd, stdin: stdin, stderr: errPath, ready: make(chan struct{}), done: make(chan struct{})}
	ct.mu.Lock()
	ct.procs = append(ct.procs, p)
	ct.mu.Unlock()
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ct.line(p, sc.Text())
		}
		err := cmd.Wait() // after every read from stdout, as exec requires
		ct.mu.Lock()
		p.waitErr = err
		ct.mu.Unlock()
	}()
}

// line records one protocol line from process p.
func (ct *contention) line(p *contenderProc, line string) {
	kind, rest, _ := strings.Cut(line, " ")
	ct.mu.Lock()
	defer ct.mu.Unlock()
	switch kind {
	case "holder":
		// The holders are announced after the SIGTERM handler is in place.
		ct.holders[rest] = p
		if p.holders++; p.holders == contendersPerProc {
			close(p.ready)
		}
	case "nostart", "noend":
		es, reason, _ := strings.Cut(rest, " ")
		epoch, err := strconv.ParseInt(es, 10, 64)
		if err != nil {
			ct.errs = append(ct.errs, fmt.Sprintf("proc%02d: bad line %q", p.n, line))
			return
		}
		if kind == "nostart" {
			ct.nostart[epoch] = reason
		} else {
			ct.noend[epoch] = reason
		}
	case "ambiguous":
		ct.ambiguous = append(ct.ambiguous, fmt.Sprintf("proc%02d: %s", p.n, rest))
	case "error":
		ct.errs = append(ct.errs, fmt.Sprintf("proc%02d: %s", p.n, rest))
	default:
		ct.errs = append(ct.errs, fmt.Sprintf("proc%02d: unexpected output %q", p.n, line))
	}
}

func (ct *contention) procOf(holder string) *contenderProc {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.holders[holder]
}

// kill ends p with SIGKILL: its leases are neither released nor renewed.
func (ct *contention) kill(p *contenderProc) {
	ct.mu.Lock()
	p.killed = true
	ct.mu.Unlock()
	if err := p.cmd.Process.Kill(); err != nil {
		ct.t.Fatalf("kill contender proc%02d: %v", p.n, err)
	}
}

// checkAlive fails the test when a process ended that was not killed, or
// a process reported an error.
func (ct *contention) checkAlive() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for _, p := range ct.procs {
		select {
		case <-p.done:
			if !p.killed {
				ct.t.Fatalf("contender proc%02d exited on its own: %v\n%s", p.n, p.waitErr, tail(p.stderr))
			}
		default:
		}
	}
	if len(ct.errs) > 0 {
		ct.t.Fatalf("contenders reported errors:\n%s", strings.Join(ct.errs, "\n"))
	}
}

// stopAll sends SIGTERM to every live process and waits for each to shut
// down gracefully: exit status 0 (a data race in a child exits 66).
func (ct *contention) stopAll() {
	t := ct.t
	ct.mu.Lock()
	procs := append([]*contenderProc(nil), ct.procs...)
	ct.mu.Unlock()
	timeout := time.After(wait)
	for _, p := range procs {
		ct.mu.Lock()
		killed := p.killed
		ct.mu.Unlock()
		if killed {
			continue
		}
		// A process started moments ago may not handle SIGTERM yet.
		select {
		case <-p.ready:
		case <-p.done:
			continue
		case <-timeout:
			t.Fatalf("contender proc%02d did not announce its holders within %v\n%s", p.n, wait, tail(p.stderr))
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM to proc%02d: %v", p.n, err)
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-timeout:
			t.Fatalf("contender proc%02d did not exit within %v of SIGTERM\n%s", p.n, wait, tail(p.stderr))
		}
		ct.mu.Lock()
		killed, err := p.killed, p.waitErr
		ct.mu.Unlock()
		var exit *exec.ExitError
		switch {
		case killed:
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Errorf("killed contender proc%02d ended with %v, want SIGKILL", p.n, err)
			}
		case err != nil:
			t.Errorf("contender proc%02d did not shut down cleanly on SIGTERM: %v\n%s", p.n, err, tail(p.stderr))
		}
	}
}

// killAll kills whatever is still running when the test ends, and waits
// for the reaping goroutines.
func (ct *contention) killAll() {
	ct.mu.Lock()
	procs := append([]*contenderProc(nil), ct.procs...)
	ct.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(wait):
			ct.t.Errorf("contender proc%02d (pid %d) not reaped within %v of SIGKILL", p.n, p.cmd.Process.Pid, wait)
		}
		_ = p.stdin.Close()
	}
	if ct.t.Failed() {
		for _, p := range procs {
			ct.t.Logf("proc%02d stderr:\n%s", p.n, tail(p.stderr))
		}
	}
}

// check asserts the history of terms, ordered by epoch.
func (ct *contention) check(hist []historyRow, killed map[int64]int64) {
	t := ct.t
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.errs) > 0 {
		t.Fatalf("contenders reported errors:\n%s", strings.Join(ct.errs, "\n"))
	}
	if len(hist) <= contentionTerms {
		t.Fatalf("%d terms recorded, want more than %d", len(hist), contentionTerms)
	}
	// Every term and every acquired epoch is accounted for: epochs start
	// at 1, and an epoch without a row is one whose leader said why, or
	// one taken by an acquire that failed without telling whether it
	// committed (at most one epoch each).
	var unexplained []int64
	explained := func(from, to int64) {
		for e := from; e < to; e++ {
			if _, ok := ct.nostart[e]; !ok {
				unexplained = append(unexplained, e)
			}
		}
	}
	explained(1, hist[0].Epoch)
	for i, h := range hist {
		if ct.holders[h.Holder] == nil {
			t.Errorf("epoch %d: holder %q is none of the contenders", h.Epoch, h.Holder)
		}
		if h.EndUS.Valid && h.EndUS.Int64 < h.StartUS {
			t.Errorf("epoch %d ended at %d before it started at %d", h.Epoch, h.EndUS.Int64, h.StartUS)
		}
		if i == 0 {
			continue
		}
		prev := hist[i-1]
		explained(prev.Epoch+1, h.Epoch)
		if h.Epoch <= prev.Epoch {
			t.Errorf("epochs not strictly increasing: %d after %d", h.Epoch, prev.Epoch)
		}
		if h.StartUS < prev.StartUS {
			t.Errorf("epoch %d started at %d, before epoch %d started at %d (database clock)",
				h.Epoch, h.StartUS, prev.Epoch, prev.StartUS)
		}
		// Never two holders at once, by the database clock.
		if prev.EndUS.Valid && h.StartUS < prev.EndUS.Int64 {
			t.Errorf("two holders at once: epoch %d (%s) started %v before epoch %d (%s) ended",
				h.Epoch, h.Holder, time.Duration(prev.EndUS.Int64-h.StartUS)*time.Microsecond, prev.Epoch, prev.Holder)
		}
		if expiry, ok := killed[prev.Epoch]; ok {
			// The killed term's lease was live until at least expiry: the
			// successor must have waited for it to expire.
			if h.StartUS <= expiry {
				t.Errorf("epoch %d started at %d, before killed epoch %d expired (at or after %d)",
					h.Epoch, h.StartUS, prev.Epoch, expiry)
			}
		}
		if !prev.EndUS.Valid {
			if _, wasKilled := killed[prev.Epoch]; !wasKilled {
				if _, ok := ct.noend[prev.Epoch]; !ok {
					t.Errorf("epoch %d has no end, was not killed, and its leader did not say why", prev.Epoch)
				}
			}
		}
	}
	if len(unexplained) > len(ct.ambiguous) {
		t.Errorf("epochs %v have no history row and no leader reported why; %d acquires were ambiguous: %q",
			unexplained, len(ct.ambiguous), ct.ambiguous)
	} else if len(unexplained) > 0 {
		t.Logf("epochs %v have no history row: taken by ambiguous acquires %q", unexplained, ct.ambiguous)
	}
	if len(killed) < 3 {
		t.Errorf("%d leaders killed, want at least 3", len(killed))
	}
	if n := countEnded(hist); n < contentionTerms/2 {
		t.Errorf("%d terms ended by release, want at least %d", n, contentionTerms/2)
	}
	if len(ct.nostart)+len(ct.noend) > 0 {
		var lines []string
		for e, r := range ct.nostart {
			lines = append(lines, fmt.Sprintf("epoch %d: no start: %s", e, r))
		}
		for e, r := range ct.noend {
			lines = append(lines, fmt.Sprintf("epoch %d: no end: %s", e, r))
		}
		sort.Strings(lines)
		t.Logf("terms the leaders could not record fully:\n%s", strings.Join(lines, "\n"))
	}
}

// tail returns the end of a log file.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	const keep = 4000
	if len(data) > keep {
		data = data[len(data)-keep:]
	}
	return string(data)
}
