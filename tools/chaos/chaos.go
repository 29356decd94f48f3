package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/history"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/tools/chaos/faultproxy"
)

// Fault timing.
const (
	// Procs is the number of worker processes per dialect.
	Procs = 4
	// PauseFor is how long a paused leader stays stopped: longer than TTL.
	PauseFor = TTL + 500*time.Millisecond
	// DBDownFor is how long a restarted database server stays down: as
	// long as TTL, so that every holder passes its trust deadline.
	DBDownFor = TTL
	// RestartAllowance is the time allowed for the database server to
	// come back after a restart began.
	RestartAllowance = 4 * time.Second
	// slack allows, in every recovery bound, for scheduling and for the
	// recording of the histories: the runner, four workers and the
	// database share the machine's cores, and make test runs other
	// packages' tests beside them.
	slack = 300 * time.Millisecond
	// gap is how long the runner waits after it saw a recovery before it
	// injects the next fault.
	gap = 300 * time.Millisecond
	// readyTimeout bounds every wait for a leader and a full assignment.
	readyTimeout = 45 * time.Second
	// minItemsTimeout bounds the wait for every item to be processed, and
	// itemsPerSecond is the slowest rate that wait allows for more items.
	minItemsTimeout = 3 * time.Minute
	itemsPerSecond  = 25
	// FeedRate is how many items a second the runner adds while it
	// injects faults, so that items are being processed under every
	// fault, and feedEvery how often it adds them. On SQLite, where every
	// write takes the file's one lock, four workers process 15 to 40
	// items a second, so it adds SQLiteFeedRate.
	FeedRate       = 20
	SQLiteFeedRate = 8
	feedEvery      = 250 * time.Millisecond
	// termTimeout bounds the graceful stop of the workers.
	termTimeout = 10 * time.Second
	// pollEvery is how often the runner reads the histories.
	pollEvery = 100 * time.Millisecond
)

// Timing of the extended fault kinds (Options.Extended).
const (
	// CutFor is how long a cut process stays cut off from the database:
	// longer than its trust window TTL - Margin.
	CutFor = TTL - Margin + 700*time.Millisecond
	// Latency is the delay added to each forwarded chunk in the latency
	// fault: more than RenewInterval.
	Latency = 700 * time.Millisecond
	// LatencyFor is how long the latency stays.
	LatencyFor = 3 * time.Second
	// ExhaustConns is the MaxOpenConns of a worker in the extended run,
	// and the number of transactions it holds on SIGUSR1.
	ExhaustConns = 4
	// ExhaustFor is how long a worker holds its connections.
	ExhaustFor = 2 * TTL
)

// Timing of the clock-skew fault.
const (
	// SkewFor is how long a worker's wall clock stays off: several
	// renewals and, on the leader, many fenced writes.
	SkewFor = 2 * TTL
	// MinSkew and MaxSkew bound how far off a worker's wall clock is set,
	// ahead or behind.
	MinSkew = time.Hour
	MaxSkew = 12 * time.Hour
	// clockNote starts the worker's note of the wall clock it observed.
	clockNote = "clock-skew: "
)

// FailoverBound is the recovery bound of both failover kinds, measured
// from the end of the promotion (the heal), when the promoted server
// accepts writes:
//
//   - RenewInterval until every process has made a statement on the new
//     primary: the leader renews every RenewInterval, followers retry
//     every RetryInterval × 1.5 and pool members poll every PollInterval,
//     both shorter. Reconnecting adds nothing: the old primary's port
//     refuses at once, so the DSN's next host is tried without waiting
//     for connect_timeout.
//   - TTL of hold-off: after a change of database incarnation (a new
//     timeline) the library acquires nothing for TTL, so that a holder
//     whose renewals were lost with the old primary has lost its trust
//     before anyone acquires on the new one. The rows on the new primary
//     were last renewed before the promotion, so by then they have expired
//     too.
//   - then as after a kill whose rows have already expired: a follower
//     acquires within RetryInterval × 1.5, and the pool, whose members all
//     join again, settles within two rebalances (the joins, then the
//     barrier), 2 × coordination.RebalanceBound.
//
// The same bound holds for both kinds: a synchronous failover loses no
// commit, but it changes the incarnation all the same, so the hold-off
// applies; an asynchronous one loses commits, which moves no deadline
// later, since the lost renewals only make the rows on the new primary
// older. slack is added as for every kind.
const FailoverBound = RenewInterval + TTL + RetryInterval*3/2 + 2*(PollInterval+PollInterval/4) + slack

// FailoverWindow is how long, in the failover-async fault, the primary
// goes on without its standby after the leader's successor is in place:
// the leader renews and writes, and the pool's members process items, on
// the old primary only, so all of it is lost with it.
const FailoverWindow = RenewInterval * 2

// Bounds returns the recovery bound of each fault kind: how soon after the
// kill, or after the heal of any other fault, a leader and a full
// assignment must be back.
//
//   - kill: the later of the lease's takeover and the pool's crash
//     rebalance, plus one join rebalance. The killed holder's lease
//     expires, by the database clock, at most TTL after the kill, and a
//     follower tries again within RetryInterval × 1.5 (its jitter). The
//     pool is rebalanced within coordination.CrashRebalanceBound of the
//     kill. The replacement process then joins the pool, and if its join
//     comes after that rebalance, the pool rebalances once more, within
//     coordination.RebalanceBound.
//   - cut, pause, pool-exhaustion, clock-skew: the trust window TTL -
//     Margin. Each lasts longer than the trust window (clock-skew changes
//     nothing), so a successor has taken over before the heal; at the
//     heal, the faulted process joins the pool again, which takes a retry
//     and one barrier.
//   - latency: the same, plus Latency, which chunks queued before the
//     heal still wait.
//   - db-restart: the same, plus RestartAllowance for the server to start.
//   - failover-sync, failover-async: FailoverBound, from the promotion.
//
// Each has slack added.
func Bounds() map[history.FaultKind]time.Duration {
	takeover := max(TTL+RetryInterval*3/2, coordination.CrashRebalanceBound(TTL, PollInterval)) +
		coordination.RebalanceBound(PollInterval) + slack
	rejoin := TTL - Margin + slack
	return map[history.FaultKind]time.Duration{
		history.FaultKill:           takeover,
		history.FaultPause:          rejoin,
		history.FaultCut:            rejoin,
		history.FaultPoolExhaustion: rejoin,
		history.FaultClockSkew:      rejoin,
		history.FaultLatency:        Latency + rejoin,
		history.FaultDBRestart:      RestartAllowance + rejoin,
		history.FaultFailoverSync:   FailoverBound,
		history.FaultFailoverAsync:  FailoverBound,
	}
}

// Kinds returns the fault kinds injected on dialect: kill, pause and
// clock-skew everywhere (clock-skew when clock is true: the runtime
// overlay could be built), a database restart where there is a server,
// and with extended a worker exhausting its own pool and, where there is
// a network, a cut and latency. SQLite has neither a server to restart
// nor a network. The replicated pair (PostgresPair) gets the failovers
// only: the other kinds act on the workers or on one server, and the
// postgres dialect has them.
func Kinds(dialect string, extended, clock bool) []history.FaultKind {
	if dialect == PostgresPair {
		return []history.FaultKind{history.FaultFailoverSync, history.FaultFailoverAsync}
	}
	ks := []history.FaultKind{history.FaultKill, history.FaultPause}
	if clock {
		ks = append(ks, history.FaultClockSkew)
	}
	if extended {
		ks = append(ks, history.FaultPoolExhaustion)
	}
	if dialect == "sqlite" {
		return ks
	}
	ks = append(ks, history.FaultDBRestart)
	if extended {
		ks = append(ks, history.FaultCut, history.FaultLatency)
	}
	return ks
}

// PostgresPair is the dialect name of the replicated PostgreSQL pair
// (testdb.Pair): the workers reach it through its multi-host DSN.
const PostgresPair = "postgres-pair"

// Dialects are the dialects the suite runs on, in order.
var Dialects = []string{"sqlite", "postgres", "mysql", PostgresPair}

// AllKinds returns every fault kind the suite can inject, in a fixed
// order.
func AllKinds() []history.FaultKind {
	var all []history.FaultKind
	for _, d := range Dialects {
		for _, k := range Kinds(d, true, true) {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	return all
}

// ParseKinds parses a comma-separated list of fault kinds, such as
// CHAOS_KINDS. An empty list is nil: every kind. An unknown kind is an
// error that names it and lists the valid ones.
func ParseKinds(list string) ([]history.FaultKind, error) {
	all := AllKinds()
	var out []history.FaultKind
	for _, f := range strings.Split(list, ",") {
		k := history.FaultKind(strings.TrimSpace(f))
		if k == "" {
			continue
		}
		if !slices.Contains(all, k) {
			valid := make([]string, len(all))
			for i, a := range all {
				valid[i] = string(a)
			}
			return nil, fmt.Errorf("unknown fault kind %q; valid kinds: %s", k, strings.Join(valid, ","))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// requiredAs is the dialect that REQUIRE_DIALECTS names for d.
func requiredAs(d string) string {
	if d == PostgresPair {
		return "postgres"
	}
	return d
}

// Options configure Run.
type Options struct {
	// Faults is the total number of faults across the dialects, shared
	// in proportion to the number of kinds each dialect injects. Zero or
	// less means each applicable fault kind exactly once per dialect.
	Faults int
	// Kinds restricts the fault kinds injected (default: every kind).
	// A dialect that injects none of them is not run.
	Kinds []history.FaultKind
	// Seed seeds the pseudo-random choices.
	Seed uint64
	// Items is the number of items seeded per dialect before the first
	// fault (default 3000). FeedRate more a second are added until the
	// last fault.
	Items int
	// Dialects defaults to Dialects.
	Dialects []string
	// Out receives the progress and the report (default os.Stdout).
	Out io.Writer
	// Required reports whether a dialect whose server binaries are
	// missing is a failure rather than a skip (default testdb.Required).
	Required func(dialect string) bool
	// Slack is added to every recovery bound of Bounds. make chaos runs
	// alone and leaves it zero; the short round in make test shares two
	// cores with other packages' tests and uses a loose bound, so that
	// it holds the safety rules strictly and fails on a recovery that
	// does not come, not on one slowed by the machine.
	Slack time.Duration
	// Extended adds the fault kinds pool-exhaustion, and cut and latency
	// on PostgreSQL and MariaDB: every worker then bounds its pool to
	// ExhaustConns connections and holds them all on SIGUSR1 for
	// ExhaustFor, and reaches a database server through its own fault
	// proxy.
	Extended bool
}

// Run runs the suite and reports whether every dialect passed. The report
// (history.Report) is written to Out. Temporary files are removed when it
// passes and kept (and named) when it fails.
func Run(ctx context.Context, o Options) (ok bool, err error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if len(o.Dialects) == 0 {
		o.Dialects = Dialects
	}
	if o.Items <= 0 {
		o.Items = 3000
	}
	if o.Required == nil {
		o.Required = testdb.Required
	}
	fmt.Fprintf(o.Out, "chaos: seed=%d (CHAOS_SEED=%d replays it) faults=%d items=%d dialects=%s\n",
		o.Seed, o.Seed, o.Faults, o.Items, strings.Join(o.Dialects, ","))
	root, err := os.MkdirTemp("", "leasehold-chaos-")
	if err != nil {
		return false, err
	}
	defer func() {
		if ok && err == nil {
			_ = os.RemoveAll(root)
		} else {
			fmt.Fprintf(o.Out, "chaos: FAIL: temporary files kept in %s\n", root)
		}
	}()
	bin, clock, unsupported, err := buildWorker(ctx, root)
	if err != nil {
		return false, err
	}
	if !clock {
		fmt.Fprintf(o.Out, "chaos: NOT INJECTING clock-skew: %v\n", unsupported)
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	plans := plan(o, clock, rng)
	if len(plans) == 0 {
		return false, fmt.Errorf("no dialect of %s injects any of the fault kinds %v", strings.Join(o.Dialects, ","), o.Kinds)
	}
	var results []history.DialectResult
	var problems []string
	for _, d := range o.Dialects {
		if len(plans[d]) == 0 {
			fmt.Fprintf(o.Out, "chaos: %s: none of the selected fault kinds applies; not run\n", d)
			continue
		}
		r := &dialectRun{name: d, dir: filepath.Join(root, d), bin: bin, out: o.Out, rng: rng, items: o.Items, extended: o.Extended, slack: o.Slack}
		res, probs, skipped, err := r.run(ctx, plans[d], o.Required(requiredAs(d)))
		if err != nil {
			return false, fmt.Errorf("%s: %w", d, err)
		}
		if skipped {
			continue
		}
		results = append(results, history.DialectResult{Dialect: d, Result: res})
		for _, p := range probs {
			problems = append(problems, d+": "+p)
		}
	}
	history.FailoverTable(o.Out, results...)
	ok = history.Report(o.Out, results...)
	for _, p := range problems {
		fmt.Fprintf(o.Out, "chaos: FAIL: %s\n", p)
	}
	return ok && len(problems) == 0, nil
}

// plan chooses the faults of each dialect: every applicable kind of
// o.Kinds once (in random order), then random kinds up to the dialect's
// share of o.Faults, which is in proportion to its number of kinds, so
// that every kind gets about as many faults on every dialect. Dialects
// with no applicable kind are left out.
func plan(o Options, clock bool, rng *rand.Rand) map[string][]history.FaultKind {
	kindsOf := map[string][]history.FaultKind{}
	total := 0
	for _, d := range o.Dialects {
		for _, k := range Kinds(d, o.Extended, clock) {
			if len(o.Kinds) == 0 || slices.Contains(o.Kinds, k) {
				kindsOf[d] = append(kindsOf[d], k)
			}
		}
		total += len(kindsOf[d])
	}
	share := map[string]int{}
	if o.Faults > 0 && total > 0 {
		given := 0
		for _, d := range o.Dialects {
			share[d] = o.Faults * len(kindsOf[d]) / total
			given += share[d]
		}
		for _, d := range o.Dialects {
			if given < o.Faults && len(kindsOf[d]) > 0 {
				share[d]++
				given++
			}
		}
	}
	out := map[string][]history.FaultKind{}
	for _, d := range o.Dialects {
		kinds := kindsOf[d]
		if len(kinds) == 0 {
			continue
		}
		n := len(kinds)
		if o.Faults > 0 {
			n = share[d]
		}
		var ks []history.FaultKind
		for _, j := range rng.Perm(len(kinds)) {
			ks = append(ks, kinds[j])
		}
		for len(ks) < n {
			ks = append(ks, kinds[rng.IntN(len(kinds))])
		}
		out[d] = ks[:n]
	}
	return out
}

// dialectRun is the run on one dialect.
type dialectRun struct {
	name, dir, bin string
	out            io.Writer
	rng            *rand.Rand
	items          int

	driver, dsn string
	srv         *testdb.Server
	pair        *testdb.Pair // PostgresPair only; srv is then nil
	// lossWindows are, for each failover to an asynchronous standby, the
	// history times from the standby's last catch-up to the promotion:
	// commits made then on the old primary were lost (recordLostItems).
	lossWindows [][2]int64
	db          *gorm.DB
	histDir     string
	rec         *history.Recorder
	tail        *tailer
	procs       []*proc
	nodes       int
	problems    []string
	// extended: see Options.Extended. dsnVia builds a worker's DSN for
	// its proxy's address (nil on SQLite).
	extended bool
	dsnVia   func(addr string) string
	// slack: see Options.Slack.
	slack time.Duration
}

func (r *dialectRun) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "chaos: %s: %s\n", r.name, fmt.Sprintf(format, args...))
}

func (r *dialectRun) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.logf("PROBLEM: %s", msg)
	r.problems = append(r.problems, msg)
}

// run runs the dialect's faults and checks its history.
func (r *dialectRun) run(ctx context.Context, faults []history.FaultKind, required bool) (res history.Result, problems []string, skipped bool, err error) {
	r.histDir = filepath.Join(r.dir, "history")
	if err := os.MkdirAll(r.histDir, 0o755); err != nil {
		return res, nil, false, err
	}
	defer r.closeProxies()
	defer r.killAll()
	if err := r.openDB(ctx); err != nil {
		if errors.Is(err, testdb.ErrBinariesMissing) {
			if required {
				return res, nil, false, fmt.Errorf("%s=%s requires it, but: %w", testdb.RequireEnv, r.name, err)
			}
			r.logf("SKIPPING %s: %v (set %s=%s to make this a failure)", strings.ToUpper(r.name), err, testdb.RequireEnv, r.name)
			return res, nil, true, nil
		}
		return res, nil, false, err
	}
	defer r.closeDB()
	if err := r.seed(ctx); err != nil {
		return res, nil, false, err
	}
	r.rec, err = history.Create(filepath.Join(r.histDir, "runner.jsonl"), "runner/"+Cluster+"/"+r.name)
	if err != nil {
		return res, nil, false, err
	}
	defer func() { _ = r.rec.Close() }()
	r.tail = newTailer(r.histDir)
	for range Procs {
		if _, err := r.start(); err != nil {
			return res, nil, false, err
		}
	}
	t0 := time.Now()
	if err := r.waitReady(ctx, readyTimeout); err != nil {
		return res, nil, false, fmt.Errorf("before the first fault: %w", err)
	}
	r.logf("leader and full %d-member assignment after %v; faults: %v", Procs, time.Since(t0).Round(time.Millisecond), faults)
	feedStop := make(chan struct{})
	fed := r.feed(ctx, feedStop)
	stopFeeding := sync.OnceFunc(func() {
		close(feedStop)
		f := <-fed
		r.logf("fed %d items during the faults (%d inserts failed and were retried); %d items in all", f.n-r.items, f.failures, f.n)
		r.items = f.n
	})
	defer stopFeeding()
	bounds := Bounds()
	for k := range bounds {
		bounds[k] += r.slack
	}
	for i, k := range faults {
		if err := ctx.Err(); err != nil {
			return res, nil, false, err
		}
		healed, err := r.inject(k)
		if err != nil {
			return res, nil, false, err
		}
		rec, err := r.waitRecovered(ctx, healed)
		if err != nil {
			return res, nil, false, err
		}
		if rec < 0 {
			r.problem("fault %d (%s): not recovered within %v", i+1, k, readyTimeout)
		} else {
			r.logf("fault %d/%d %s: leader and full assignment again %v after the fault", i+1, len(faults), k, rec.Round(time.Millisecond))
		}
		if isFailover(k) {
			if err := r.rebuild(ctx); err != nil {
				return res, nil, false, err
			}
		}
	}
	stopFeeding()
	if err := r.waitItems(ctx); err != nil {
		r.problem("%v", err)
	}
	stopAt := history.Now()
	_ = r.rec.Notef("stopping all workers")
	r.stopAll()
	for _, p := range r.procs {
		if !p.killed && !p.stopped && p.Exited() {
			r.problem("worker %s (pid %d) exited on its own: %v; log %s", p.node, p.Pid, p.Err(), p.logPath)
		}
	}
	if err := r.verifyTable(ctx); err != nil {
		r.problem("%v", err)
	}
	r.verifyClock()
	if err := r.reconcileItems(ctx); err != nil {
		r.problem("%v", err)
	}
	_ = r.rec.Close()
	h, err := history.ReadDir(r.histDir)
	if err != nil {
		return res, nil, false, err
	}
	res = history.Check(h, history.Config{
		Leases:       []string{LedgerLease},
		Pools:        []history.PoolRequirement{{Pool: ItemsPool, Members: 0}},
		Items:        int64(r.items),
		Bound:        bounds,
		ObserveUntil: stopAt,
	})
	r.summarize(res)
	return res, r.problems, false, nil
}

// summarize prints the checker's statistics of the dialect.
func (r *dialectRun) summarize(res history.Result) {
	st := res.Stats
	r.logf("events=%d lease_terms=%d partition_terms=%d exempt_overlaps=%d accepted_writes=%d rejected_writes=%d items=%d truncated=%d",
		st.Events, st.LeaseTerms, st.PartitionTerms, st.ExemptOverlaps, st.AcceptedWrites, st.RejectedWrites, st.ItemsProcessed, len(st.Truncated))
}

// openDB starts the dialect's database and opens the runner's handle.
func (r *dialectRun) openDB(ctx context.Context) error {
	var err error
	switch r.name {
	case "sqlite":
		r.driver = dbopen.SQLitePure
		r.dsn = dbopen.SQLiteDSN(dbopen.SQLitePure, filepath.Join(r.dir, "chaos.db"))
	case "postgres", "mysql":
		start := testdb.StartPostgres
		if r.name == "mysql" {
			start = testdb.StartMariaDB
		}
		r.srv, err = start(ctx)
		if err != nil {
			return err
		}
		if err := r.srv.CreateDatabase(ctx, "chaos"); err != nil {
			return err
		}
		if r.name == "postgres" {
			r.driver, r.dsn = dbopen.Postgres, r.srv.DSN("chaos")+" connect_timeout=2"
			r.dsnVia = func(addr string) string {
				host, port, _ := strings.Cut(addr, ":")
				return fmt.Sprintf("host=%s port=%s user=postgres dbname=chaos sslmode=disable connect_timeout=2", host, port)
			}
		} else {
			r.driver, r.dsn = dbopen.MySQL, r.srv.DSN("chaos")+"?parseTime=true&loc=UTC&timeout=2s"
			r.dsnVia = func(addr string) string {
				return "root@tcp(" + addr + ")/chaos?parseTime=true&loc=UTC&timeout=2s"
			}
		}
	case PostgresPair:
		r.pair, err = testdb.StartPostgresPair(ctx, testdb.Sync)
		if err != nil {
			return err
		}
		if err := r.pair.CreateDatabase(ctx, "chaos"); err != nil {
			return err
		}
		r.driver, r.dsn = dbopen.Postgres, r.pair.DSN("chaos")
	default:
		return fmt.Errorf("unknown dialect %q", r.name)
	}
	r.db, err = dbopen.Open(r.driver, r.dsn, &gorm.Config{Logger: logger.Discard})
	return err
}

func (r *dialectRun) closeDB() {
	if r.db != nil {
		if s, err := r.db.DB(); err == nil {
			_ = s.Close()
		}
	}
	if r.srv != nil {
		if err := r.srv.Close(); err != nil {
			r.problem("closing the %s server: %v", r.name, err)
		}
	}
	if r.pair != nil {
		if err := r.pair.Close(); err != nil {
			r.problem("closing the %s: %v", r.name, err)
		}
	}
}

// feedResult is what feed did: n items in all, and failed inserts.
type feedResult struct{ n, failures int }

// feed adds items numbered on from r.items, FeedRate a second, until stop
// is closed, and then sends how many there are in all. After a failed
// insert (the database restarting) it reads the highest id, since the
// insert may have committed, and goes on from there.
func (r *dialectRun) feed(ctx context.Context, stop <-chan struct{}) <-chan feedResult {
	out := make(chan feedResult, 1)
	rate := FeedRate
	if r.name == "sqlite" {
		rate = SQLiteFeedRate
	}
	per := max(1, rate*int(feedEvery/time.Millisecond)/1000)
	go func() {
		res := feedResult{n: r.items}
		defer func() { out <- res }()
		t := time.NewTicker(feedEvery)
		defer t.Stop()
		resync := false
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
			db := r.db.WithContext(ictx)
			if resync {
				var top int64
				if err := db.Model(&Item{}).Select("COALESCE(MAX(id), 0)").Scan(&top).Error; err != nil {
					cancel()
					continue
				}
				res.n, resync = int(top), false
			}
			batch := make([]Item, per)
			for i := range batch {
				batch[i].ID = int64(res.n + i + 1)
			}
			err := db.Create(&batch).Error
			cancel()
			if err != nil {
				res.failures++
				resync = true
				continue
			}
			res.n += per
		}
	}()
	return out
}

// seed creates the tables and the items.
func (r *dialectRun) seed(ctx context.Context) error {
	db := r.db.WithContext(ctx)
	if err := db.AutoMigrate(&Item{}, &LedgerRow{}); err != nil {
		return fmt.Errorf("create the chaos tables: %w", err)
	}
	items := make([]Item, r.items)
	for i := range items {
		items[i].ID = int64(i + 1)
	}
	if err := db.CreateInBatches(items, 500).Error; err != nil {
		return fmt.Errorf("seed %d items: %w", r.items, err)
	}
	return nil
}

// start starts one more worker process.
func (r *dialectRun) start() (*proc, error) {
	r.nodes++
	node := fmt.Sprintf("w%d", r.nodes)
	skew := MinSkew + time.Duration(r.rng.Int64N(int64(MaxSkew-MinSkew)/int64(time.Minute)))*time.Minute
	if r.rng.IntN(2) == 0 {
		skew = -skew
	}
	if r.extended {
		return r.startExtended(node, skew)
	}
	p, err := startProc(r.bin, node, filepath.Join(r.dir, node+".log"),
		"-driver", r.driver, "-dsn", r.dsn, "-dir", r.histDir, "-clock-skew", skew.String())
	if err != nil {
		return nil, err
	}
	p.skew = skew
	r.procs = append(r.procs, p)
	return p, nil
}

// startExtended starts a worker of the extended run: with its own fault
// proxy (not on SQLite) and its pool bounded to ExhaustConns connections,
// held on SIGUSR1.
func (r *dialectRun) startExtended(node string, skew time.Duration) (*proc, error) {
	dsn := r.dsn
	var px *faultproxy.Proxy
	if r.srv != nil {
		var err error
		px, err = faultproxy.New(fmt.Sprintf("127.0.0.1:%d", r.srv.Port()))
		if err != nil {
			return nil, err
		}
		dsn = r.dsnVia(px.Addr())
	}
	p, err := startProc(r.bin, node, filepath.Join(r.dir, node+".log"),
		"-driver", r.driver, "-dsn", dsn, "-dir", r.histDir,
		"-max-open-conns", fmt.Sprint(ExhaustConns), "-exhaust-for", ExhaustFor.String(), "-clock-skew", skew.String())
	if err != nil {
		if px != nil {
			_ = px.Close()
		}
		return nil, err
	}
	p.proxy, p.skew = px, skew
	r.procs = append(r.procs, p)
	return p, nil
}

// closeProxies closes the fault proxies of every worker.
func (r *dialectRun) closeProxies() {
	for _, p := range r.procs {
		if p.proxy != nil {
			_ = p.proxy.Close()
		}
	}
}

// running returns the processes neither killed nor exited (paused ones
// included), and live the pids of those not paused.
func (r *dialectRun) running() (ps []*proc, live map[int]bool) {
	live = map[int]bool{}
	for _, p := range r.procs {
		if p.killed || p.stopped || p.Exited() {
			continue
		}
		ps = append(ps, p)
		if !p.paused {
			live[p.Pid] = true
		}
	}
	return ps, live
}

// ready reports whether a live process leads and the live processes hold
// a full assignment of one generation with one index each.
func (r *dialectRun) ready() (bool, error) {
	if err := r.tail.poll(); err != nil {
		return false, err
	}
	for _, p := range r.procs {
		if !p.killed && !p.stopped && p.Exited() {
			return false, fmt.Errorf("worker %s (pid %d) exited on its own: %w; log %s",
				p.node, p.Pid, cmpErr(p.Err(), errors.New("exit status 0")), p.logPath)
		}
	}
	_, live := r.running()
	return r.tail.leaderOf(live) != 0 && r.tail.fullyAssigned(live, len(live)), nil
}

// waitReady waits at most d until ready.
func (r *dialectRun) waitReady(ctx context.Context, d time.Duration) error {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		ok, err := r.ready()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("no leader and full %d-member assignment within %v", Procs, d)
		case <-t.C:
		}
	}
}

// waitRecovered waits until ready, and then gap longer so that the next
// fault starts from a settled system. It returns how long after from the
// runner first saw the system ready again (after from+TTL/2: a paused or
// cut process's terms look open until it notices its fault), or -1 if it
// did not within readyTimeout. The checker measures the failover itself,
// from the histories; the next fault does not cut its window short, since
// it starts after the recovery.
func (r *dialectRun) waitRecovered(ctx context.Context, from time.Time) (time.Duration, error) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	recovered := time.Duration(-1)
	settle := from.Add(TTL / 2)
	for {
		now := time.Now()
		if recovered < 0 && now.After(settle) {
			ok, err := r.ready()
			if err != nil {
				return 0, err
			}
			if ok {
				recovered = now.Sub(from)
			}
		}
		if recovered >= 0 && now.After(from.Add(recovered+gap)) {
			return recovered, nil
		}
		if recovered < 0 && now.After(from.Add(readyTimeout)) {
			return recovered, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// inject injects one fault and returns the time recovery is measured
// from: the kill for a kill, the heal otherwise.
func (r *dialectRun) inject(k history.FaultKind) (time.Time, error) {
	ps, live := r.running()
	leader := r.tail.leaderOf(live)
	byPID := func(pid int) *proc {
		for _, p := range ps {
			if p.Pid == pid {
				return p
			}
		}
		return nil
	}
	if k == history.FaultDBRestart && r.srv == nil {
		k = history.FaultKill
	}
	switch k {
	case history.FaultKill:
		target := ps[r.rng.IntN(len(ps))]
		role := "random"
		if r.rng.IntN(2) == 0 && byPID(leader) != nil {
			target, role = byPID(leader), "leader"
		}
		r.logf("fault kill: SIGKILL %s (pid %d, %s)", target.node, target.Pid, role)
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		at := time.Now()
		target.killed = true
		if err := target.Signal(syscall.SIGKILL); err != nil {
			return at, err
		}
		if !target.WaitExit(context.Background(), 10*time.Second) {
			return at, fmt.Errorf("worker %s (pid %d) did not exit within 10s of SIGKILL", target.node, target.Pid)
		}
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal, Text: "replacement started"})
		p, err := r.start()
		if err != nil {
			return at, err
		}
		r.logf("started replacement %s (pid %d)", p.node, p.Pid)
		return at, nil
	case history.FaultPause:
		target := byPID(leader)
		if target == nil {
			target = ps[r.rng.IntN(len(ps))]
		}
		r.logf("fault pause: SIGSTOP %s (pid %d) for %v", target.node, target.Pid, PauseFor)
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		target.paused = true
		if err := target.Signal(syscall.SIGSTOP); err != nil {
			return time.Now(), err
		}
		timer := time.NewTimer(PauseFor)
		<-timer.C
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		at := time.Now()
		target.paused = false
		return at, target.Signal(syscall.SIGCONT)
	case history.FaultDBRestart:
		r.logf("fault db-restart: stopping the %s server for %v", r.name, DBDownFor)
		r.fault(history.Event{FaultKind: k, Target: r.name, Phase: history.PhaseStart})
		began := time.Now()
		if err := r.srv.Stop(); err != nil {
			return began, fmt.Errorf("stop the %s server: %w", r.name, err)
		}
		stopped := time.Now()
		timer := time.NewTimer(DBDownFor)
		<-timer.C
		r.fault(history.Event{FaultKind: k, Target: r.name, Phase: history.PhaseHeal})
		at := time.Now()
		if err := r.srv.Start(); err != nil {
			return at, fmt.Errorf("start the %s server again: %w", r.name, err)
		}
		r.logf("server stopped in %v, down for %v, started again in %v",
			stopped.Sub(began).Round(time.Millisecond), DBDownFor, time.Since(at).Round(time.Millisecond))
		if d := time.Since(at); d > RestartAllowance {
			r.problem("the %s server took %v to start, more than the allowance %v", r.name, d, RestartAllowance)
		}
		return at, nil
	case history.FaultClockSkew:
		target, role := byPID(leader), "leader"
		if target == nil || r.rng.IntN(3) == 0 {
			target, role = ps[r.rng.IntN(len(ps))], "random"
		}
		r.logf("fault clock-skew: wall clock of %s (pid %d, %s) %v off for %v", target.node, target.Pid, role, target.skew, SkewFor)
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart, Text: "wall clock " + target.skew.String() + " off"})
		target.skews++
		if err := target.Signal(syscall.SIGUSR2); err != nil {
			return time.Now(), err
		}
		timer := time.NewTimer(SkewFor)
		<-timer.C
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		return time.Now(), target.Signal(syscall.SIGUSR2)
	}
	if isFailover(k) {
		return r.injectFailover(k)
	}
	return r.injectExtended(k, ps, byPID(leader))
}

// isFailover reports whether k is a failover of the replicated pair.
func isFailover(k history.FaultKind) bool {
	return k == history.FaultFailoverSync || k == history.FaultFailoverAsync
}

// injectFailover fails the pair's primary over to its standby and returns
// the time the promoted server accepted writes. The old primary is
// stopped (fast shutdown) or killed (SIGKILL), at random.
//
// failover-sync: the pair is synchronous, so every acknowledged commit is
// on the standby; the primary goes while leaders, fenced writers and
// pools are busy, and the standby is promoted.
//
// failover-async: the pair is asynchronous and the standby is stopped
// first, so that nothing more reaches it. A worker is then killed (the
// kill fault, on the leader or at random) and the runner waits for the
// leader and the full assignment that follow, and FailoverWindow longer:
// that acquisition, the rebalance, the renewals and the writes exist on
// the old primary only. The primary goes, the standby starts again and
// is promoted: all of that is lost.
func (r *dialectRun) injectFailover(k history.FaultKind) (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	mode := testdb.Sync
	if k == history.FaultFailoverAsync {
		mode = testdb.Async
	}
	if r.pair.Mode() != mode {
		if err := r.pair.SetMode(ctx, mode); err != nil {
			return time.Now(), fmt.Errorf("switch the pair to %s: %w", mode, err)
		}
	}
	old, standby := r.pair.Primary(), r.pair.Standby()
	r.logf("fault %s: primary on port %d, standby on port %d", k, old.Port(), standby.Port())
	var lossFrom int64
	if k == history.FaultFailoverAsync {
		// Every commit acknowledged before lossFrom is on the standby
		// once it has caught up; from the stop on, nothing reaches it.
		lossFrom = history.Now()
		if err := r.pair.WaitCaughtUp(ctx); err != nil {
			return time.Now(), fmt.Errorf("let the standby catch up: %w", err)
		}
		if err := standby.Stop(); err != nil {
			return time.Now(), fmt.Errorf("stop the standby: %w", err)
		}
		if _, err := r.inject(history.FaultKill); err != nil {
			return time.Now(), err
		}
		if err := r.waitReady(ctx, readyTimeout); err != nil {
			r.problem("fault %s: after the kill on the old primary: %v", k, err)
		}
		timer := time.NewTimer(FailoverWindow)
		<-timer.C
	}
	// The failover starts when the primary goes. Recorded here, after the
	// kill of failover-async has recovered, it also ends that kill's
	// recovery window (rule E): what the primary's death does to the pool
	// is this fault's to recover from, not the kill's.
	r.fault(history.Event{FaultKind: k, Target: r.name, Phase: history.PhaseStart})
	how := "stopped"
	var err error
	if r.rng.IntN(2) == 0 {
		how, err = "killed", old.Kill()
	} else {
		err = old.Stop()
	}
	if err != nil {
		return time.Now(), fmt.Errorf("stop the primary: %w", err)
	}
	began := time.Now()
	if k == history.FaultFailoverAsync {
		if err := standby.Start(); err != nil {
			return time.Now(), fmt.Errorf("start the standby again: %w", err)
		}
	}
	if err := r.pair.Promote(ctx); err != nil {
		return time.Now(), err
	}
	if k == history.FaultFailoverAsync {
		r.lossWindows = append(r.lossWindows, [2]int64{lossFrom, history.Now()})
	}
	r.fault(history.Event{FaultKind: k, Target: r.name, Phase: history.PhaseHeal})
	at := time.Now()
	r.logf("old primary %s; standby promoted %v later, on port %d", how, at.Sub(began).Round(time.Millisecond), standby.Port())
	return at, nil
}

// rebuild makes the old primary the standby of the new one, after a
// failover's recovery and before the next fault.
func (r *dialectRun) rebuild(ctx context.Context) error {
	began := time.Now()
	if err := r.pair.Rebuild(ctx); err != nil {
		return err
	}
	r.logf("rebuilt the old primary as a standby on port %d in %v", r.pair.Standby().Port(), time.Since(began).Round(time.Millisecond))
	return nil
}

// verifyClock checks that every clock-skew fault took: each worker that
// received n of them recorded n settings of its wall clock that it
// observed off by its skew, and n settings back.
func (r *dialectRun) verifyClock() {
	if err := r.tail.poll(); err != nil {
		r.problem("read the histories: %v", err)
		return
	}
	for _, p := range r.procs {
		if p.skews == 0 {
			continue
		}
		var off, back int
		for _, text := range r.tail.clock[p.Pid] {
			offset, observed, err := parseClockNote(text)
			if err != nil {
				r.problem("worker %s (pid %d): clock-skew note %q: %v", p.node, p.Pid, text, err)
				continue
			}
			if d := observed - offset; d < -5*time.Second || d > 5*time.Second {
				r.problem("worker %s (pid %d): wall clock set %v off but observed %v off", p.node, p.Pid, offset, observed)
			}
			if offset == 0 {
				back++
			} else {
				off++
			}
		}
		// A worker killed right after a heal may not have recorded the
		// setting back.
		setBack := back == p.skews || (p.killed && back == p.skews-1)
		if off != p.skews || !setBack {
			r.problem("worker %s (pid %d) received %d clock-skew faults but recorded %d settings off and %d back: the fault did not take",
				p.node, p.Pid, p.skews, off, back)
		}
	}
}

// injectExtended injects one fault of the kinds Options.Extended adds, on
// the leader (or a random process when none leads), and returns the time
// of the heal.
func (r *dialectRun) injectExtended(k history.FaultKind, ps []*proc, target *proc) (time.Time, error) {
	role := "leader"
	if target == nil {
		target, role = ps[r.rng.IntN(len(ps))], "random"
	}
	wait := func(d time.Duration) {
		timer := time.NewTimer(d)
		<-timer.C
	}
	switch k {
	case history.FaultCut, history.FaultLatency:
		if !r.extended || target.proxy == nil {
			return time.Time{}, fmt.Errorf("fault %s needs a fault proxy (extended run, not SQLite)", k)
		}
		if k == history.FaultCut {
			r.logf("fault cut: cutting %s (pid %d, %s) off the database for %v", target.node, target.Pid, role, CutFor)
			r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
			target.proxy.Cut()
			wait(CutFor)
			r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
			at := time.Now()
			target.proxy.Heal()
			return at, nil
		}
		r.logf("fault latency: %v on %s (pid %d, %s) for %v", Latency, target.node, target.Pid, role, LatencyFor)
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		target.proxy.SetLatency(Latency)
		wait(LatencyFor)
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		at := time.Now()
		target.proxy.SetLatency(0)
		return at, nil
	case history.FaultPoolExhaustion:
		if !r.extended {
			return time.Time{}, fmt.Errorf("fault %s needs the extended run", k)
		}
		r.logf("fault pool-exhaustion: SIGUSR1 %s (pid %d, %s): holds its %d connections for %v", target.node, target.Pid, role, ExhaustConns, ExhaustFor)
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseStart})
		if err := target.Signal(syscall.SIGUSR1); err != nil {
			return time.Now(), err
		}
		wait(ExhaustFor)
		// The worker releases its transactions ExhaustFor after the
		// signal, by itself.
		r.fault(history.Event{FaultKind: k, TargetPID: target.Pid, Phase: history.PhaseHeal})
		return time.Now(), nil
	}
	return time.Time{}, fmt.Errorf("unknown fault kind %q", k)
}

// parseClockNote parses the text of a worker's clock-skew note after its
// prefix: "offset=D observed=D".
func parseClockNote(text string) (offset, observed time.Duration, err error) {
	o, obs, _ := strings.Cut(text, " ")
	o, ok1 := strings.CutPrefix(o, "offset=")
	obs, ok2 := strings.CutPrefix(obs, "observed=")
	if !ok1 || !ok2 {
		return 0, 0, errors.New(`want "offset=D observed=D"`)
	}
	if offset, err = time.ParseDuration(o); err != nil {
		return 0, 0, err
	}
	observed, err = time.ParseDuration(obs)
	return offset, observed, err
}

// fault records a Fault event in the runner's history.
func (r *dialectRun) fault(e history.Event) {
	e.Kind = history.Fault
	if err := r.rec.Record(e); err != nil {
		r.problem("record fault: %v", err)
	}
}

// waitItems waits until every item is processed.
func (r *dialectRun) waitItems(ctx context.Context) error {
	timeout := max(minItemsTimeout, time.Duration(r.items/itemsPerSecond)*time.Second)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var left int64 = -1
	for {
		err := r.db.WithContext(ctx).Model(&Item{}).Where("processed_by = ?", "").Count(&left).Error
		if err == nil && left == 0 {
			return nil
		}
		if _, err := r.ready(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%d of %d items still unprocessed after %v", left, r.items, timeout)
		case <-t.C:
		}
	}
}

// verifyTable checks from the database that every item was processed and
// that the ledger's epochs never went back.
func (r *dialectRun) verifyTable(ctx context.Context) error {
	var left int64
	if err := r.db.WithContext(ctx).Model(&Item{}).Where("processed_by = ?", "").Count(&left).Error; err != nil {
		return fmt.Errorf("count unprocessed items: %w", err)
	}
	if left != 0 {
		return fmt.Errorf("%d items unprocessed in the table", left)
	}
	var rows []LedgerRow
	if err := r.db.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return fmt.Errorf("read the ledger: %w", err)
	}
	var epoch int64
	for _, row := range rows {
		if row.Epoch < epoch {
			return fmt.Errorf("ledger row %d has epoch %d after epoch %d (holder %s)", row.ID, row.Epoch, epoch, row.Holder)
		}
		epoch = row.Epoch
	}
	r.logf("table: %d items processed, %d ledger rows, last epoch %d", r.items, len(rows), epoch)
	return nil
}

// reconcileItems reads the histories and the final items table once, and
// records in the runner's history what the table shows that the workers
// could not record (recordKilledItems) and the processings a failover
// lost (recordLostItems).
func (r *dialectRun) reconcileItems(ctx context.Context) error {
	h, err := history.ReadDir(r.histDir)
	if err != nil {
		return err
	}
	var items []Item
	if err := r.db.WithContext(ctx).Order("id").Find(&items).Error; err != nil {
		return fmt.Errorf("read the items: %w", err)
	}
	return errors.Join(r.recordKilledItems(h, items), r.recordLostItems(h, items))
}

// recordKilledItems records, in the runner's history, the items that the
// table shows processed by a worker killed before it could record them: a
// SIGKILL can fall between a commit and the line that records it. Only
// killed workers' items are taken from the table, so an item that a live
// worker processed without recording is still reported as lost.
func (r *dialectRun) recordKilledItems(h history.History, items []Item) error {
	killed := map[int]bool{}
	for _, p := range r.procs {
		if p.killed {
			killed[p.Pid] = true
		}
	}
	killedHolder := map[string]bool{}
	recorded := map[int64]bool{}
	for _, e := range h.Events {
		if killed[e.PID] {
			killedHolder[e.Process] = true
		}
		if e.Kind == history.ItemProcessed {
			recorded[e.Item] = true
		}
	}
	n := 0
	for _, it := range items {
		if it.ProcessedBy == "" || recorded[it.ID] || !killedHolder[it.ProcessedBy] {
			continue
		}
		n++
		if err := r.rec.Record(history.Event{Kind: history.ItemProcessed, Item: it.ID, Holder: it.ProcessedBy, Generation: it.Generation,
			Text: "from the table: its holder was killed before it recorded the item"}); err != nil {
			return fmt.Errorf("record item %d: %w", it.ID, err)
		}
	}
	if n > 0 {
		r.logf("%d items processed by killed workers were committed but not recorded; taken from the table", n)
	}
	return nil
}

// recordLostItems records, in the runner's history, an ItemLost for each
// item processing that a failover to an asynchronous standby lost: one
// recorded between the moment the standby last caught up and the
// promotion (a lossWindow), which the final table does not show. Only the
// new primary's table survives, and the item was processed again there.
// A processing outside those windows that the table does not show is left
// as it is, for rule D to report.
func (r *dialectRun) recordLostItems(h history.History, items []Item) error {
	if len(r.lossWindows) == 0 {
		return nil
	}
	final := make(map[int64]Item, len(items))
	for _, it := range items {
		final[it.ID] = it
	}
	inWindow := func(t int64) bool {
		for _, w := range r.lossWindows {
			if t >= w[0] && t <= w[1] {
				return true
			}
		}
		return false
	}
	n := 0
	for _, e := range h.Events {
		if e.Kind != history.ItemProcessed || !inWindow(e.Time) {
			continue
		}
		if it := final[e.Item]; it.ProcessedBy == e.Holder && it.Generation == e.Generation {
			continue
		}
		n++
		if err := r.rec.Record(history.Event{Kind: history.ItemLost, Item: e.Item, Holder: e.Holder, Generation: e.Generation,
			Text: "committed on the old primary after the standby last caught up; lost in the failover"}); err != nil {
			return fmt.Errorf("record item %d: %w", e.Item, err)
		}
	}
	if n > 0 {
		r.logf("%d item processings were committed on an old primary after its standby last caught up, and lost in the failover", n)
	}
	return nil
}

// stopAll stops every running worker gracefully: SIGCONT (none should be
// paused), SIGTERM, then SIGKILL of the process group after termTimeout.
func (r *dialectRun) stopAll() {
	ps, _ := r.running()
	for _, p := range ps {
		p.stopped = true
		if p.paused {
			_ = p.Signal(syscall.SIGCONT)
			p.paused = false
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			r.problem("%v", err)
		}
	}
	deadline := time.Now().Add(termTimeout)
	for _, p := range ps {
		if !p.WaitExit(context.Background(), time.Until(deadline)) {
			r.problem("worker %s (pid %d) did not stop within %v of SIGTERM; killed", p.node, p.Pid, termTimeout)
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
		} else if p.Err() != nil {
			r.problem("worker %s (pid %d) stopped with %v; log %s", p.node, p.Pid, p.Err(), p.logPath)
		}
	}
}

// killAll kills the process group of every worker still running. It is
// the last resort, deferred by run.
func (r *dialectRun) killAll() {
	for _, p := range r.procs {
		if !p.Exited() {
			_ = p.Signal(syscall.SIGCONT)
			_ = p.Signal(syscall.SIGKILL)
			p.WaitExit(context.Background(), 5*time.Second)
		}
	}
}

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}
