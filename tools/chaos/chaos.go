package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/history"
	"github.com/leasehold/leasehold/internal/testdb"
	"golang.org/x/sync/errgroup"
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
//     barrier), 2 × rebalanceBound, and stepJitter: the members' steps
//     failed during the promotion, and the retry after a failed step, the
//     first or any later one, waits up to half a poll longer than a poll.
//
// The same bound holds for both kinds: a synchronous failover loses no
// commit, but it changes the incarnation all the same, so the hold-off
// applies; an asynchronous one loses commits, which moves no deadline
// later, since the lost renewals only make the rows on the new primary
// older. slack is added as for every kind.
const FailoverBound = RenewInterval + TTL + RetryInterval*3/2 + 2*(PollInterval+PollInterval/4) + stepJitter + slack

// stepJitter is how much longer than PollInterval a pool member waits
// before it retries a failed step, at most: the library's backoff waits
// the poll plus a random 0–50% after every failed step.
const stepJitter = PollInterval / 2

// rebalanceBound and crashRebalanceBound are the bounds that
// coordination.PoolConfig.PollInterval documents (the library's own are
// unexported): every member of a pool works in the new generation within
// rebalanceBound of a join or a graceful leave, and within
// crashRebalanceBound of a crash, plus the time of a few statements and
// of the work returning once cancelled.
func rebalanceBound(poll time.Duration) time.Duration { return poll + poll/4 }

func crashRebalanceBound(ttl, poll time.Duration) time.Duration {
	return ttl + poll/4 + 2*time.Millisecond
}

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
//     pool is rebalanced within crashRebalanceBound of the kill. The
//     replacement process then joins the pool, and if its join comes after
//     that rebalance, the pool rebalances once more, within
//     rebalanceBound.
//   - cut, pause, pool-exhaustion, clock-skew: the trust window TTL -
//     Margin. Each lasts longer than the trust window (clock-skew changes
//     nothing), so a successor has taken over before the heal; at the
//     heal, the faulted process joins the pool again, which takes a retry
//     and one barrier, and stepJitter for the retry of its failed step.
//   - latency: the same, plus Latency, which chunks queued before the
//     heal still wait.
//   - db-restart: the same, plus RestartAllowance for the server to start.
//   - failover-sync, failover-async: FailoverBound, from the promotion.
//   - galera-node-kill, galera-partition: GaleraBound, from the heal.
//
// Each has slack added.
func Bounds() map[history.FaultKind]time.Duration {
	takeover := max(TTL+RetryInterval*3/2, crashRebalanceBound(TTL, PollInterval)) +
		rebalanceBound(PollInterval) + slack
	rejoin := TTL - Margin + stepJitter + slack
	return map[history.FaultKind]time.Duration{
		history.FaultKill:            takeover,
		history.FaultPause:           rejoin,
		history.FaultCut:             rejoin,
		history.FaultPoolExhaustion:  rejoin,
		history.FaultClockSkew:       rejoin,
		history.FaultLatency:         Latency + rejoin,
		history.FaultDBRestart:       RestartAllowance + rejoin,
		history.FaultFailoverSync:    FailoverBound,
		history.FaultFailoverAsync:   FailoverBound,
		history.FaultGaleraNodeKill:  GaleraBound,
		history.FaultGaleraPartition: GaleraBound,
	}
}

// Kinds returns the fault kinds injected on dialect: kill, pause and
// clock-skew everywhere (clock-skew when clock is true: the runtime
// overlay could be built), a database restart where there is a server,
// and with extended a worker exhausting its own pool and, where there is
// a network, a cut and latency. SQLite has neither a server to restart
// nor a network. The replicated pairs (PostgresPair, MariaDBPair) get the
// failovers only: the other kinds act on the workers or on one server, and
// the postgres and mysql dialects have them. Galera gets the kinds of
// the processes, and instead of a database restart the faults of one of
// its nodes: galera-node-kill and galera-partition.
func Kinds(dialect string, extended, clock bool) []history.FaultKind {
	if isPair(dialect) {
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
	if dialect == Galera {
		ks = append(ks, history.FaultGaleraNodeKill, history.FaultGaleraPartition)
	} else {
		ks = append(ks, history.FaultDBRestart)
	}
	if extended {
		ks = append(ks, history.FaultCut, history.FaultLatency)
	}
	return ks
}

// PostgresPair is the dialect name of the replicated PostgreSQL pair
// (testdb.Pair): the workers reach it through its multi-host DSN.
const PostgresPair = "postgres-pair"

// MariaDBPair is the dialect name of the replicated MariaDB pair
// (testdb.StartMariaDBPair): the workers reach it through the pair's
// forwarding port, which follows the primary.
const MariaDBPair = "mariadb-pair"

// PgBouncer is the dialect name of PostgreSQL behind a private PgBouncer
// in transaction pooling mode (testdb.StartPgBouncer): the workers reach
// it through the pooler with pgx's exec mode (testdb.PgBouncerDSNSetting,
// which the library requires behind a pooler), and wake each other by
// datagrams (without pgnotify), since LISTEN cannot work there;
// the cut, latency and restart faults act on the pooler.
const PgBouncer = "pgbouncer"

// Galera is the dialect name of the private three-node MariaDB Galera
// cluster (testdb.StartGaleraCluster): the workers connect to its nodes
// in turn, each worker to one node.
const Galera = "galera"

// isPair reports whether dialect is a replicated pair.
func isPair(dialect string) bool { return dialect == PostgresPair || dialect == MariaDBPair }

// Dialects are the dialects the suite runs on, in order.
var Dialects = []string{"sqlite", "postgres", "mysql", PgBouncer, PostgresPair, MariaDBPair, Galera}

// ShortDialects are the dialects of the short round (TestChaosShort):
// Dialects without Galera, whose cluster and node faults alone would take
// several minutes on two cores.
var ShortDialects = []string{"sqlite", "postgres", "mysql", PgBouncer, PostgresPair, MariaDBPair}

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
	switch d {
	case PostgresPair, PgBouncer:
		return "postgres"
	case MariaDBPair, Galera:
		return "mysql"
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
	// alone and leaves it zero; the short round in make test runs right
	// after the rest of the suite on two cores and uses a loose bound, so
	// that it holds the safety rules strictly and fails on a recovery
	// that does not come, not on one slowed by the machine.
	Slack time.Duration
	// Concurrent is how many dialects run at once (default 1). Each
	// dialect has its own servers, workers and random choices, so only
	// the sharing of the CPU changes: make chaos runs one at a time, so
	// that its failover figures are each dialect's alone, and so does
	// the short round in make test: two at once starved each other on a
	// slower two-core machine.
	Concurrent int
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
	type outcome struct {
		res      history.DialectResult
		problems []string
	}
	outcomes := make([]outcome, len(o.Dialects))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(o.Concurrent, 1))
	for i, d := range o.Dialects {
		if len(plans[d]) == 0 {
			fmt.Fprintf(o.Out, "chaos: %s: none of the selected fault kinds applies; not run\n", d)
			continue
		}
		// Each dialect draws from its own source, so that a seed
		// replays the same choices however the dialects interleave.
		drng := rand.New(rand.NewPCG(o.Seed, uint64(i)+1))
		g.Go(func() error {
			r := newDialectRun(d, filepath.Join(root, d), bin, o.Out, drng, o)
			res, probs, skipped, err := r.run(gctx, plans[d], o.Required(requiredAs(d)))
			if err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
			if !skipped {
				outcomes[i] = outcome{res: history.DialectResult{Dialect: d, Result: res}, problems: probs}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return false, err
	}
	var results []history.DialectResult
	var problems []string
	for _, oc := range outcomes {
		if oc.res.Dialect == "" { // not run, or skipped
			continue
		}
		results = append(results, oc.res)
		for _, p := range oc.problems {
			problems = append(problems, oc.res.Dialect+": "+p)
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
