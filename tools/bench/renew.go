package bench

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/pgnotify"
)

// Bounds of the renew section.
const (
	// acquireBound bounds the acquisition of each size's new leases, and
	// acquireStall ends it early when no lease was added for that long.
	acquireBound = 2 * time.Minute
	acquireStall = 20 * time.Second
	// serverTarget is the target for the renewal's server time
	// at serverTargetSize leases on PostgreSQL (99th percentile).
	serverTarget     = 2 * time.Millisecond
	serverTargetSize = 10000
)

// defaultSizes are the lease counts of the renew section.
func defaultSizes(dialect string) []int {
	s := []int{1, 100, 1000, 10000}
	if dialect == "postgres" {
		s = append(s, 100000)
	}
	return s
}

// stmtLog keeps every statement a process sent.
type stmtLog struct {
	mu      sync.Mutex
	stmts   []Stmt
	onRenew func(Stmt) // called, outside mu, after each renewal
}

func (l *stmtLog) add(s Stmt) {
	l.mu.Lock()
	l.stmts = append(l.stmts, s)
	l.mu.Unlock()
	if s.Renew && l.onRenew != nil {
		l.onRenew(s)
	}
}

// renewsAfter returns the renewals that started after t, by start.
func (l *stmtLog) renewsAfter(t time.Time) []Stmt {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Stmt
	for _, s := range l.stmts {
		if s.Renew && s.Start.After(t) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Stmt) int { return a.Start.Compare(b.Start) })
	return out
}

// countIn counts the statements that started in [from, to).
func (l *stmtLog) countIn(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.stmts {
		if !s.Start.Before(from) && s.Start.Before(to) {
			n++
		}
	}
	return n
}

// waitCount waits until get reaches want. It gives up after bound, or
// after stall without a new highest value of get (a count that only
// falls and climbs back, as leases lost and taken again, is no progress).
// It returns whether want was reached, the time taken and the last value.
func waitCount(ctx context.Context, get func() int, want int, bound, stall time.Duration) (bool, time.Duration, int) {
	begin := time.Now()
	best, lastRise := get(), begin
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		v := get()
		now := time.Now()
		if v >= want {
			return true, now.Sub(begin), v
		}
		if v > best {
			best, lastRise = v, now
		}
		if now.Sub(begin) >= bound || now.Sub(lastRise) >= stall || ctx.Err() != nil {
			return false, now.Sub(begin), v
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// waitUntil waits at most bound for cond to hold, and reports whether it
// did.
func waitUntil(ctx context.Context, bound time.Duration, cond func() bool) bool {
	ok, _, _ := waitCount(ctx, func() int {
		if cond() {
			return 1
		}
		return 0
	}, 1, bound, bound)
	return ok
}

// runRenew is the renew section: one process (this one) holding more and
// more leases, each with an election whose work waits for its context.
// At each size it measures Ticks renew ticks once every lease is held.
func runRenew(ctx context.Context, r *runner, tg *target) *Table {
	t := &Table{Section: "renew", Dialect: tg.dialect,
		Title: fmt.Sprintf("one process holding N leases (elections), %d renew ticks measured at each N", r.o.Ticks)}
	sizes := r.o.Sizes
	if len(sizes) == 0 {
		sizes = defaultSizes(tg.dialect)
	}
	db, err := tg.open()
	if err != nil {
		t.fail("open", err.Error(), "")
		return t
	}
	defer closeDB(db)
	sqlDB, err := db.DB()
	if err != nil {
		t.fail("open", err.Error(), "")
		return t
	}
	w := &renewWatch{log: &stmtLog{}, conns: startConnGauge(sqlDB, connGaugeEvery), dialect: tg.dialect}
	defer w.conns.end()
	if tg.dialect == "postgres" {
		if w.pg, err = newPGSS(tg.dsn); err != nil {
			t.fail("pg_stat_statements", err.Error(), "readable")
			return t
		}
		defer w.pg.close()
		w.log.onRenew = w.pg.poke
	}
	if err := Trace(db, w.log.add); err != nil {
		t.fail("trace", err.Error(), "")
		return t
	}
	id, err := identity.New("bench-renew", Cluster)
	if err != nil {
		t.fail("identity", err.Error(), "")
		return t
	}
	c, err := coordination.New(db, id, coordination.Config{TTL: TTL, RenewInterval: RenewInterval, ShutdownTimeout: ShutdownTimeout, Notifications: pgnotify.New()})
	if err != nil {
		t.fail("coordinator", err.Error(), "")
		return t
	}
	w.ev = &EventCounts{}
	sctx, unsubscribe := context.WithCancel(ctx)
	defer unsubscribe()
	events := c.Subscribe(sctx, 1<<16)
	go func() {
		for e := range events {
			w.ev.Add(e)
		}
	}()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = c.Run(cctx)
	}()
	select {
	case <-c.Ready():
	case <-time.After(time.Minute):
		t.fail("coordinator ready", "not within 1m", "")
		return t
	}

	var held atomic.Int64
	fn := func(ctx context.Context, _ *coordination.Lease) error {
		held.Add(1)
		<-ctx.Done()
		held.Add(-1)
		return nil
	}
	var work sync.WaitGroup
	started := 0
	for _, n := range sizes {
		label := fmt.Sprintf("N=%d", n)
		for ; started < n; started++ {
			e, err := c.Election(coordination.GlobalScope, fmt.Sprintf("lease-%06d", started))
			if err != nil {
				t.fail(label+": elections", err.Error(), "")
				break
			}
			work.Go(func() { _ = e.Run(cctx, fn, nil) })
		}
		target := "<= " + acquireBound.String()
		ok, took, got := waitCount(ctx, func() int { return int(held.Load()) }, n, acquireBound, acquireStall)
		if !ok {
			t.fail(label+": all leases held", fmt.Sprintf("%d of %d after %s", got, n, fmtDur(took)), target)
			t.note("N=%d: acquisition stopped (bound %v, or no new lease for %v); larger N not measured; first errors: %v",
				n, acquireBound, acquireStall, w.ev.Report().FirstErrors)
			break
		}
		t.add(label+": all leases held", fmtDur(took), target, true)
		measureTicks(ctx, t, label, n, r.o.Ticks, w)
	}

	cancel()
	stopped := make(chan struct{})
	go func() {
		work.Wait()
		<-runDone
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(ShutdownTimeout + 30*time.Second):
		t.note("the coordinator had not stopped %v after its context ended", ShutdownTimeout+30*time.Second)
	}
	if w.pg != nil {
		t.note("server time: PostgreSQL's own planning + execution time of each renewal, from pg_stat_statements " +
			"(track_planning on): the change in total_plan_time + total_exec_time over calls, read after every tick; " +
			"it excludes network, protocol and queueing")
	} else {
		t.note("server time: not measured on %s (only PostgreSQL's pg_stat_statements is read)", tg.dialect)
	}
	t.note("client round trip: from gorm starting the renewal to its last callback, in this process; " +
		"statements per tick: statements sent from one renewal's start to the next; p99 of fewer than 100 ticks is their maximum")
	t.note("statements per second: every statement sent over the measured ticks, over their time; "+
		"connections: database/sql's open connections of the process's pool (DB.Stats), every %v from every lease held to the last tick", connGaugeEvery)
	return t
}

// renewWatch is what the renew section watches in its process: every
// statement, the renewal's server time (PostgreSQL only, else nil), the
// coordinator's events and database/sql's open connections.
type renewWatch struct {
	log     *stmtLog
	pg      *pgss
	ev      *EventCounts
	conns   *connGauge
	dialect string
}

// measureTicks waits for ticks renew ticks that cover all n leases and
// adds their figures to t.
func measureTicks(ctx context.Context, t *Table, label string, n, ticks int, w *renewWatch) {
	log, pg, ev := w.log, w.pg, w.ev
	mark := time.Now()
	w.conns.reset()
	// The first renewal after mark may have read the held leases just
	// before the last one arrived: it is skipped.
	need := ticks + 2
	bound := time.Duration(need)*RenewInterval*3 + 10*time.Second
	var rs []Stmt
	ok, _, _ := waitCount(ctx, func() int { rs = log.renewsAfter(mark); return len(rs) }, need, bound, bound)
	if !ok {
		t.fail(label+": renew ticks", fmt.Sprintf("%d of %d within %s", len(rs), need, bound), fmt.Sprintf("%d", need))
		return
	}
	rs = rs[1 : ticks+2]
	from, to := rs[0].Start, rs[ticks].Start
	maxStmts, total := 0, 0
	var client []time.Duration
	for i := range ticks {
		k := log.countIn(rs[i].Start, rs[i+1].Start)
		maxStmts = max(maxStmts, k)
		total += k
		client = append(client, rs[i].Dur)
	}
	t.add(label+": statements per tick (max; mean)", fmt.Sprintf("%d; %.2f", maxStmts, float64(total)/float64(ticks)), "1", maxStmts == 1)
	span := to.Sub(from)
	t.info(label+": statements per second", fmt.Sprintf("%.2f (%d in %s)", float64(total)/span.Seconds(), total, fmtDur(span)))
	most, samples := w.conns.read()
	t.add(fmt.Sprintf("%s: most open connections (%d samples)", label, samples), fmt.Sprint(most),
		fmt.Sprintf("<= %d", connTarget), most <= connTarget && samples > 0)
	lost := ev.LostBetween(mark, to)
	t.add(label+": leases lost", fmt.Sprint(lost), "0", lost == 0)
	if e := ev.ErrorsBetween(mark, to); e > 0 {
		t.info(label+": error events", fmt.Sprint(e))
	}
	if s, _, err := p50p99(client); err == nil {
		t.info(label+": renew client round trip p50 / p99", s)
	}
	if pg == nil {
		return
	}
	server, means := pg.between(from, to)
	s, p99, err := p50p99(server)
	switch {
	case err != nil:
		t.fail(label+": renew server time p50 / p99", "no pg_stat_statements samples", "")
		return
	case n == serverTargetSize && w.dialect == "postgres":
		t.add(label+": renew server time p50 / p99", s, "p99 <= "+fmtDur(serverTarget), p99 <= serverTarget)
	default:
		t.info(label+": renew server time p50 / p99", s)
	}
	if means > 0 {
		t.note("%s: %d server-time samples covered more than one renewal each and are their mean", label, means)
	}
}

// pgss reads the renewal's server time from pg_stat_statements after each
// renewal.
type pgss struct {
	db      *sql.DB
	wake    chan time.Time
	done    chan struct{}
	mu      sync.Mutex
	samples []pgssSample
	calls   int64
	ms      float64 // plan + exec, total
}

// pgssSample is the server time of the renewals that ended since the
// previous sample.
type pgssSample struct {
	at    time.Time // start of the renewal that triggered the read
	calls int64
	per   time.Duration
}

const pgssQuery = `SELECT left(query, 2000), calls, total_plan_time + total_exec_time
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query LIKE 'UPDATE %'`

func newPGSS(dsn string) (*pgss, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	p := &pgss{db: db, wake: make(chan time.Time, 64), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p.calls, p.ms, err = p.read(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	go p.loop()
	return p, nil
}

// read sums calls and time over the renewal's entries.
func (p *pgss) read(ctx context.Context) (calls int64, ms float64, err error) {
	rows, err := p.db.QueryContext(ctx, pgssQuery)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		var c int64
		var t float64
		if err := rows.Scan(&q, &c, &t); err != nil {
			return 0, 0, err
		}
		if IsRenew(q) {
			calls += c
			ms += t
		}
	}
	return calls, ms, rows.Err()
}

func (p *pgss) poke(s Stmt) {
	select {
	case p.wake <- s.Start:
	default:
	}
}

func (p *pgss) loop() {
	for {
		select {
		case <-p.done:
			return
		case at := <-p.wake:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			calls, ms, err := p.read(ctx)
			cancel()
			if err != nil || calls <= p.calls {
				continue
			}
			dc, dms := calls-p.calls, ms-p.ms
			p.mu.Lock()
			p.samples = append(p.samples, pgssSample{at: at, calls: dc, per: time.Duration(dms / float64(dc) * float64(time.Millisecond))})
			p.calls, p.ms = calls, ms
			p.mu.Unlock()
		}
	}
}

// between returns the per-call server times of the renewals that started
// in [from, to), and how many of them are means over several calls.
func (p *pgss) between(from, to time.Time) ([]time.Duration, int) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		p.mu.Lock()
		var last time.Time
		if len(p.samples) > 0 {
			last = p.samples[len(p.samples)-1].at
		}
		p.mu.Unlock()
		if !last.Before(to) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	means := 0
	for _, s := range p.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			out = append(out, s.per)
			if s.calls > 1 {
				means++
			}
		}
	}
	return out, means
}

func (p *pgss) close() {
	close(p.done)
	_ = p.db.Close()
}

// connGaugeEvery is how often a connGauge samples.
const connGaugeEvery = 100 * time.Millisecond

// connGauge samples database/sql's count of the open connections of one
// pool, in this process, and keeps the most since its last reset.
type connGauge struct {
	db   *sql.DB
	stop chan struct{}
	done chan struct{}

	mu            sync.Mutex
	most, samples int
}

// startConnGauge samples db every interval until end.
func startConnGauge(db *sql.DB, every time.Duration) *connGauge {
	g := &connGauge{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			n := db.Stats().OpenConnections
			g.mu.Lock()
			g.most = max(g.most, n)
			g.samples++
			g.mu.Unlock()
			select {
			case <-g.stop:
				return
			case <-t.C:
			}
		}
	}()
	return g
}

// reset forgets the samples taken so far.
func (g *connGauge) reset() {
	g.mu.Lock()
	g.most, g.samples = 0, 0
	g.mu.Unlock()
}

// read returns the most open connections at a sample since the last
// reset, and the number of samples.
func (g *connGauge) read() (most, samples int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most, g.samples
}

// end stops the sampling.
func (g *connGauge) end() {
	close(g.stop)
	<-g.done
}
