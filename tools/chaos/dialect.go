package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/history"
	"github.com/leasehold/leasehold/internal/testdb"
)

// runLog is where the owners of a dialect's run write: its progress lines
// and the problems that fail it.
type runLog struct {
	name     string // the dialect
	out      io.Writer
	problems []string
}

func (l *runLog) logf(format string, args ...any) {
	fmt.Fprintf(l.out, "chaos: %s: %s\n", l.name, fmt.Sprintf(format, args...))
}

func (l *runLog) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.logf("PROBLEM: %s", msg)
	l.problems = append(l.problems, msg)
}

// dialectRun is the run on one dialect. It drives, in turn, the owners
// that do the work: the dialect's database, the fleet of worker
// processes, the fault injector, and the verdict, which keeps the
// runner's own history and checks the outcome.
type dialectRun struct {
	*runLog
	database *database
	fleet    *fleet
	injector *injector
	verdict  *verdict
	// items is the number of items in the table: o.Items, and every item
	// fed during the faults once the feeding stopped.
	items int
	// slack: see Options.Slack.
	slack time.Duration
}

// newDialectRun wires the owners of the run on dialect name, whose files
// go under dir; bin is the worker binary.
func newDialectRun(name, dir, bin string, out io.Writer, rng *rand.Rand, o Options) *dialectRun {
	log := &runLog{name: name, out: out}
	histDir := filepath.Join(dir, "history")
	db := &database{runLog: log, dir: dir}
	f := &fleet{runLog: log, bin: bin, dir: dir, histDir: histDir, rng: rng, extended: o.Extended, database: db, tail: newTailer(histDir)}
	v := &verdict{runLog: log, histDir: histDir, database: db, fleet: f}
	return &dialectRun{
		runLog:   log,
		database: db,
		fleet:    f,
		injector: &injector{runLog: log, rng: rng, database: db, fleet: f, verdict: v},
		verdict:  v,
		items:    o.Items,
		slack:    o.Slack,
	}
}

// run runs the dialect's faults and checks its history.
func (r *dialectRun) run(ctx context.Context, faults []history.FaultKind, required bool) (res history.Result, problems []string, skipped bool, err error) {
	if err := os.MkdirAll(r.verdict.histDir, 0o755); err != nil {
		return res, nil, false, err
	}
	defer r.fleet.closeProxies()
	defer r.fleet.killAll()
	// close stops whatever open started, also when open failed after
	// starting the server (creating the database, opening the handle).
	defer r.database.close()
	if err := r.database.open(ctx); err != nil {
		if errors.Is(err, testdb.ErrBinariesMissing) {
			if required {
				return res, nil, false, fmt.Errorf("%s=%s requires it, but: %w", testdb.RequireEnv, r.name, err)
			}
			r.logf("SKIPPING %s: %v (set %s=%s to make this a failure)", strings.ToUpper(r.name), err, testdb.RequireEnv, r.name)
			return res, nil, true, nil
		}
		return res, nil, false, err
	}
	if err := r.database.seed(ctx, r.items); err != nil {
		return res, nil, false, err
	}
	if err := r.verdict.open(); err != nil {
		return res, nil, false, err
	}
	defer func() { _ = r.verdict.rec.Close() }()
	for range Procs {
		if _, err := r.fleet.start(); err != nil {
			return res, nil, false, err
		}
	}
	t0 := time.Now()
	if err := r.fleet.waitReady(ctx, readyTimeout); err != nil {
		return res, nil, false, fmt.Errorf("before the first fault: %w", err)
	}
	r.logf("leader and full %d-member assignment after %v; faults: %v", Procs, time.Since(t0).Round(time.Millisecond), faults)
	feedStop := make(chan struct{})
	fed := r.database.feed(ctx, feedStop, r.items)
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
	// quiet is when the last fault's recovery bound has passed, and
	// lastFault the history time just after its kill or heal.
	quiet, lastFault := time.Now(), history.Now()
	for i, k := range faults {
		if err := ctx.Err(); err != nil {
			return res, nil, false, err
		}
		healed, err := r.injector.inject(k)
		if err != nil {
			return res, nil, false, err
		}
		quiet, lastFault = healed.Add(bounds[k]), history.Now()
		rec, err := r.fleet.waitRecovered(ctx, healed)
		if err != nil {
			return res, nil, false, err
		}
		if rec < 0 {
			r.problem("fault %d (%s): not recovered within %v", i+1, k, readyTimeout)
		} else {
			r.logf("fault %d/%d %s: leader and full assignment again %v after the fault", i+1, len(faults), k, rec.Round(time.Millisecond))
		}
		if isFailover(k) {
			if err := r.injector.rebuild(ctx); err != nil {
				return res, nil, false, err
			}
		}
	}
	stopFeeding()
	if err := r.waitItems(ctx); err != nil {
		r.problem("%v", err)
	}
	if err := r.waitSlots(ctx, lastFault, quiet); err != nil {
		return res, nil, false, err
	}
	stopAt := history.Now()
	_ = r.verdict.rec.Notef("stopping all workers")
	r.fleet.stopAll()
	r.fleet.reportExits()
	if err := r.verdict.verifyTable(ctx, r.items); err != nil {
		r.problem("%v", err)
	}
	r.verdict.verifyClock()
	if err := r.verdict.reconcileItems(ctx, r.items); err != nil {
		r.problem("%v", err)
	}
	res, err = r.verdict.check(history.Config{
		Leases:       []string{LedgerLease},
		Pools:        []history.PoolRequirement{{Pool: ItemsPool, Members: 0}},
		Items:        int64(r.items),
		Slots:        []history.SlotRequirement{{Lease: ScheduleLease, Every: ScheduleEvery, Margin: slotMargin}},
		Bound:        bounds,
		ObserveUntil: stopAt,
	})
	if err != nil {
		return res, nil, false, err
	}
	return res, r.problems, false, nil
}

// slotsAfterFaults is how many slots of the scheduled job the run leaves
// due after the last fault's recovery bound, before it stops the workers;
// slotMargin leaves out those just before the stop (rule S2's Margin).
const (
	slotsAfterFaults = 2
	slotMargin       = ScheduleEvery + ScheduleEvery/2
)

// waitSlots waits until rule S2 will require slotsAfterFaults slots of
// the scheduled job: until its latest term has run for that long (and
// slotMargin) since its first run after the last fault (lastFault, a
// history time), or at most until that long after the last fault's
// bound (quiet).
func (r *dialectRun) waitSlots(ctx context.Context, lastFault int64, quiet time.Time) error {
	need := slotsAfterFaults*ScheduleEvery + slotMargin
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for time.Now().Before(quiet.Add(need)) {
		if err := r.fleet.tail.poll(); err != nil {
			return err
		}
		if from, ok := r.fleet.tail.jobSettled(lastFault); ok && history.Now() >= from+int64(need) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
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
		err := r.database.db.WithContext(ctx).Model(&Item{}).Where("processed_by = ?", "").Count(&left).Error
		if err == nil && left == 0 {
			return nil
		}
		if _, err := r.fleet.ready(); err != nil {
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
