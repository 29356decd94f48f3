package workers_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgnotify"
	"github.com/leasehold/leasehold/workers"
)

// wait bounds every wait in these tests. It is generous: it only decides
// how long a broken build takes to fail, never whether a healthy one passes.
const wait = 20 * time.Second

// hostConfig is what a test host is built from: the config of the
// coordinator the host runs on, and the host's own.
type hostConfig struct {
	Coordination coordination.Config
	workers.Config
}

// fastConfig is a config with short timings, as in coordination's tests.
func fastConfig() hostConfig {
	return hostConfig{
		Coordination: coordination.Config{
			TTL:             1200 * time.Millisecond,
			RenewInterval:   200 * time.Millisecond,
			RetryInterval:   100 * time.Millisecond,
			Margin:          300 * time.Millisecond,
			ShutdownTimeout: 5 * time.Second,
			// As a service on PostgreSQL sets it; other databases ignore it.
			Notifications: pgnotify.New(),
		},
		Config: workers.Config{
			RestartBackoff:    100 * time.Millisecond,
			MaxRestartBackoff: 400 * time.Millisecond,
		},
	}
}

// newHost builds a coordinator for id on db with cfg.Coordination, and a
// host of ws on it with cfg.Config, as a service does.
func newHost(db *gorm.DB, id identity.Identity, cfg hostConfig, ws ...workers.Worker) (*coordination.Coordinator, *workers.Host, error) {
	coord, err := coordination.New(db, id, cfg.Coordination)
	if err != nil {
		return nil, nil, err
	}
	h, err := workers.NewHost(coord, cfg.Config, ws...)
	if err != nil {
		return nil, nil, err
	}
	return coord, h, nil
}

// bundle is what a worker case gets.
type bundle struct {
	target testdb.Target
	db     *gorm.DB
}

type workerCase struct {
	name string
	fn   func(t *testing.T, b *bundle)
}

// runCases runs every case once per database target. Targets run in
// parallel; the cases of one target run one after another, each on a
// fresh, empty database.
func runCases(t *testing.T, cases []workerCase) {
	t.Helper()
	runCasesOn(t, testdb.Targets(), cases)
}

// runCasesOn is runCases on the given targets.
func runCasesOn(t *testing.T, targets []testdb.Target, cases []workerCase) {
	t.Helper()
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					tc.fn(t, &bundle{target: tg, db: tg.Open(t)})
				})
			}
		})
	}
}

func testIdentity(t testing.TB, node, cluster string) identity.Identity {
	t.Helper()
	id, err := identity.New(node, cluster)
	if err != nil {
		t.Fatalf("identity.New(%q, %q): %v", node, cluster, err)
	}
	return id
}

// running is a host started by a test, and the coordinator it runs on,
// which the test runs beside it as a service does. Its event
// subscriptions are made before Run, so they miss nothing.
type running struct {
	*workers.Host
	coord       *coordination.Coordinator
	name        string
	cancel      context.CancelFunc
	done        chan struct{} // closed when the host's and the coordinator's Run have returned
	err         error         // the host's Run's result, set before done is closed
	coordErr    error         // the coordinator's Run's result, set before done is closed
	events      <-chan workers.Event
	coordEvents <-chan coordination.Event
	logs        *observer.ObservedLogs
}

// Coordinator returns the coordinator the host runs on.
func (r *running) Coordinator() *coordination.Coordinator { return r.coord }

// startHost creates a coordinator and a host for node in cluster, runs
// both (the host's Run and the coordinator's, on one context) and waits
// until the coordinator is ready. Both are stopped when the test ends; the
// host's worker goroutines have returned once its Run has (unless a
// shutdown overrun left one running, which the case that causes it waits
// for).
func startHost(t testing.TB, db *gorm.DB, node, cluster string, cfg hostConfig, ws ...workers.Worker) *running {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	cfg.Coordination.Logger = zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	if cfg.Coordination.Notifications == nil {
		cfg.Coordination.Notifications = pgnotify.New() // as a service on PostgreSQL sets it
	}
	coord, h, err := newHost(db, testIdentity(t, node, cluster), cfg, ws...)
	if err != nil {
		t.Fatalf("NewHost(%s): %v", node, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Host: h, coord: coord, name: node, cancel: cancel, done: make(chan struct{}), logs: logs}
	r.events = h.Subscribe(t.Context(), 1024)
	r.coordEvents = coord.Subscribe(t.Context(), 1024)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.coordErr = coord.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		r.err = h.Run(ctx)
	}()
	go func() {
		wg.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(wait):
			t.Errorf("host %s did not stop within %v", node, wait)
		}
	})
	select {
	case <-coord.Ready():
	case <-r.done:
		t.Fatalf("host %s: Run returned before ready: coordinator %v, host %v", node, r.coordErr, r.err)
	case <-time.After(wait):
		t.Fatalf("host %s not ready within %v", node, wait)
	}
	return r
}

// stop cancels the host and its coordinator, waits for both Runs to
// return, and returns the host's Run's result.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(wait):
		t.Fatalf("host %s did not stop within %v", r.name, wait)
	}
	if r.coordErr != nil {
		t.Errorf("host %s: the coordinator's Run = %v, want nil", r.name, r.coordErr)
	}
	return r.err
}

// releaseCounter reads how many leases a coordinator released, from the
// leasehold.lease.releases counter (docs/operations.md) of an SDK
// provider of its own. The counter is added to when the release statement
// has returned, before Lease.Release returns, so once the host's Run has
// returned it counts every release its workers made, also those made while
// the coordinator shut down, whose EventReleased the coordinator's event
// stream may have closed before.
type releaseCounter struct {
	t      testing.TB
	reader *sdkmetric.ManualReader
}

// countReleases gives cfg's coordinator a meter provider whose releases
// the returned counter reads.
func countReleases(t testing.TB, cfg *hostConfig) *releaseCounter {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	cfg.Coordination.MeterProvider = mp
	return &releaseCounter{t: t, reader: reader}
}

// n returns the releases counted so far.
func (c *releaseCounter) n() int64 {
	c.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := c.reader.Collect(context.Background(), &rm); err != nil {
		c.t.Fatalf("Collect: %v", err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "leasehold.lease.releases" {
				for _, dp := range sum.DataPoints {
					total += dp.Value
				}
			}
		}
	}
	return total
}

// waitN waits, at most wait, until n releases are counted.
func (c *releaseCounter) waitN(what string, n int64) {
	c.t.Helper()
	deadline := time.Now().Add(wait)
	for got := c.n(); got != n; got = c.n() {
		if got > n || time.Now().After(deadline) {
			c.t.Fatalf("%s: %d releases counted, want %d", what, got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recvEvent waits for the first event on ch matching match.
func recvEvent[E any](t testing.TB, ch <-chan E, what string, match func(E) bool) E {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("event channel closed while waiting for %s", what)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s within %v", what, wait)
		}
	}
}

// recvStarted waits until every one of the workers named started leading,
// in any order, and returns their started-leading events by worker.
func recvStarted(t testing.TB, r *running, names ...string) map[string]workers.Event {
	t.Helper()
	got := make(map[string]workers.Event, len(names))
	for len(got) < len(names) {
		ev := recvEvent(t, r.events, fmt.Sprintf("%s starting to lead %v (have %d)", r.name, names, len(got)), func(ev workers.Event) bool {
			return ev.Kind == workers.EventStartedLeading && slices.Contains(names, ev.Worker)
		})
		got[ev.Worker] = ev
	}
	return got
}

// hostEvent matches a host event of kind k about worker.
func hostEvent(k workers.EventKind, worker string) func(workers.Event) bool {
	return func(ev workers.Event) bool { return ev.Kind == k && ev.Worker == worker }
}

// pending returns the events already delivered on ch, without waiting.
func pending[E any](ch <-chan E) []E {
	var out []E
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

// sawLeader waits until r's coordinator, campaigning for lease, saw it held
// by holder: r is a live follower that leader beat.
func sawLeader(t testing.TB, r *running, lease, holder string) {
	t.Helper()
	recvEvent(t, r.coordEvents, fmt.Sprintf("%s seeing %s lead %s", r.name, holder, lease), func(ev coordination.Event) bool {
		return ev.Kind == coordination.EventLeaderChanged && ev.Key == lease && ev.Holder == holder
	})
}

// leaseRow reads one lease row directly from the database.
func leaseRow(t testing.TB, db *gorm.DB, name string) store.Row {
	t.Helper()
	s, err := store.New(db, store.Options{})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	rows, err := s.Get(context.Background(), []string{name})
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	if len(rows) != 1 {
		t.Fatalf("Get(%q): %d rows, want 1", name, len(rows))
	}
	return rows[0]
}

// expireNow makes a lease expired by the database clock, as if its holder
// had stopped renewing TTL ago: the session holding it expires (and with
// it every other lease of that session). Holder and epoch stay.
func expireNow(t testing.TB, db *gorm.DB, name string) {
	t.Helper()
	s, err := store.New(db, store.Options{})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	tables := s.Tables()
	if err := db.Exec("UPDATE "+tables.Sessions+" SET expires_at_us = 1 WHERE id IN (SELECT session_id FROM "+
		tables.Leases+" WHERE name = ?)", name).Error; err != nil {
		t.Fatalf("expire the session of %q: %v", name, err)
	}
}

// recorder records the runs of worker functions across hosts, and the most
// that ran at once, per group and overall.
type recorder struct {
	mu      sync.Mutex
	runs    []*fnRun
	active  map[string]int
	peak    map[string]int
	overall int // running now, all groups
	peakAll int
	changed chan struct{} // poked on every change
}

// fnRun is one call of a worker function.
type fnRun struct {
	group, host string
	epoch       int64
	start, end  time.Time // end is zero while it runs
	units       int       // units of work done
}

func newRecorder() *recorder {
	return &recorder{active: map[string]int{}, peak: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (r *recorder) poke() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) begin(group, host string, epoch int64) *fnRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := &fnRun{group: group, host: host, epoch: epoch, start: time.Now()}
	r.runs = append(r.runs, run)
	r.active[group]++
	r.peak[group] = max(r.peak[group], r.active[group])
	r.overall++
	r.peakAll = max(r.peakAll, r.overall)
	r.poke()
	return run
}

func (r *recorder) end(run *fnRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run.end = time.Now()
	r.active[run.group]--
	r.overall--
	r.poke()
}

func (r *recorder) unit(run *fnRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run.units++
	r.poke()
}

// unitInterval is how often a recorded function does a unit of work.
const unitInterval = 100 * time.Millisecond

// fn returns a singleton function that records its run in group and does
// a unit of work every unitInterval, checking Valid first, until its
// context ends.
func (r *recorder) fn(group, host string) coordination.LeaderFunc {
	return func(ctx context.Context, l *coordination.Lease) error {
		run := r.begin(group, host, l.Epoch())
		defer r.end(run)
		tick := time.NewTicker(unitInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				if l.Valid() {
					r.unit(run)
				}
			}
		}
	}
}

// waitFor waits until cond, called with the recorder locked, is true.
func (r *recorder) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("%s: not within %v; runs: %s", what, wait, r.String())
		}
	}
}

// runningIn returns the runs of group that have not ended; r.mu held.
func (r *recorder) runningIn(group string) []*fnRun {
	var out []*fnRun
	for _, run := range r.runs {
		if run.group == group && run.end.IsZero() {
			out = append(out, run)
		}
	}
	return out
}

// current returns the one run of group in progress, waiting for it.
func (r *recorder) current(t testing.TB, group string) *fnRun {
	t.Helper()
	var cur *fnRun
	r.waitFor(t, "a run in "+group, func() bool {
		runs := r.runningIn(group)
		if len(runs) == 1 {
			cur = runs[0]
		}
		return cur != nil
	})
	return cur
}

// peaks returns the most runs at once per group and overall.
func (r *recorder) peaks() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.peak))
	for g, n := range r.peak {
		out[g] = n
	}
	return out, r.peakAll
}

// snapshot returns a copy of the runs of group, by start.
func (r *recorder) snapshot(group string) []fnRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []fnRun
	for _, run := range r.runs {
		if run.group == group {
			out = append(out, *run)
		}
	}
	slices.SortFunc(out, func(a, b fnRun) int { return a.start.Compare(b.start) })
	return out
}

// String lists the runs; call without r.mu held, or from waitFor's
// failure path, where it is not held.
func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ""
	for _, run := range r.runs {
		s += fmt.Sprintf("[%s %s epoch %d units %d running %v] ", run.group, run.host, run.epoch, run.units, run.end.IsZero())
	}
	return s
}

func zapString(key, value string) zapcore.Field { return zap.String(key, value) }

// identity0 is the zero identity, which is invalid.
func identity0() identity.Identity { return identity.Identity{} }
