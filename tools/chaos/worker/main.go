// Command worker is one process of the chaos suite: a workers.Host with a
// global singleton "ledger" that appends to chaos_ledger every 50 ms in a
// fenced transaction, a partitioned worker "items" that processes the
// seeded rows of chaos_items, one per fenced transaction, a semaphore of
// limit 2 ("chaos-sem", workers.Limited) and a scheduled job
// ("chaos-tick", a slot a second, missed slots all run); and, on the
// coordinator the host runs on, keyed locks on four keys ("chaos-locks")
// and a sticky pool of 16 partitions ("chaos-sticky", a pool with
// PoolConfig.Partitions). Each grant of a key or slot and each sticky
// partition makes fenced writes to chaos_grants, and each slot is
// completed with a fenced insert into chaos_slots. Every term, grant,
// write, processed item and completed slot is recorded to DIR/<pid>.jsonl
// with history.Recorder.
//
//	worker -driver postgres -dsn DSN -dir DIR -node w1 [-max-open-conns N -exhaust-for D] [-clock-skew D] [-peer-wakeups] [-check-dsns DSN,...]
//
// A commit that fails may still have happened (a connection lost during
// it); the worker then reads back whether it did, through -dsn, or in turn
// through the -check-dsns: on a Galera cluster, other nodes than its own,
// which a fault of its own node leaves answering.
//
// It stops gracefully on SIGTERM or SIGINT. With -max-open-conns N its
// pool has at most N connections, and a fenced transaction stops waiting
// for one when the term ends. With -exhaust-for D, each SIGUSR1 makes it
// begin N transactions of its own and hold them for D (the pool-exhaustion
// fault: its own code leaking its pool). With -clock-skew D, each SIGUSR2
// sets its wall clock D off, or back (the clock-skew fault; it needs the
// build overlay of tools/chaos/clock.go), and records a note
// "clock-skew: offset=... observed=..." with the wall clock it then
// observes against CLOCK_REALTIME.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/history"
	"github.com/leasehold/leasehold/pgnotify"
	"github.com/leasehold/leasehold/tools/chaos"
	"github.com/leasehold/leasehold/workers"
)

// txTimeout bounds one fenced transaction.
const txTimeout = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos worker: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	driver := flag.String("driver", "", "database driver (dbopen names)")
	dsn := flag.String("dsn", "", "database DSN")
	dir := flag.String("dir", "", "directory of the history files")
	node := flag.String("node", "w", "node name of this process")
	maxOpen := flag.Int("max-open-conns", 0, "bound the pool to this many connections (0: unbounded)")
	exhaustFor := flag.Duration("exhaust-for", 0, "on SIGUSR1, hold -max-open-conns transactions for this long (0: ignore SIGUSR1)")
	clockSkew := flag.Duration("clock-skew", 0, "on SIGUSR2, set the wall clock this far off, or back (0: ignore SIGUSR2)")
	clockCheck := flag.Duration("clock-check", 0, "set the wall clock this far off, print \"observed=D\" with how far off it then reads, and exit")
	peerWakeups := flag.Bool("peer-wakeups", false, "on PostgreSQL, the default wake-ups by datagrams between the processes instead of pgnotify, as behind a transaction pooler")
	checkDSNs := flag.String("check-dsns", "", "comma-separated DSNs (same driver) through which to find out whether a failed commit happened, in turn (default: -dsn)")
	flag.Parse()
	if *clockCheck != 0 {
		if !clockInjectable {
			return fmt.Errorf("-clock-check: built without the %s tag and runtime overlay", chaos.ClockTag)
		}
		setWallOffset(int64(*clockCheck / time.Second))
		observed, err := wallSkew()
		if err != nil {
			return err
		}
		fmt.Printf("observed=%s\n", observed.Round(time.Second))
		return nil
	}
	if *driver == "" || *dsn == "" || *dir == "" {
		return errors.New("-driver, -dsn and -dir are required")
	}
	id, err := identity.New(*node, chaos.Cluster)
	if err != nil {
		return err
	}
	rec, err := history.Create(filepath.Join(*dir, fmt.Sprintf("%d.jsonl", os.Getpid())), id.Holder())
	if err != nil {
		return err
	}
	defer func() { _ = rec.Close() }()
	db, err := dbopen.Open(*driver, *dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
		if *maxOpen > 0 {
			sqlDB.SetMaxOpenConns(*maxOpen)
		}
	}
	log, err := zap.NewDevelopment()
	if err != nil {
		return err
	}
	w := &worker{db: db, rec: rec, holder: id.Holder(), log: log, bounded: *maxOpen > 0, sqlite: db.Name() == "sqlite",
		check: []*gorm.DB{db}}
	if *checkDSNs != "" {
		w.check = nil
		for _, dsn := range strings.Split(*checkDSNs, ",") {
			cdb, err := dbopen.Open(*driver, dsn, &gorm.Config{Logger: logger.Discard})
			if err != nil {
				return err
			}
			if sqlDB, err := cdb.DB(); err == nil {
				defer func() { _ = sqlDB.Close() }()
			}
			w.check = append(w.check, cdb)
		}
	}
	if *maxOpen > 0 && *exhaustFor > 0 {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		defer signal.Stop(usr1)
		go w.exhaustOnSignal(ctx, usr1, *maxOpen, *exhaustFor)
	}
	if *clockSkew != 0 {
		usr2 := make(chan os.Signal, 1)
		signal.Notify(usr2, syscall.SIGUSR2)
		defer signal.Stop(usr2)
		go w.skewOnSignal(ctx, usr2, *clockSkew)
	}
	coord, err := coordination.New(db, id, coordinationConfig(log, *peerWakeups))
	if err != nil {
		return err
	}
	host, err := workers.NewHost(coord, workers.Config{RestartBackoff: 100 * time.Millisecond, MaxRestartBackoff: time.Second},
		workers.GlobalSingleton(chaos.LedgerWorker, w.ledger),
		workers.GlobalPartitioned(chaos.ItemsWorker, w.items, coordination.PoolConfig{PollInterval: chaos.PollInterval}),
		workers.Limited(chaos.SemaphoreWorker, chaos.SemaphoreLimit, w.semaphore),
		workers.Scheduled(chaos.ScheduleWorker, w.tick, workers.ScheduleConfig{Every: chaos.ScheduleEvery, Misfire: workers.MisfireRunAll}),
	)
	if err != nil {
		return err
	}
	locks, err := coord.Locks(coordination.GlobalScope, chaos.LocksName)
	if err != nil {
		return err
	}
	sticky, err := coord.Pool(coordination.GlobalScope, chaos.StickyPool,
		coordination.PoolConfig{Partitions: chaos.StickyPartitions, PollInterval: chaos.PollInterval})
	if err != nil {
		return err
	}
	_ = rec.Notef("started: holder %s pid %d", id.Holder(), os.Getpid())
	// The coordinator runs beside the host, the keyed locks and the sticky
	// pool, which all use it; when one of them fails the others stop.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return coord.Run(gctx) })
	g.Go(func() error { return host.Run(gctx) })
	g.Go(func() error { w.lockLoop(gctx, locks); return nil })
	g.Go(func() error { w.runSticky(gctx, sticky); return nil })
	err = g.Wait()
	_ = rec.Notef("stopped: %v", err)
	return err
}

// coordinationConfig is the coordinators' configuration of the round,
// with log, and with release notifications on PostgreSQL (pgnotify), or
// with the default peer wake-ups.
func coordinationConfig(log *zap.Logger, peerWakeups bool) coordination.Config {
	c := chaos.CoordinationConfig()
	c.Logger = log
	if !peerWakeups {
		c.Notifications = pgnotify.New()
	}
	return c
}

type worker struct {
	db     *gorm.DB
	rec    *history.Recorder
	holder string
	log    *zap.Logger
	// bounded: the pool has a MaxOpenConns, so Begin may wait for a
	// connection; the wait then stops when the term ends.
	bounded bool
	// sqlite: the database is an SQLite file.
	sqlite bool
	// check are the handles through which the worker finds out whether a
	// commit that failed happened, tried in turn for at most checkFor.
	check []*gorm.DB
}

// checkFor bounds the check of a failed commit. It must outlast any
// outage a fault makes, or a commit that happened is recorded as refused
// and rule D reports its item as lost: a primary's fast shutdown (testdb
// kills the server after 15s) followed by the standby's promotion (testdb
// waits up to a minute for it); a Galera cluster holding its commits
// until it has given up on a node that stopped answering. The worker
// waits only while the database fails.
const checkFor = 90 * time.Second

// exhaustOnSignal, on each signal, takes n connections of its own pool
// and holds them for d: the process's own code exhausting its pool. On a
// database server each holds an open transaction (a leaked transaction).
// On SQLite each holds a bare connection instead: its transactions take
// the file's one write lock when they begin, so held transactions would
// block every process, not exhaust this one's pool. A connection not
// obtained within d is given up.
func (w *worker) exhaustOnSignal(ctx context.Context, sig <-chan os.Signal, n int, d time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		what := "transactions"
		if w.sqlite {
			what = "connections"
		}
		_ = w.rec.Notef("SIGUSR1: holding %d %s for %v", n, what, d)
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
		var held atomic.Int64
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if w.sqlite {
					sqlDB, err := w.db.DB()
					if err != nil {
						return
					}
					conn, err := sqlDB.Conn(hctx)
					if err != nil {
						return
					}
					if err := conn.PingContext(hctx); err == nil {
						held.Add(1)
					}
					<-hctx.Done()
					_ = conn.Close()
					return
				}
				tx := w.db.WithContext(hctx).Begin()
				if tx.Error != nil {
					return
				}
				if err := tx.Exec("SELECT 1").Error; err == nil {
					held.Add(1)
				}
				<-hctx.Done()
				tx.Rollback()
			})
		}
		wg.Wait()
		cancel()
		_ = w.rec.Notef("released the held %s (%d of %d held)", what, held.Load(), n)
	}
}

// skewOnSignal, on each signal, sets the wall clock skew off, or back, and
// records what the wall clock then reads against CLOCK_REALTIME.
func (w *worker) skewOnSignal(ctx context.Context, sig <-chan os.Signal, skew time.Duration) {
	on := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		if !clockInjectable {
			_ = w.rec.Notef("clock-skew: not injectable: built without the %s tag and runtime overlay", chaos.ClockTag)
			continue
		}
		on = !on
		offset := time.Duration(0)
		if on {
			offset = skew
		}
		setWallOffset(int64(offset / time.Second))
		observed, err := wallSkew()
		if err != nil {
			_ = w.rec.Notef("clock-skew: %v", err)
			continue
		}
		_ = w.rec.Notef("clock-skew: offset=%s observed=%s", offset, observed.Round(time.Second))
	}
}

// wallSkew returns how far time.Now's wall clock is from CLOCK_REALTIME,
// read by the clock_gettime system call (which the overlay does not move).
func wallSkew() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime(CLOCK_REALTIME): %w", err)
	}
	return time.Now().Round(0).Sub(time.Unix(ts.Unix())), nil
}

// record appends e to the history; a failed write is logged once by the
// Recorder's sticky error and otherwise ignored (the process carries on).
func (w *worker) record(e history.Event) {
	if err := w.rec.Record(e); err != nil {
		w.log.Error("history record failed", zap.Error(err))
	}
}

// fenced runs one transaction: fence, then do; it returns whether the
// commit succeeded, the error otherwise, and the time taken just before
// the commit (the write's Time in the history: it precedes the commit, so
// accepted writes of different processes keep their commit order).
func (w *worker) fenced(ctx context.Context, fence func(*gorm.DB) error, do func(*gorm.DB) (bool, error)) (attempted, accepted bool, at int64, err error) {
	term := ctx
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txTimeout)
	defer cancel()
	stop := func() bool { return true }
	if w.bounded {
		// Waiting for a pool connection ends with the term.
		stop = context.AfterFunc(term, cancel)
	}
	tx := w.db.WithContext(ctx).Begin()
	if !stop() {
		if tx.Error == nil {
			tx.Rollback()
		}
		return true, false, 0, fmt.Errorf("term ended while waiting for a connection: %w", context.Cause(term))
	}
	if tx.Error != nil {
		return true, false, 0, tx.Error
	}
	if err := fence(tx); err != nil {
		tx.Rollback()
		return true, false, 0, err
	}
	ok, err := do(tx)
	if err != nil || !ok {
		tx.Rollback()
		return err != nil, false, 0, err
	}
	at = history.Now()
	if err := tx.Commit().Error; err != nil {
		return true, false, at, err
	}
	return true, true, at, nil
}

// ledger is the global singleton: while it leads it appends a row every
// LedgerEvery in a fenced transaction. It records its term's start and
// stop (see history.Term) and every write attempt. It does not check Valid
// before writing, so a process resumed after a pause tries once more and
// the fence refuses.
func (w *worker) ledger(ctx context.Context, l *coordination.Lease) error {
	defer history.Term(ctx, w.record,
		history.Event{Kind: history.LeaderStart, Lease: l.Key(), Epoch: l.Epoch()},
		history.Event{Kind: history.LeaderStop, Lease: l.Key(), Epoch: l.Epoch()})()
	t := time.NewTicker(chaos.LedgerEvery)
	defer t.Stop()
	for {
		_, ok, at, err := w.fenced(ctx, l.Fence, func(tx *gorm.DB) (bool, error) {
			return true, tx.Create(&chaos.LedgerRow{Epoch: l.Epoch(), Holder: w.holder}).Error
		})
		e := history.Event{Kind: history.Write, Resource: chaos.LedgerWorker, Lease: l.Key(), Epoch: l.Epoch(), Accepted: ok, Time: at}
		if err != nil {
			e.Err = err.Error()
		}
		w.record(e)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// items is the partitioned worker: it processes the unprocessed items of
// its index, one per fenced transaction, until its assignment ends. It
// never returns early, so its term lasts as long as the assignment.
func (w *worker) items(ctx context.Context, a coordination.Assignment) error {
	defer history.Term(ctx, w.record,
		history.Event{Kind: history.PartitionStart, Pool: a.Key, Index: a.Index, Count: a.Count, Generation: a.Generation, Epoch: a.Epoch},
		history.Event{Kind: history.PartitionStop, Pool: a.Key, Index: a.Index, Count: a.Count, Generation: a.Generation, Epoch: a.Epoch})()
	t := time.NewTicker(chaos.ItemEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var ids []int64
		err := w.db.WithContext(ctx).Model(&chaos.Item{}).
			Where("processed_by = ? AND id % ? = ?", "", a.Count, a.Index).
			Order("id").Limit(1).Pluck("id", &ids).Error
		if err != nil || len(ids) == 0 {
			continue
		}
		w.process(ctx, a, ids[0])
	}
}

// process processes one item in a fenced transaction and records the
// write and, once it is known to be committed, the item.
func (w *worker) process(ctx context.Context, a coordination.Assignment, id int64) {
	attempted, ok, at, err := w.fenced(ctx, a.Fence, func(tx *gorm.DB) (bool, error) {
		res := tx.Model(&chaos.Item{}).Where("id = ? AND processed_by = ?", id, "").
			Updates(map[string]any{"processed_by": w.holder, "generation": a.Generation})
		return res.RowsAffected == 1, res.Error
	})
	if !attempted {
		w.log.Info("item already processed", zap.Int64("item", id))
		return
	}
	if err != nil && at != 0 {
		// The commit failed: it may still have happened (a connection
		// lost during the commit). Look, so the history matches the table.
		ok = w.committed(ctx, id, a.Generation)
	}
	e := history.Event{Kind: history.Write, Resource: chaos.ItemsWorker, Pool: a.Key, Generation: a.Generation, Accepted: ok, Time: at}
	if err != nil {
		e.Err = err.Error()
	}
	w.record(e)
	if ok {
		w.record(history.Event{Kind: history.ItemProcessed, Item: id, Generation: a.Generation})
	}
}

// committed reports whether item id is recorded as processed by this
// process in generation gen, trying for checkFor while the database
// fails.
func (w *worker) committed(ctx context.Context, id, gen int64) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkFor)
	defer cancel()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for n := 0; ; n++ {
		var it chaos.Item
		err := w.check[n%len(w.check)].WithContext(ctx).Where("id = ?", id).Take(&it).Error
		if err == nil {
			ok := it.ProcessedBy == w.holder && it.Generation == gen
			// Logged so that an item the final table shows processed by
			// this process, which its history does not record, can be
			// traced to the check that found it not yet so.
			w.log.Info("checked a failed commit", zap.Int64("item", id), zap.Int64("generation", gen), zap.Bool("happened", ok),
				zap.String("processed_by", it.ProcessedBy), zap.Int64("processed_in", it.Generation))
			return ok
		}
		select {
		case <-ctx.Done():
			w.log.Error("could not tell whether a failed commit happened", zap.Int64("item", id), zap.Error(err))
			return false
		case <-t.C:
		}
	}
}

// sleep waits d or until ctx is done, and reports whether ctx is still
// live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// grantWrite makes one fenced write under the grant l to resource and
// records it.
func (w *worker) grantWrite(ctx context.Context, l *coordination.Lease, resource string) {
	_, ok, at, err := w.fenced(ctx, l.Fence, func(tx *gorm.DB) (bool, error) {
		return true, tx.Create(&chaos.GrantRow{Resource: resource, Epoch: l.Epoch(), Holder: w.holder}).Error
	})
	e := history.Event{Kind: history.Write, Resource: resource, Lease: l.Key(), Epoch: l.Epoch(), Accepted: ok, Time: at}
	if err != nil {
		e.Err = err.Error()
	}
	w.record(e)
}

// lockLoop holds one key of the keyed locks at a time, picked at random,
// for LockHold with one fenced write, until ctx is done. The grant's term
// ends with its context (the trust deadline) or when the work returns.
func (w *worker) lockLoop(ctx context.Context, locks *coordination.Locks) {
	for ctx.Err() == nil {
		key := fmt.Sprintf("k%d", rand.IntN(chaos.LockKeys))
		err := locks.Do(ctx, key, func(ctx context.Context, l *coordination.Lease) error {
			defer history.Term(ctx, w.record,
				history.Event{Kind: history.GrantStart, Lease: l.Key(), Epoch: l.Epoch()},
				history.Event{Kind: history.GrantStop, Lease: l.Key(), Epoch: l.Epoch()})()
			w.grantWrite(ctx, l, l.Key())
			sleep(ctx, chaos.LockHold)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			w.log.Info("keyed lock", zap.String("key", key), zap.Error(err))
		}
		sleep(ctx, chaos.LockPause)
	}
}

// semaphore holds a slot of the semaphore: a fenced write every
// SemaphoreEvery, until SemaphoreHold has passed (it then returns, the
// slot is released and the worker waits for one again) or the term ends.
func (w *worker) semaphore(ctx context.Context, l *coordination.Lease) error {
	defer history.Term(ctx, w.record,
		history.Event{Kind: history.GrantStart, Lease: l.Key(), Epoch: l.Epoch(), Semaphore: chaos.SemaphoreKey, Limit: chaos.SemaphoreLimit},
		history.Event{Kind: history.GrantStop, Lease: l.Key(), Epoch: l.Epoch(), Semaphore: chaos.SemaphoreKey, Limit: chaos.SemaphoreLimit})()
	hold := time.NewTimer(chaos.SemaphoreHold)
	defer hold.Stop()
	t := time.NewTicker(chaos.SemaphoreEvery)
	defer t.Stop()
	for {
		w.grantWrite(ctx, l, l.Key())
		select {
		case <-ctx.Done():
			return nil
		case <-hold.C:
			return nil
		case <-t.C:
		}
	}
}

// tick runs one slot of the scheduled job: it completes the slot and
// inserts its SlotRow in one transaction fenced by the slot's term
// (Slot.Complete), and records the run as a grant of the job's lease, the
// write and, once committed, the completed slot.
func (w *worker) tick(ctx context.Context, slot *workers.Slot) error {
	lease := chaos.ScheduleLease
	if l := slot.Lease(); l != nil {
		lease = l.Key()
	}
	defer history.Term(ctx, w.record,
		history.Event{Kind: history.GrantStart, Lease: lease, Epoch: slot.Epoch},
		history.Event{Kind: history.GrantStop, Lease: lease, Epoch: slot.Epoch})()
	row := chaos.SlotRow{Slot: slot.Time.UnixNano(), Epoch: slot.Epoch, Holder: w.holder}
	_, ok, at, err := w.fenced(ctx, slot.Complete, func(tx *gorm.DB) (bool, error) {
		return true, tx.Create(&row).Error
	})
	if err != nil && at != 0 {
		// The commit failed: it may still have happened. Look.
		ok = w.slotCommitted(ctx, row)
	}
	e := history.Event{Kind: history.Write, Resource: chaos.ScheduleWorker, Lease: lease, Epoch: slot.Epoch, Accepted: ok, Time: at}
	if err != nil {
		e.Err = err.Error()
	}
	w.record(e)
	if !ok {
		return fmt.Errorf("complete slot %s: %w", slot.Time.Format(time.RFC3339Nano), cmpErr(err, errors.New("not committed")))
	}
	w.record(history.Event{Kind: history.SlotCompleted, Lease: lease, Slot: row.Slot, Epoch: slot.Epoch})
	return nil
}

// slotCommitted reports whether row is in chaos_slots, trying for
// checkFor while the database fails.
func (w *worker) slotCommitted(ctx context.Context, row chaos.SlotRow) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkFor)
	defer cancel()
	for try := 0; ; try++ {
		var n int64
		err := w.check[try%len(w.check)].WithContext(ctx).Model(&chaos.SlotRow{}).
			Where("slot = ? AND epoch = ? AND holder = ?", row.Slot, row.Epoch, row.Holder).Count(&n).Error
		if err == nil {
			return n > 0
		}
		if !sleep(ctx, 200*time.Millisecond) {
			w.log.Error("could not tell whether a failed slot completion happened", zap.Int64("slot", row.Slot), zap.Error(err))
			return false
		}
	}
}

// runSticky runs the sticky pool until ctx is done, calling Run again
// after an error.
func (w *worker) runSticky(ctx context.Context, p *coordination.Pool) {
	for {
		err := p.Run(ctx, w.partition, nil)
		if ctx.Err() != nil {
			return
		}
		w.log.Info("sticky pool", zap.Error(err))
		if !sleep(ctx, chaos.RetryInterval) {
			return
		}
	}
}

// partition works on one partition of the sticky pool: a fenced write
// every StickyEvery until the partition moves or the membership ends.
// a.Generation is the generation since which this member owns the
// partition.
func (w *worker) partition(ctx context.Context, a coordination.Assignment) error {
	ev := func(k history.Kind) history.Event {
		return history.Event{Kind: k, Pool: a.Key, Index: a.Index, Count: a.Count, Generation: a.Generation, Epoch: a.Epoch}
	}
	defer history.Term(ctx, w.record, ev(history.StickyStart), ev(history.StickyStop))()
	resource := fmt.Sprintf("sticky/%02d", a.Index)
	t := time.NewTicker(chaos.StickyEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		_, ok, at, err := w.fenced(ctx, a.Fence, func(tx *gorm.DB) (bool, error) {
			return true, tx.Create(&chaos.GrantRow{Resource: resource, Epoch: a.Generation, Holder: w.holder}).Error
		})
		e := history.Event{Kind: history.Write, Resource: resource, Pool: a.Key, Index: a.Index, Generation: a.Generation, Accepted: ok, Time: at}
		if err != nil {
			e.Err = err.Error()
		}
		w.record(e)
	}
}

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}
