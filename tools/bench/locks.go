package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/pgnotify"
)

// The locks section: keyed locks (coordination.Locks) in this process,
// on coordination's defaults but the bench's TTL and renew interval.
//
//   - uncontended acquire and release: Lock of a key nobody holds, then
//     Release;
//   - contended acquire and release: two coordinators, four goroutines
//     each, one key;
//   - handoff: from a Release to the Lock of the waiting process returning;
//   - LockHeld keys held at once: renewal statements per tick, their
//     round trip and, on PostgreSQL, their server time;
//   - LockKeys distinct keys locked and released: rows left in the table.

// renewCounter counts the renewal statements a coordinator's handle sends
// (Trace), with their round trips.
type renewCounter struct {
	// poke, when set, is called after each renewal (pgss.poke, which
	// reads its server time on PostgreSQL).
	poke     func(Stmt)
	mu       sync.Mutex
	renewals []Stmt
}

// add is Trace's callback.
func (l *renewCounter) add(s Stmt) {
	if !s.Renew || s.Err != nil {
		return
	}
	l.mu.Lock()
	l.renewals = append(l.renewals, s)
	l.mu.Unlock()
	if l.poke != nil {
		l.poke(s)
	}
}

// between returns the round trips of the renewals of session that began
// in [from, to), and how many renewals of another row began meanwhile:
// the advertisement of the process's peer wake-ups
// where it has them, kept live every 3/4 TTL whatever it holds.
// A renewal is told by its arguments, not by the SQL text gorm's logger
// would print, which on PostgreSQL shows them shifted by the driver's
// statement option.
func (l *renewCounter) between(from, to time.Time, session string) (out []time.Duration, others int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.renewals {
		switch {
		case r.Start.Before(from) || !r.Start.Before(to):
		case slices.Contains(r.Args, session):
			out = append(out, r.Dur)
		default:
			others++
		}
	}
	return out, others
}

func runLocks(ctx context.Context, r *runner, tg *target) *Table {
	t := &Table{Section: "locks", Dialect: tg.dialect, Title: "keyed locks: acquire, handoff, many held keys, rows after many keys"}
	if err := tg.migrate(ctx); err != nil {
		t.fail("migrate", err.Error(), "ok")
		return t
	}
	db, err := tg.open()
	if err != nil {
		t.fail("open", err.Error(), "ok")
		return t
	}
	defer closeDB(db)
	// Coordinator A runs on a handle of its own, whose statements the
	// counter traces.
	dbA, err := tg.open()
	if err != nil {
		t.fail("open", err.Error(), "ok")
		return t
	}
	defer closeDB(dbA)
	counter := &renewCounter{}
	if err := Trace(dbA, counter.add); err != nil {
		t.fail("trace", err.Error(), "")
		return t
	}
	var pg *pgss
	if tg.dialect == "postgres" {
		if pg, err = newPGSS(tg.dsn); err != nil {
			t.fail("pg_stat_statements", err.Error(), "readable")
			return t
		}
		defer pg.close()
		counter.poke = pg.poke
	}
	cfg := coordination.Config{TTL: TTL, RenewInterval: RenewInterval, ShutdownTimeout: ShutdownTimeout, Notifications: pgnotify.New()}
	a, stopA, err := startCoord(ctx, dbA, "bench-locks-a", cfg)
	if err != nil {
		t.fail("coordinator", err.Error(), "ready")
		return t
	}
	defer stopA()
	b, stopB, err := startCoord(ctx, db, "bench-locks-b", cfg)
	if err != nil {
		t.fail("coordinator", err.Error(), "ready")
		return t
	}
	defer stopB()
	la, _ := a.Locks(coordination.GlobalScope, "bench")
	lb, _ := b.Locks(coordination.GlobalScope, "bench")

	postgres, sqlite := tg.dialect == "postgres", tg.dialect == "sqlite"
	lockUncontended(ctx, t, la, postgres)
	lockContended(ctx, t, la, lb)
	lockHandoff(ctx, t, la, lb, postgres || sqlite)
	lockHeld(ctx, t, db, la, counter, pg, r.o.LockHeld)
	lockRowsAfter(ctx, t, a, la, r.o.LockKeys)
	return t
}

// startCoord runs a coordinator until the returned stop.
func startCoord(ctx context.Context, db *gorm.DB, node string, cfg coordination.Config) (*coordination.Coordinator, func(), error) {
	id, err := identity.New(node, Cluster)
	if err != nil {
		return nil, nil, err
	}
	c, err := coordination.New(db, id, cfg)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() { _ = c.Run(cctx) }()
	select {
	case <-c.Ready():
	case <-time.After(time.Minute):
		cancel()
		return nil, nil, fmt.Errorf("%s not ready within a minute", node)
	}
	return c, func() { cancel(); <-c.Done() }, nil
}

// lockUncontended measures Lock of keys nobody holds, and their Release
// (which deletes the key's row).
func lockUncontended(ctx context.Context, t *Table, l *coordination.Locks, pg bool) {
	var ds, rs []time.Duration
	for i := range 500 {
		began := time.Now()
		lease, err := l.Lock(ctx, fmt.Sprintf("free-%d", i))
		if err != nil {
			t.fail("uncontended acquire p50 / p99", err.Error(), "")
			return
		}
		ds = append(ds, time.Since(began))
		began = time.Now()
		if err := lease.Release(ctx); err != nil {
			t.fail("uncontended release p50 / p99", err.Error(), "")
			return
		}
		rs = append(rs, time.Since(began))
	}
	s, p99, _ := p50p99(ds)
	if pg {
		t.add("uncontended acquire p50 / p99", s, "p99 <= 5ms", p99 <= 5*time.Millisecond)
	} else {
		t.info("uncontended acquire p50 / p99", s)
	}
	s, _, _ = p50p99(rs)
	t.info("uncontended release p50 / p99", s)
}

// lockContended measures Lock of one key that eight goroutines of two
// processes want, each holding it for a millisecond.
func lockContended(ctx context.Context, t *Table, la, lb *coordination.Locks) {
	var mu sync.Mutex
	var ds, rs []time.Duration
	var failed atomic.Value
	var wg sync.WaitGroup
	for i := range 8 {
		l := la
		if i%2 == 1 {
			l = lb
		}
		wg.Go(func() {
			for range 25 {
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				began := time.Now()
				lease, err := l.Lock(wctx, "hot")
				cancel()
				if err != nil {
					failed.Store(err.Error())
					return
				}
				d := time.Since(began)
				time.Sleep(time.Millisecond)
				began = time.Now()
				if err := lease.Release(ctx); err != nil {
					failed.Store(err.Error())
					return
				}
				r := time.Since(began)
				mu.Lock()
				ds = append(ds, d)
				rs = append(rs, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(string); ok {
		t.fail("contended acquire p50 / p99", err, "")
		return
	}
	s, _, _ := p50p99(ds)
	t.info("contended acquire p50 / p99 (8 goroutines, 2 processes, 1ms holds)", s)
	s, _, _ = p50p99(rs)
	t.info("contended release p50 / p99 (a waiter is woken)", s)
}

// lockHandoff measures from a Release to the Lock of the process waiting
// for the key returning.
func lockHandoff(ctx context.Context, t *Table, la, lb *coordination.Locks, target bool) {
	var ds []time.Duration
	for i := range 50 {
		key := fmt.Sprintf("handoff-%d", i)
		held, err := la.Lock(ctx, key)
		if err != nil {
			t.fail("handoff after release p50 / p99", err.Error(), "")
			return
		}
		got := make(chan time.Time, 1)
		waiting := make(chan struct{})
		go func() {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			close(waiting)
			lease, err := lb.Lock(wctx, key)
			at := time.Now()
			if err == nil {
				_ = lease.Release(ctx)
			}
			got <- at
		}()
		<-waiting
		time.Sleep(50 * time.Millisecond) // the waiter's first round read the key held
		released := time.Now()
		_ = held.Release(ctx)
		ds = append(ds, (<-got).Sub(released))
	}
	s, p99, _ := p50p99(ds)
	if target {
		t.add("handoff after release p50 / p99", s, "p99 <= 10ms", p99 <= 10*time.Millisecond)
		return
	}
	t.info("handoff after release p50 / p99", s)
}

// lockHeld holds n keys at once and counts the renewal statements; on
// PostgreSQL (pg) it reads their server time too, against the renew
// section's target for 10,000 leases: the keys ride the session row, so
// the renewal is the same statement whatever is held.
func lockHeld(ctx context.Context, t *Table, db *gorm.DB, l *coordination.Locks, counter *renewCounter, pg *pgss, n int) {
	began := time.Now()
	leases := make([]*coordination.Lease, 0, n)
	const wave = 5000
	for from := 0; from < n; from += wave {
		part := make([]*coordination.Lease, min(wave, n-from))
		var wg sync.WaitGroup
		var failed atomic.Value
		for i := range part {
			wg.Go(func() {
				wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				lease, err := l.Lock(wctx, fmt.Sprintf("held-%d", from+i))
				if err != nil {
					failed.Store(err.Error())
					return
				}
				part[i] = lease
			})
		}
		wg.Wait()
		if err, ok := failed.Load().(string); ok {
			t.fail(fmt.Sprintf("%d held keys", n), err, "")
			return
		}
		leases = append(leases, part...)
	}
	t.info(fmt.Sprintf("time to take %d keys", n), fmtDur(time.Since(began)))
	var session string
	if err := db.WithContext(ctx).Raw("SELECT session_id FROM leasehold_leases WHERE name = ?", leases[0].Key()).Scan(&session).Error; err != nil || session == "" {
		t.fail("the session of the held keys", fmt.Sprint(session, err), "")
		return
	}
	from := time.Now()
	time.Sleep(3*RenewInterval + RenewInterval/2)
	to := time.Now()
	took, others := counter.between(from, to, session)
	lost := 0
	for _, lease := range leases {
		if !lease.Valid() {
			lost++
		}
	}
	perTick := float64(len(took)) / 3.5
	t.add(fmt.Sprintf("renewal statements per tick, %d held keys", n), fmt.Sprintf("%.1f (%d in 3.5 ticks)", perTick, len(took)), "1", len(took) >= 3 && len(took) <= 4)
	if s, _, err := p50p99(took); err == nil {
		t.info("renewal statement round trip p50 / p99", s)
	}
	if others > 0 {
		t.info("peer wake-up advertisement renewals meanwhile (every 3/4 TTL, whatever is held)", fmt.Sprint(others))
	}
	if pg != nil {
		server, _ := pg.between(from, to)
		if s, p99, err := p50p99(server); err == nil {
			t.add(fmt.Sprintf("renewal server time p50 / p99, %d held keys", n), s, "p99 <= "+fmtDur(serverTarget), p99 <= serverTarget)
		} else {
			t.fail(fmt.Sprintf("renewal server time, %d held keys", n), "no pg_stat_statements samples", "")
		}
	}
	t.add("keys lost", fmt.Sprint(lost), "0", lost == 0)
	relBegan := time.Now()
	var wg sync.WaitGroup
	for _, lease := range leases {
		wg.Go(func() { _ = lease.Release(ctx) })
	}
	wg.Wait()
	t.info(fmt.Sprintf("time to release %d keys", n), fmtDur(time.Since(relBegan)))
}

// lockRowsAfter locks and releases n distinct keys, in waves, and counts
// the rows left.
func lockRowsAfter(ctx context.Context, t *Table, c *coordination.Coordinator, l *coordination.Locks, n int) {
	began := time.Now()
	const wave = 5000
	for from := 0; from < n; from += wave {
		var wg sync.WaitGroup
		var failed atomic.Value
		for i := from; i < min(from+wave, n); i++ {
			wg.Go(func() {
				wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				lease, err := l.Lock(wctx, fmt.Sprintf("distinct-%d", i))
				if err != nil {
					failed.Store(err.Error())
					return
				}
				_ = lease.Release(ctx)
			})
		}
		wg.Wait()
		if err, ok := failed.Load().(string); ok {
			t.fail(fmt.Sprintf("rows after %d distinct keys", n), err, "")
			return
		}
	}
	infos, err := c.Admin().Leases(ctx)
	if err != nil {
		t.fail(fmt.Sprintf("rows after %d distinct keys", n), err.Error(), "")
		return
	}
	locks, floors := 0, 0
	for _, info := range infos {
		switch {
		case strings.HasPrefix(info.Key, "lock|"):
			locks++
		case strings.HasPrefix(info.Key, "lockfloor|"):
			floors++
		}
	}
	t.add(fmt.Sprintf("lock rows after %d distinct keys used and released", n), fmt.Sprintf("%d (+%d floor rows)", locks, floors),
		"0 (+<= 64)", locks == 0 && floors <= 64)
	t.info(fmt.Sprintf("time for %d distinct keys", n), fmtDur(time.Since(began)))
}
