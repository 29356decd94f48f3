package bench

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/proc"
)

// child is one running worker process and what it reported.
type child struct {
	name    string
	p       *proc.Process
	spawned time.Time
	exited  chan struct{} // closed once exitedAt is set

	mu       sync.Mutex
	ready    time.Time // "ready": the worker's instant
	held     time.Time // receipt of "held"
	assigned Report    // the latest "assigned"
	last     Report    // the latest "stats" or "exit"
	exit     *Report
	renews   []renewSample
	terms    []termSpan // "elected" and "ended", in order
	units    []unitMark // "unit"
	termAt   time.Time  // when the runner sent SIGTERM
	exitedAt time.Time  // when the runner reaped it
	maxConns int        // most connections at any sample
	samples  int        // connection samples taken
}

// termSpan is one term a worker reported, on its clock: the start of its
// leader work ("elected") and its return ("ended"; zero until then).
type termSpan struct {
	epoch      int64
	start, end time.Time
}

// unitMark is one unit of leader work a worker reported: its term's
// epoch and the instant it was done.
type unitMark struct {
	epoch int64
	at    time.Time
}

// renewSample is one renewal round trip and when its line arrived.
type renewSample struct {
	at  time.Time
	dur time.Duration
}

// spawn starts a worker named name on tg with the given mode arguments.
func (r *runner) spawn(ctx context.Context, tg *target, name string, args ...string) (*child, error) {
	bin, err := r.workerBin(ctx)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(r.tmp, name+".log"))
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"-driver", tg.driver, "-dsn", tg.childDSN(name), "-node", name}, args...)...)
	cmd.Stdout, cmd.Stderr = pw, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &child{name: name, spawned: time.Now(), exited: make(chan struct{})}
	c.p, err = proc.Start(cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		logf.Close()
		return nil, fmt.Errorf("start worker %s: %w", name, err)
	}
	read := make(chan struct{}) // closed once the report pipe is drained
	go func() {
		defer close(read)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for sc.Scan() {
			var rep Report
			if json.Unmarshal(sc.Bytes(), &rep) != nil {
				continue
			}
			c.receive(rep, time.Now())
		}
	}()
	go func() {
		<-c.p.Done()
		c.mu.Lock()
		c.exitedAt = time.Now()
		c.mu.Unlock()
		// The exit report is the child's last line: count the child as
		// exited once it is read too, or a reader of state() right after
		// the exit would miss it.
		select {
		case <-read:
		case <-time.After(10 * time.Second): // a grandchild holding the pipe
		}
		close(c.exited)
		logf.Close()
	}()
	return c, nil
}

func (c *child) receive(rep Report, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wall := time.Unix(0, rep.WallNS)
	switch rep.Type {
	case "ready":
		c.ready = wall
	case "elected":
		c.terms = append(c.terms, termSpan{epoch: rep.Epoch, start: wall})
	case "ended":
		for i := len(c.terms) - 1; i >= 0; i-- {
			if c.terms[i].epoch == rep.Epoch {
				c.terms[i].end = wall
				break
			}
		}
	case "unit":
		c.units = append(c.units, unitMark{epoch: rep.Epoch, at: wall})
	case "held":
		c.held = at
	case "assigned":
		c.assigned = rep
	case "stats", "exit":
		c.last = rep
		for _, us := range rep.RenewUS {
			c.renews = append(c.renews, renewSample{at: at, dur: time.Duration(us) * time.Microsecond})
		}
		if rep.Type == "exit" {
			r := rep
			c.exit = &r
		}
	}
}

// state returns a copy of what the child reported.
func (c *child) state() (last Report, held time.Time, exit *Report, exitedAt time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, c.held, c.exit, c.exitedAt
}

// term sends SIGTERM and returns when.
func (c *child) term() time.Time { return c.signal(syscall.SIGTERM) }

// signal sends sig and returns the instant just before it was sent; the
// instant of SIGTERM is also kept for exitTime.
func (c *child) signal(sig syscall.Signal) time.Time {
	at := time.Now()
	if sig == syscall.SIGTERM {
		c.mu.Lock()
		c.termAt = at
		c.mu.Unlock()
	}
	_ = c.p.Signal(sig)
	return at
}

// assignment returns the child's latest "assigned" report.
func (c *child) assignment() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.assigned
}

// readyAt returns the instant the worker reported "ready", or zero.
func (c *child) readyAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// openTerm returns the child's latest term if it has not ended.
func (c *child) openTerm() (termSpan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.terms); n > 0 && c.terms[n-1].end.IsZero() {
		return c.terms[n-1], true
	}
	return termSpan{}, false
}

// termSince returns the child's first term that started at or after t.
func (c *child) termSince(t time.Time) (termSpan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.terms {
		if !s.start.Before(t) {
			return s, true
		}
	}
	return termSpan{}, false
}

// termEnd returns when the child's term of epoch ended, zero when it has
// not (or was not reported).
func (c *child) termEnd(epoch int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.terms {
		if s.epoch == epoch {
			return s.end
		}
	}
	return time.Time{}
}

// termEnded reports whether the child's term of epoch has ended.
func (c *child) termEnded(epoch int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.terms {
		if s.epoch == epoch {
			return !s.end.IsZero()
		}
	}
	return false
}

// unitsOf counts the units of the term of epoch done before t and at or
// after t.
func (c *child) unitsOf(epoch int64, t time.Time) (before, after int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.units {
		switch {
		case u.epoch != epoch:
		case u.at.Before(t):
			before++
		default:
			after++
		}
	}
	return before, after
}

// stopAll sends SIGTERM to every child and waits at most bound for all to
// exit; those still running then are killed. It returns how many were.
func stopAll(children []*child, bound time.Duration) int {
	for _, c := range children {
		c.term()
	}
	deadline := time.Now().Add(bound)
	killed := 0
	for _, c := range children {
		if !c.waitExited(time.Until(deadline)) {
			_ = c.p.Signal(syscall.SIGKILL)
			c.waitExited(10 * time.Second)
			killed++
		}
	}
	return killed
}

// killAll kills every child still running (after a failed phase).
func killAll(children []*child) {
	for _, c := range children {
		if !c.p.Exited() { // a reaped child's pid may be another's by now
			_ = c.p.Signal(syscall.SIGKILL)
		}
	}
	for _, c := range children {
		c.waitExited(10 * time.Second)
	}
}

// waitExited waits at most d for the child to exit and be recorded.
func (c *child) waitExited(d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitTime returns how long the child took from SIGTERM to exit.
func (c *child) exitTime() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.termAt.IsZero() || c.exitedAt.IsZero() {
		return -1
	}
	return c.exitedAt.Sub(c.termAt)
}

// connSampler samples, every interval, how many connections each child
// has to the database, and keeps each child's maximum. On PostgreSQL it
// reads pg_stat_activity by application_name; on MariaDB it counts the
// child's TCP sockets connected to the server's port (from /proc); on
// SQLite it counts the child's open descriptors of the database file.
type connSampler struct {
	tg       *target
	children []*child
	db       *sql.DB // PostgreSQL only
	stop     chan struct{}
	done     chan struct{}
	errs     int
	lastErr  error
}

// how says how connections are counted on tg's dialect.
func connMethod(dialect string) string {
	switch dialect {
	case "postgres":
		return "pg_stat_activity rows of the process's application_name"
	case "mysql":
		return "the process's TCP sockets connected to the server's port (/proc)"
	default:
		return "the process's open descriptors of the database file (/proc)"
	}
}

func startConnSampler(tg *target, children []*child, every time.Duration) (*connSampler, error) {
	s := &connSampler{tg: tg, children: children, stop: make(chan struct{}), done: make(chan struct{})}
	if tg.dialect == "postgres" {
		db, err := sql.Open("pgx", tg.dsn+" application_name=bench-sampler")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		s.db = db
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s, nil
}

// end stops the sampler and returns its error count and last error.
func (s *connSampler) end() (int, error) {
	close(s.stop)
	<-s.done
	if s.db != nil {
		_ = s.db.Close()
	}
	return s.errs, s.lastErr
}

func (s *connSampler) sample() {
	counts, err := s.count()
	if err != nil {
		s.errs++
		s.lastErr = err
		return
	}
	for _, c := range s.children {
		c.mu.Lock()
		if c.exitedAt.IsZero() {
			c.samples++
			c.maxConns = max(c.maxConns, counts[c.name])
		}
		c.mu.Unlock()
	}
}

// count returns the connections of each child by name.
func (s *connSampler) count() (map[string]int, error) {
	out := map[string]int{}
	if s.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rows, err := s.db.QueryContext(ctx, "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = current_database() GROUP BY 1")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var app string
			var n int
			if err := rows.Scan(&app, &n); err != nil {
				return nil, err
			}
			out[app] = n
		}
		return out, rows.Err()
	}
	var match func(link string) bool
	if s.tg.dialect == "mysql" {
		inodes, err := socketsTo(s.tg.srv.Port())
		if err != nil {
			return nil, err
		}
		match = func(link string) bool {
			ino, ok := strings.CutPrefix(link, "socket:[")
			return ok && inodes[strings.TrimSuffix(ino, "]")]
		}
	} else {
		match = func(link string) bool { return link == s.tg.path }
	}
	for _, c := range s.children {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.p.Pid))
		if err != nil {
			continue // exited
		}
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", c.p.Pid, fd.Name()))
			if err == nil && match(link) {
				out[c.name]++
			}
		}
	}
	return out, nil
}

// socketsTo returns the inodes of the established IPv4 TCP sockets whose
// remote end is 127.0.0.1:port.
func socketsTo(port int) (map[string]bool, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || f[2] != want || f[3] != "01" {
			continue
		}
		out[f[9]] = true
	}
	return out, nil
}

// maxConns returns the most connections any child had at a sample, the
// child, and the number of samples taken.
func maxConns(children []*child) (most int, who string, samples int) {
	for _, c := range children {
		c.mu.Lock()
		if c.maxConns > most || who == "" {
			most, who = c.maxConns, c.name
		}
		samples = max(samples, c.samples)
		c.mu.Unlock()
	}
	return most, who, samples
}

// readyBound bounds the wait for a started worker to report "ready".
const readyBound = 30 * time.Second

// group is worker processes started alike on one database: those a
// section keeps running, and every one it started, for the cleanup.
type group struct {
	r    *runner
	tg   *target
	name string   // prefix of the process names
	args []string // every process's arguments
	live []*child // started, and not yet signalled to end
	all  []*child // every process started
}

// start starts n more processes at once and waits at most readyBound
// for each to report "ready". It returns the last one started.
func (g *group) start(ctx context.Context, n int) (*child, error) {
	var started []*child
	for range n {
		c, err := g.r.spawn(ctx, g.tg, fmt.Sprintf("%s%02d", g.name, len(g.all)+1), g.args...)
		if err != nil {
			return nil, err
		}
		g.all = append(g.all, c)
		g.live = append(g.live, c)
		started = append(started, c)
	}
	for _, c := range started {
		if !waitUntil(ctx, readyBound, func() bool { return !c.readyAt().IsZero() || c.p.Exited() }) || c.readyAt().IsZero() {
			return nil, fmt.Errorf("%s did not report ready within %s (log: %s.log)", c.name, readyBound, c.name)
		}
	}
	return started[len(started)-1], nil
}

// drop takes c out of the live processes, once it was signalled to end.
func (g *group) drop(c *child) {
	g.live = slices.DeleteFunc(g.live, func(x *child) bool { return x == c })
}

// stop sends SIGTERM to the live processes and waits at most stopBound
// for them to exit; it returns how many had to be killed.
func (g *group) stop() int {
	killed := stopAll(g.live, stopBound)
	g.live = nil
	return killed
}

// kill kills every process still running; a section defers it, so that
// a phase that ends early leaves nothing behind (it is a no-op after stop).
func (g *group) kill() { killAll(g.all) }
