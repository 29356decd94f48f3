package workers_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/workers"
)

// TestWorkers runs the worker cases on every database target, PostgreSQL
// behind PgBouncer in transaction mode included. Subtest names are
// <target>/<Case>.
func TestWorkers(t *testing.T) {
	runCasesOn(t, testdb.PoolerTargets(), workerCases)
}

var workerCases = []workerCase{
	{"ClusterSingletonOnePerCluster", caseClusterSingletonOnePerCluster},
	{"GlobalSingletonOneOverall", caseGlobalSingletonOneOverall},
	{"FailoverOnHostStop", caseFailoverOnHostStop},
	{"ErrorRestartsWithBackoff", caseErrorRestartsWithBackoff},
	{"PanicRecovered", casePanicRecovered},
	{"FinishedWorkReleasesAndCampaignsAgain", caseFinishedWork},
	{"LossEndsTermAndCampaignsAgain", caseLoss},
	{"ShutdownOrder", caseShutdownOrder},
	{"ShutdownOverrun", caseShutdownOverrun},
	{"Status", caseStatus},
	{"NewHostValidation", caseNewHostValidation},
	{"RunTwice", caseRunTwice},
	{"CoordinatorFailureStopsHost", caseCoordinatorFailure},
	{"LimitedAtMostLimit", caseLimitedAtMostLimit},
}

var errBoom = errors.New("boom")

// unitsIn sums the units of work done by the runs of group in progress;
// r.mu held.
func (r *recorder) unitsIn(group string) int {
	n := 0
	for _, run := range r.runningIn(group) {
		n += run.units
	}
	return n
}

// checkLiveLeases checks that the database shows exactly the given live
// leases (name -> holder).
func checkLiveLeases(t *testing.T, r *running, want map[string]string) {
	t.Helper()
	infos, err := r.Coordinator().Admin().Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, info := range infos {
		if info.Live {
			got[info.Key] = info.Holder
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("live leases in the database = %v, want %v", got, want)
	}
}

func caseClusterSingletonOnePerCluster(t *testing.T, b *bundle) {
	rec := newRecorder()
	clusterOf := map[string]string{"node-a": "east", "node-b": "east", "node-c": "west", "node-d": "west"}
	hosts := map[string]*running{}
	for _, node := range []string{"node-a", "node-b", "node-c", "node-d"} {
		cluster := clusterOf[node]
		hosts[node] = startHost(t, b.db, node, cluster, fastConfig(), workers.ClusterSingleton("warmer", rec.fn(cluster, node)))
	}
	leaders := map[string]*fnRun{}
	wantLeases := map[string]string{}
	for _, cluster := range []string{"east", "west"} {
		lead := rec.current(t, cluster)
		if clusterOf[lead.host] != cluster {
			t.Fatalf("%s leads cluster %s's worker but is in %s", lead.host, cluster, clusterOf[lead.host])
		}
		leaders[cluster] = lead
		lease, holder := "cluster/"+cluster+"/warmer", hosts[lead.host].Coordinator().Holder()
		wantLeases[lease] = holder
		for node, c := range clusterOf {
			if c == cluster && node != lead.host {
				sawLeader(t, hosts[node], lease, holder) // the follower campaigns and was beaten
			}
		}
	}
	// Both leaders work for longer than a TTL while their followers keep
	// campaigning.
	rec.waitFor(t, "15 units of work in each cluster", func() bool {
		return rec.unitsIn("east") >= 15 && rec.unitsIn("west") >= 15
	})
	peaks, overall := rec.peaks()
	t.Logf("most functions running at once: east %d, west %d, overall %d", peaks["east"], peaks["west"], overall)
	if peaks["east"] != 1 || peaks["west"] != 1 || overall != 2 {
		t.Fatalf("at once: east %d, west %d, overall %d; want one per cluster: 1, 1, 2", peaks["east"], peaks["west"], overall)
	}
	checkLiveLeases(t, hosts["node-a"], wantLeases)

	// Stop east's leader: the other east host takes over, west is untouched.
	old := leaders["east"]
	if err := hosts[old.host].stop(t); err != nil {
		t.Fatalf("Run of the stopped leader = %v", err)
	}
	rec.waitFor(t, "east's other host leading", func() bool {
		runs := rec.runningIn("east")
		return len(runs) == 1 && runs[0].host != old.host
	})
	if runs := rec.snapshot("west"); len(runs) != 1 || !runs[0].end.IsZero() {
		t.Fatalf("west's leader was disturbed by a failover in east: %s", rec)
	}
	if peaks, overall := rec.peaks(); peaks["east"] != 1 || peaks["west"] != 1 || overall != 2 {
		t.Fatalf("after failover, at once: east %d, west %d, overall %d; want 1, 1, 2", peaks["east"], peaks["west"], overall)
	}
}

func caseGlobalSingletonOneOverall(t *testing.T, b *bundle) {
	rec := newRecorder()
	nodes := []string{"node-a", "node-b", "node-c", "node-d"}
	clusterOf := map[string]string{"node-a": "east", "node-b": "east", "node-c": "west", "node-d": "west"}
	hosts := map[string]*running{}
	for _, node := range nodes {
		hosts[node] = startHost(t, b.db, node, clusterOf[node], fastConfig(), workers.GlobalSingleton("billing", rec.fn("global", node)))
	}
	lead := rec.current(t, "global")
	holder := hosts[lead.host].Coordinator().Holder()
	for _, node := range nodes {
		if node != lead.host {
			sawLeader(t, hosts[node], "global/billing", holder) // both clusters campaign for the one lease
		}
	}
	rec.waitFor(t, "15 units of work", func() bool { return rec.unitsIn("global") >= 15 })
	if _, overall := rec.peaks(); overall != 1 {
		t.Fatalf("%d global singletons ran at once, want 1: %s", overall, rec)
	}
	checkLiveLeases(t, hosts[lead.host], map[string]string{"global/billing": holder})

	if err := hosts[lead.host].stop(t); err != nil {
		t.Fatalf("Run of the stopped leader = %v", err)
	}
	rec.waitFor(t, "another host leading", func() bool {
		runs := rec.runningIn("global")
		return len(runs) == 1 && runs[0].host != lead.host
	})
	if _, overall := rec.peaks(); overall != 1 {
		t.Fatalf("%d global singletons ran at once across the failover, want 1: %s", overall, rec)
	}
}

func caseFailoverOnHostStop(t *testing.T, b *bundle) {
	rec := newRecorder()
	acfg := fastConfig()
	released := countReleases(t, &acfg)
	a := startHost(t, b.db, "node-a", "test", acfg, workers.ClusterSingleton("handoff", rec.fn("handoff", "node-a")))
	first := rec.current(t, "handoff")
	c := startHost(t, b.db, "node-c", "test", fastConfig(), workers.ClusterSingleton("handoff", rec.fn("handoff", "node-c")))
	sawLeader(t, c, "cluster/test/handoff", a.Coordinator().Holder())

	stopAt := time.Now()
	if err := a.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	rec.waitFor(t, "node-c leading", func() bool {
		runs := rec.runningIn("handoff")
		return len(runs) == 1 && runs[0].host == "node-c"
	})
	runs := rec.snapshot("handoff")
	if len(runs) != 2 || runs[0].host != "node-a" || runs[0].end.IsZero() {
		t.Fatalf("runs = %s, want node-a's finished, then node-c's", rec)
	}
	if runs[1].start.Before(runs[0].end) {
		t.Fatalf("overlap: node-c started %v before node-a's function returned", runs[0].end.Sub(runs[1].start))
	}
	if runs[1].epoch != first.epoch+1 {
		t.Fatalf("successor epoch %d, want %d", runs[1].epoch, first.epoch+1)
	}
	t.Logf("node-a's function returned %v after stop; node-c started %v after stop (gap %v)",
		runs[0].end.Sub(stopAt), runs[1].start.Sub(stopAt), runs[1].start.Sub(runs[0].end))
	// Handed over by a release, not left to expire: node-a's one term is
	// the one lease its coordinator released. (Its EventReleased, sent
	// while the coordinator shut down, may come after the coordinator's
	// event stream closed; the releases counter has it once node-a's Run
	// has returned.)
	released.waitN("node-a's releases", 1)
	for _, ev := range pending(a.coordEvents) {
		if ev.Kind == coordination.EventReleased && ev.Epoch != first.epoch {
			t.Fatalf("node-a released %+v, want only epoch %d", ev, first.epoch)
		}
	}
	stopped := recvEvent(t, a.events, "stopped-leading on node-a", hostEvent(workers.EventStoppedLeading, "handoff"))
	if !errors.Is(stopped.Err, coordination.ErrClosed) || stopped.Epoch != first.epoch {
		t.Fatalf("stopped-leading = %+v, want epoch %d and ErrClosed", stopped, first.epoch)
	}
}

// call is one call of a test's worker function.
type call struct {
	lease *coordination.Lease
	at    time.Time
}

func recvCall(t *testing.T, calls <-chan call, n int) call {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(wait):
		t.Fatalf("call %d of the worker function did not come within %v", n, wait)
	}
	return call{}
}

// checkRestarts checks three calls under one term, spaced by the doubling
// backoff, with one start and no stop, and returns the events.
func checkRestarts(t *testing.T, r *running, worker string, calls []call) []workers.Event {
	t.Helper()
	cfg := fastConfig()
	for i, c := range calls {
		if c.lease != calls[0].lease {
			t.Fatalf("call %d ran under %s, call 1 under %s: want the same term", i+1, c.lease.Token(), calls[0].lease.Token())
		}
	}
	gap1, gap2 := calls[1].at.Sub(calls[0].at), calls[2].at.Sub(calls[1].at)
	t.Logf("restarts after %v and %v (RestartBackoff %v)", gap1, gap2, cfg.RestartBackoff)
	if gap1 < cfg.RestartBackoff || gap2 < 2*cfg.RestartBackoff {
		t.Fatalf("restarts after %v and %v; want at least %v, then %v", gap1, gap2, cfg.RestartBackoff, 2*cfg.RestartBackoff)
	}
	evs := pending(r.events)
	var started, stopped int
	for _, ev := range evs {
		switch ev.Kind {
		case workers.EventStartedLeading:
			started++
		case workers.EventStoppedLeading:
			stopped++
		}
	}
	if started != 1 || stopped != 0 {
		t.Fatalf("%d started-leading and %d stopped-leading events, want 1 and 0: %v", started, stopped, evs)
	}
	if !calls[2].lease.Valid() {
		t.Fatalf("term not valid after restarts")
	}
	st, err := r.Status(context.Background())
	if err != nil || len(st.Leading) != 1 || st.Leading[0].Epoch != calls[0].lease.Epoch() {
		t.Fatalf("Status = %+v, %v; want leading %s", st, err, calls[0].lease.Token())
	}
	var errs []workers.Event
	for _, ev := range evs {
		if ev.Kind == workers.EventWorkerError {
			if ev.Worker != worker || ev.Key != calls[0].lease.Key() || ev.Epoch != calls[0].lease.Epoch() {
				t.Fatalf("worker-error event %+v, want worker %q term %s", ev, worker, calls[0].lease.Token())
			}
			errs = append(errs, ev)
		}
	}
	return errs
}

func caseErrorRestartsWithBackoff(t *testing.T, b *bundle) {
	calls := make(chan call, 8)
	var n atomic.Int32
	fn := func(ctx context.Context, l *coordination.Lease) error {
		calls <- call{l, time.Now()}
		if i := n.Add(1); i <= 2 {
			return fmt.Errorf("attempt %d: %w", i, errBoom)
		}
		<-ctx.Done()
		return nil
	}
	r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.ClusterSingleton("flaky", fn))
	got := []call{recvCall(t, calls, 1), recvCall(t, calls, 2), recvCall(t, calls, 3)}
	errs := checkRestarts(t, r, "flaky", got)
	if len(errs) != 2 || !errors.Is(errs[0].Err, errBoom) || !errors.Is(errs[1].Err, errBoom) {
		t.Fatalf("worker-error events = %v, want 2 wrapping %v", errs, errBoom)
	}
	logged := r.logs.FilterMessage("worker failed").FilterField(zapString("worker", "flaky")).All()
	if len(logged) != 2 || logged[0].Level != zapcore.ErrorLevel {
		t.Fatalf("logged %d error lines for the failures, want 2 at error level", len(logged))
	}
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		if got, _ := logged[i].ContextMap()["restart_in"].(time.Duration); got < want || got > want+want/2 {
			t.Fatalf("failure %d logged restart_in %v, want %v plus at most half of it", i+1, got, want)
		}
	}
	if row := leaseRow(t, b.db, "cluster/test/flaky"); row.Epoch != got[0].lease.Epoch() || row.Holder != r.Coordinator().Holder() {
		t.Fatalf("row after restarts = %+v, want held at epoch %d", row, got[0].lease.Epoch())
	}
}

func casePanicRecovered(t *testing.T, b *bundle) {
	calls := make(chan call, 8)
	var n atomic.Int32
	fn := func(ctx context.Context, l *coordination.Lease) error {
		calls <- call{l, time.Now()}
		switch n.Add(1) {
		case 1:
			panic("kaboom")
		case 2:
			panic(errBoom)
		}
		<-ctx.Done()
		return nil
	}
	r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.GlobalSingleton("fragile", fn))
	got := []call{recvCall(t, calls, 1), recvCall(t, calls, 2), recvCall(t, calls, 3)}
	select {
	case <-r.done:
		t.Fatalf("host stopped after a panic: %v", r.err)
	default:
	}
	errs := checkRestarts(t, r, "fragile", got)
	if len(errs) != 2 {
		t.Fatalf("worker-error events = %v, want 2", errs)
	}
	var pe *coordination.PanicError
	if !errors.As(errs[0].Err, &pe) || pe.Value != "kaboom" || !errors.Is(errs[0].Err, coordination.ErrPanicked) {
		t.Fatalf("first event's error = %v, want a *PanicError of \"kaboom\"", errs[0].Err)
	}
	if !strings.Contains(string(pe.Stack), "casePanicRecovered") {
		t.Fatalf("panic stack does not show the panicking function:\n%s", pe.Stack)
	}
	if !errors.Is(errs[1].Err, errBoom) || !errors.Is(errs[1].Err, coordination.ErrPanicked) {
		t.Fatalf("second event's error = %v, want a panic wrapping %v", errs[1].Err, errBoom)
	}
	logged := r.logs.FilterMessage("worker panicked; recovered").All()
	if len(logged) != 2 || logged[0].Level != zapcore.ErrorLevel {
		t.Fatalf("logged %d panic lines, want 2 at error level", len(logged))
	}
	if stack, _ := logged[0].ContextMap()["stack"].(string); !strings.Contains(stack, "casePanicRecovered") {
		t.Fatalf("panic log line has no stack of the panicking function: %q", stack)
	}
}

func caseFinishedWork(t *testing.T, b *bundle) {
	calls := make(chan call, 8)
	var n atomic.Int32
	fn := func(ctx context.Context, l *coordination.Lease) error {
		calls <- call{l, time.Now()}
		if n.Add(1) == 1 {
			return nil // done for this term
		}
		<-ctx.Done()
		return nil
	}
	r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.ClusterSingleton("batch", fn))
	first, second := recvCall(t, calls, 1), recvCall(t, calls, 2)
	if second.lease.Epoch() != first.lease.Epoch()+1 {
		t.Fatalf("second call under epoch %d, want a new term %d", second.lease.Epoch(), first.lease.Epoch()+1)
	}
	if gap := second.at.Sub(first.at); gap < fastConfig().RestartBackoff {
		t.Fatalf("campaigned again after %v, want at least RestartBackoff %v", gap, fastConfig().RestartBackoff)
	}
	if first.lease.Valid() {
		t.Fatalf("the finished term is still valid")
	}
	stopped := recvEvent(t, r.events, "stopped-leading", hostEvent(workers.EventStoppedLeading, "batch"))
	if !errors.Is(stopped.Err, coordination.ErrReleased) || stopped.Epoch != first.lease.Epoch() {
		t.Fatalf("stopped-leading = %+v, want epoch %d with ErrReleased", stopped, first.lease.Epoch())
	}
	// Given back in the database, not left to expire.
	recvEvent(t, r.coordEvents, "the release", func(ev coordination.Event) bool {
		return ev.Kind == coordination.EventReleased && ev.Epoch == first.lease.Epoch()
	})
	started := recvEvent(t, r.events, "started-leading again", hostEvent(workers.EventStartedLeading, "batch"))
	if started.Epoch != second.lease.Epoch() {
		t.Fatalf("started-leading epoch %d, want %d", started.Epoch, second.lease.Epoch())
	}
	for _, ev := range pending(r.events) {
		if ev.Kind == workers.EventWorkerError {
			t.Fatalf("returning nil was reported as an error: %v", ev.Err)
		}
	}
}

func caseLoss(t *testing.T, b *bundle) {
	started := make(chan *coordination.Lease, 4)
	causes := make(chan error, 4)
	fn := func(ctx context.Context, l *coordination.Lease) error {
		started <- l
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}
	r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.ClusterSingleton("lossy", fn))
	var l1 *coordination.Lease
	select {
	case l1 = <-started:
	case <-time.After(wait):
		t.Fatalf("worker did not start")
	}
	expireNow(t, b.db, l1.Key()) // the next renewal finds the term over
	select {
	case cause := <-causes:
		if !errors.Is(cause, coordination.ErrLeaseLost) {
			t.Fatalf("function's context ended with %v, want ErrLeaseLost", cause)
		}
	case <-time.After(wait):
		t.Fatalf("function not cancelled after its lease expired")
	}
	stopped := recvEvent(t, r.events, "stopped-leading", hostEvent(workers.EventStoppedLeading, "lossy"))
	if !errors.Is(stopped.Err, coordination.ErrLeaseLost) || stopped.Epoch != l1.Epoch() {
		t.Fatalf("stopped-leading = %+v, want epoch %d with ErrLeaseLost", stopped, l1.Epoch())
	}
	select {
	case l2 := <-started:
		if l2.Epoch() <= l1.Epoch() {
			t.Fatalf("new term epoch %d, want above %d", l2.Epoch(), l1.Epoch())
		}
	case <-time.After(wait):
		t.Fatalf("the worker did not campaign and lead again after the loss")
	}
	for _, ev := range pending(r.events) {
		if ev.Kind == workers.EventWorkerError {
			t.Fatalf("a context error at the end of a term was reported: %v", ev.Err)
		}
	}
}

func caseShutdownOrder(t *testing.T, b *bundle) {
	started := make(chan *coordination.Lease, 1)
	cancelled, returned, finish := make(chan struct{}), make(chan struct{}), make(chan struct{})
	fn := func(ctx context.Context, l *coordination.Lease) error {
		defer close(returned)
		started <- l
		<-ctx.Done()
		close(cancelled)
		<-finish // still cleaning up after cancellation
		return nil
	}
	cfg := fastConfig()
	released := countReleases(t, &cfg)
	r := startHost(t, b.db, "node-a", "test", cfg, workers.ClusterSingleton("drain", fn))
	var l *coordination.Lease
	select {
	case l = <-started:
	case <-time.After(wait):
		t.Fatalf("worker did not start")
	}
	r.cancel()
	select {
	case <-cancelled:
	case <-time.After(wait):
		t.Fatalf("function not cancelled on shutdown")
	}
	// The coordinator is draining: it ended the term with ErrClosed. (The
	// function may have seen the host's cancellation first.)
	select {
	case <-l.Context().Done():
	case <-time.After(wait):
		t.Fatalf("term not ended by the coordinator's shutdown")
	}
	if !errors.Is(context.Cause(l.Context()), coordination.ErrClosed) {
		t.Fatalf("term ended with %v, want ErrClosed", context.Cause(l.Context()))
	}
	// The function has not returned: the lease stays held, and renewed.
	before := leaseRow(t, b.db, l.Key())
	if before.Holder != r.Coordinator().Holder() || before.Epoch != l.Epoch() {
		t.Fatalf("lease released while the function still ran: %+v", before)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(wait)
	for row := before; !row.ExpiresAt.After(before.ExpiresAt); row = leaseRow(t, b.db, l.Key()) {
		if row.Holder != r.Coordinator().Holder() || !row.Live() {
			t.Fatalf("lease not held while the function still ran: %+v", row)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("lease not renewed during the shutdown within %v", wait)
		}
	}
	select {
	case <-r.done:
		t.Fatalf("Run returned while a function still ran: %v", r.err)
	default:
	}
	// The term is over for the function, though its lease is still held:
	// it is not reported as leading.
	if st, err := r.Status(context.Background()); err != nil || len(st.Leading) != 0 {
		t.Fatalf("Status during shutdown = %+v, %v; want leading nothing", st, err)
	}
	for _, ev := range pending(r.coordEvents) {
		if ev.Kind == coordination.EventReleased {
			t.Fatalf("lease released while the function still ran: %+v", ev)
		}
	}
	if n := released.n(); n != 0 {
		t.Fatalf("%d releases while the function still ran, want 0", n)
	}
	close(finish)
	// The release, of the one term: counted by the releases counter. (Its
	// EventReleased may come after the shutting-down coordinator closed its
	// event stream.)
	released.waitN("the release", 1)
	select {
	case <-returned:
	default:
		t.Fatalf("lease released before the function returned")
	}
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("Run = %v, want nil", r.err)
		}
	case <-time.After(wait):
		t.Fatalf("Run did not return after the function returned")
	}
	if row := leaseRow(t, b.db, l.Key()); row.Holder != "" {
		t.Fatalf("lease not released at shutdown: %+v", row)
	}
	stopped := recvEvent(t, r.events, "stopped-leading", hostEvent(workers.EventStoppedLeading, "drain"))
	if !errors.Is(stopped.Err, coordination.ErrClosed) {
		t.Fatalf("stopped-leading cause %v, want ErrClosed", stopped.Err)
	}
}

func caseShutdownOverrun(t *testing.T, b *bundle) {
	cfg := fastConfig()
	cfg.Coordination.ShutdownTimeout = 500 * time.Millisecond
	started := make(chan *coordination.Lease, 1)
	finish := make(chan struct{})
	fn := func(ctx context.Context, l *coordination.Lease) error {
		started <- l
		<-finish // ignores ctx
		return nil
	}
	r := startHost(t, b.db, "node-a", "test", cfg, workers.ClusterSingleton("stubborn", fn))
	var l *coordination.Lease
	select {
	case l = <-started:
	case <-time.After(wait):
		t.Fatalf("worker did not start")
	}
	stopAt := time.Now()
	err := r.stop(t)
	took := time.Since(stopAt)
	t.Logf("Run returned %v after cancel (ShutdownTimeout %v): %v", took, cfg.Coordination.ShutdownTimeout, err)
	if !errors.Is(err, workers.ErrShutdownOverrun) || !strings.Contains(err.Error(), `"stubborn"`) {
		t.Fatalf("Run = %v, want ErrShutdownOverrun naming the worker", err)
	}
	if took < cfg.Coordination.ShutdownTimeout {
		t.Fatalf("Run returned after %v, before ShutdownTimeout %v", took, cfg.Coordination.ShutdownTimeout)
	}
	ev := recvEvent(t, r.events, "shutdown-overrun", hostEvent(workers.EventShutdownOverrun, "stubborn"))
	if ev.Key != l.Key() || ev.Epoch != l.Epoch() || !errors.Is(ev.Err, workers.ErrShutdownOverrun) {
		t.Fatalf("overrun event = %+v, want term %s and ErrShutdownOverrun", ev, l.Token())
	}
	logged := r.logs.FilterLevelExact(zapcore.ErrorLevel).FilterField(zapString("worker", "stubborn")).
		FilterMessage("worker function still running at the shutdown timeout").All()
	if len(logged) != 1 {
		t.Fatalf("logged %d error lines naming the stuck worker, want 1", len(logged))
	}
	if row := leaseRow(t, b.db, l.Key()); row.Holder != r.Coordinator().Holder() || row.Epoch != l.Epoch() {
		t.Fatalf("lease of a function still running was released: %+v", row)
	}
	// The function returns at last: its goroutine ends and gives the lease
	// back. (Nothing of the host shows its goroutine's end once Run has
	// returned: the release is what the goroutine does last.)
	close(finish)
	deadline := time.Now().Add(wait)
	for row := leaseRow(t, b.db, l.Key()); row.Holder != ""; row = leaseRow(t, b.db, l.Key()) {
		if time.Now().After(deadline) {
			t.Fatalf("lease not released within %v after the stuck function returned: %+v", wait, row)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func caseStatus(t *testing.T, b *bundle) {
	block := func(ctx context.Context, l *coordination.Lease) error { <-ctx.Done(); return nil }
	ws := []workers.Worker{workers.ClusterSingleton("warmer", block), workers.GlobalSingleton("billing", block)}
	a := startHost(t, b.db, "node-a", "test", fastConfig(), ws...)
	recvStarted(t, a, "warmer", "billing")
	c := startHost(t, b.db, "node-c", "test", fastConfig(), ws...) // the same worker values serve two hosts
	sawLeader(t, c, "global/billing", a.Coordinator().Holder())

	st, err := a.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []workers.Leading{
		{Worker: "warmer", Kind: "cluster-singleton", Key: "cluster/test/warmer", Epoch: 1},
		{Worker: "billing", Kind: "global-singleton", Key: "global/billing", Epoch: 1},
	}
	if st.Holder != a.Coordinator().Holder() || fmt.Sprint(st.Leading) != fmt.Sprint(want) || len(st.Pools) != 0 {
		t.Fatalf("leader's Status = %+v, want holder %s leading %v", st, a.Coordinator().Holder(), want)
	}
	if st, err := c.Status(context.Background()); err != nil || len(st.Leading) != 0 || st.Holder != c.Coordinator().Holder() {
		t.Fatalf("follower's Status = %+v, %v; want leading nothing", st, err)
	}

	// Pool status (assignment and the pool as the database sees it) is
	// checked with real members in TestPartitioned.

	if err := a.stop(t); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.Status(context.Background()); len(st.Leading) != 0 {
		t.Fatalf("stopped host's Status = %+v, want leading nothing", st)
	}
	recvStarted(t, c, "warmer", "billing")
	st, err = c.Status(context.Background())
	if err != nil || len(st.Leading) != 2 || st.Leading[0].Epoch != 2 || st.Leading[1].Epoch != 2 {
		t.Fatalf("new leader's Status = %+v, %v; want both leading at epoch 2", st, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Status(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Status with a cancelled context = %v", err)
	}
}

// caseNewHostValidation: every bad config or worker is refused with an
// error wrapping coordination.ErrInvalidConfig that names it, by
// coordination.New (the coordinator's config, the identity, the database)
// or by workers.NewHost (the host's config and its workers).
func caseNewHostValidation(t *testing.T, b *bundle) {
	noop := func(context.Context, *coordination.Lease) error { return nil }
	part := func(context.Context, coordination.Assignment) error { return nil }
	id := testIdentity(t, "node-a", "test")
	const maxNameLen = 128 // the longest name coordination takes (its validateName)
	long := strings.Repeat("x", maxNameLen+1)
	invalid := []error{coordination.ErrInvalidConfig}
	for _, tc := range []struct {
		name    string
		cfg     hostConfig
		ws      []workers.Worker
		is      []error
		mention []string
	}{
		{"DuplicateName", hostConfig{}, []workers.Worker{workers.ClusterSingleton("jobs", noop), workers.ClusterSingleton("jobs", noop)},
			invalid, []string{`"jobs"`, "cluster-singleton"}},
		{"NilFunction", hostConfig{}, []workers.Worker{workers.GlobalSingleton("outbox", nil)},
			invalid, []string{`"outbox"`, "nil function"}},
		{"NilWorker", hostConfig{}, []workers.Worker{workers.ClusterSingleton("a", noop), nil},
			invalid, []string{"worker 1"}},
		{"BadName", hostConfig{}, []workers.Worker{workers.ClusterSingleton("bad name", noop)},
			invalid, []string{`"bad name"`}},
		{"EmptyName", hostConfig{}, []workers.Worker{workers.GlobalSingleton("", noop)},
			invalid, []string{"empty"}},
		{"LongName", hostConfig{}, []workers.Worker{workers.GlobalSingleton(long, noop)},
			invalid, []string{"129 bytes"}},
		{"NegativeRestartBackoff", hostConfig{Config: workers.Config{RestartBackoff: -time.Second}}, nil,
			invalid, []string{"RestartBackoff", "-1s"}},
		{"MaxBelowRestartBackoff", hostConfig{Config: workers.Config{RestartBackoff: time.Minute}}, nil,
			invalid, []string{"MaxRestartBackoff (30s)", "RestartBackoff (1m0s)"}},
		{"BadCoordinationConfig", hostConfig{Coordination: coordination.Config{TTL: time.Second, Margin: 2 * time.Second}}, []workers.Worker{workers.ClusterSingleton("a", noop)},
			invalid, []string{"Margin (2s)", "TTL (1s)"}},
		{"MaxInt64TTL", hostConfig{Coordination: coordination.Config{TTL: math.MaxInt64}}, []workers.Worker{workers.ClusterSingleton("a", noop)},
			invalid, []string{"TTL (2562047h47m16.854775807s)", "at most 24h0m0s"}},
		{"NoWorkers", hostConfig{}, nil,
			invalid, []string{"no workers", "0 entries"}},
		{"DotDotName", hostConfig{}, []workers.Worker{workers.GlobalSingleton("../..", noop)},
			invalid, []string{`"../.."`, `segment ".."`}},
		{"EmptySegmentName", hostConfig{}, []workers.Worker{workers.GlobalPartitioned("items/", part, coordination.PoolConfig{})},
			invalid, []string{`"items/"`, "empty segment"}},
		{"NanosecondPoll", hostConfig{}, []workers.Worker{workers.GlobalPartitioned("items", part, coordination.PoolConfig{PollInterval: time.Nanosecond})},
			invalid, []string{`"items"`, "PollInterval (1ns)", "at least 10ms"}},
		{"NegativePoll", hostConfig{}, []workers.Worker{workers.GlobalPartitioned("items", part, coordination.PoolConfig{PollInterval: -time.Second})},
			invalid, []string{`"items"`, "PollInterval (-1s)"}},
		{"SingletonOnAScheduledWorkersLease", hostConfig{}, []workers.Worker{
			workers.Scheduled("report", func(context.Context, *workers.Slot) error { return nil }, workers.ScheduleConfig{Cron: "@hourly"}),
			workers.GlobalSingleton("schedule/report", noop)},
			invalid, []string{`"schedule/report"`, `"global/schedule/report"`, `scheduled worker "report"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, h, err := newHost(b.db, id, tc.cfg, tc.ws...)
			if err == nil {
				t.Fatalf("NewHost succeeded: %v", h)
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("error %q does not wrap %q", err, target)
				}
			}
			for _, s := range tc.mention {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
	if _, _, err := newHost(b.db, identity0(), hostConfig{}, workers.ClusterSingleton("a", noop)); !errors.Is(err, coordination.ErrInvalidConfig) {
		t.Errorf("a coordinator with a zero identity = %v, want ErrInvalidConfig", err)
	}
	if _, _, err := newHost(nil, id, hostConfig{}, workers.ClusterSingleton("a", noop)); !errors.Is(err, coordination.ErrInvalidConfig) {
		t.Errorf("a coordinator with a nil db = %v, want ErrInvalidConfig", err)
	}
	if h, err := workers.NewHost(nil, workers.Config{}, workers.ClusterSingleton("a", noop)); !errors.Is(err, coordination.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "coord is nil") {
		t.Errorf("NewHost with a nil coordinator = %v, %v; want ErrInvalidConfig naming coord", h, err)
	}
	// The same name in different kinds is two different workers.
	if _, _, err := newHost(b.db, id, hostConfig{}, workers.ClusterSingleton("jobs", noop), workers.GlobalSingleton("jobs", noop)); err != nil {
		t.Errorf("a cluster and a global singleton of the same name: %v", err)
	}
}

func caseRunTwice(t *testing.T, b *bundle) {
	idle := func(ctx context.Context, _ *coordination.Lease) error { <-ctx.Done(); return nil }
	r := startHost(t, b.db, "node-a", "test", fastConfig(), workers.ClusterSingleton("idle", idle))
	if err := r.Run(context.Background()); !errors.Is(err, coordination.ErrClosed) {
		t.Fatalf("second Run while running = %v, want ErrClosed", err)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, coordination.ErrClosed) {
		t.Fatalf("Run after stop = %v, want ErrClosed", err)
	}
	// The channel holds the events of the run, then is closed.
	closed := make(chan struct{})
	go func() {
		for range r.events {
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(wait):
		t.Fatalf("event channel open after Run returned")
	}
	ch := r.Subscribe(t.Context(), 1)
	if _, ok := <-ch; ok {
		t.Fatalf("subscription after Run returned is open")
	}
}

// caseCoordinatorFailure: a coordinator that cannot start (auto-migration
// off, no schema) makes its Run fail with ErrSchemaMissing, and the host
// beside it returns at once with an error wrapping ErrClosed, having run
// no worker; its worker goroutines have returned with its Run.
func caseCoordinatorFailure(t *testing.T, b *bundle) {
	cfg := fastConfig()
	cfg.Coordination.DisableAutoMigrate = true // and no schema: the coordinator refuses to start
	var ran atomic.Int32
	never := func(context.Context, *coordination.Lease) error {
		ran.Add(1)
		t.Errorf("worker ran without a coordinator")
		return nil
	}
	coord, h, err := newHost(b.db, testIdentity(t, "node-a", "test"), cfg, workers.ClusterSingleton("x", never), workers.GlobalSingleton("y", never))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	coordErr := make(chan error, 1)
	go func() { coordErr <- coord.Run(ctx) }()
	if err := h.Run(ctx); !errors.Is(err, coordination.ErrClosed) {
		t.Fatalf("host's Run = %v, want ErrClosed", err)
	}
	if err := <-coordErr; !errors.Is(err, coordination.ErrSchemaMissing) {
		t.Fatalf("coordinator's Run = %v, want ErrSchemaMissing", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Run waited for its context instead of failing")
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the workers ran %d times", n)
	}
	if st, err := h.Status(context.Background()); err == nil && len(st.Leading) != 0 {
		t.Fatalf("Status after Run returned = %+v, want leading nothing", st)
	}
}

// A limited worker with limit 2 runs in exactly 2 of 3 hosts at once,
// and in 2 again after one of them stops.
func caseLimitedAtMostLimit(t *testing.T, b *bundle) {
	rec := newRecorder()
	hosts := map[string]*running{}
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		hosts[node] = startHost(t, b.db, node, "east", fastConfig(), workers.Limited("exports", 2, rec.fn("exports", node)))
	}
	var first []*fnRun
	rec.waitFor(t, "2 runs at once", func() bool {
		first = rec.runningIn("exports")
		return len(first) == 2
	})
	rec.waitFor(t, "5 units of work in each run", func() bool {
		return rec.unitsIn("exports") >= 10
	})
	stopped := first[0].host
	if err := hosts[stopped].stop(t); err != nil {
		t.Fatalf("Run of a stopped host = %v", err)
	}
	rec.waitFor(t, "2 runs again, without the stopped host", func() bool {
		runs := rec.runningIn("exports")
		return len(runs) == 2 && runs[0].host != stopped && runs[1].host != stopped
	})
	if peaks, _ := rec.peaks(); peaks["exports"] != 2 {
		t.Fatalf("at most %d runs at once; want 2: %s", peaks["exports"], rec)
	}
	st, err := hosts[first[1].host].Status(context.Background())
	if err != nil || len(st.Leading) != 1 || st.Leading[0].Kind != "limited" || !strings.HasPrefix(st.Leading[0].Key, "sem|global/exports|") {
		t.Fatalf("Status of a running limited worker = %+v, %v", st.Leading, err)
	}
}
