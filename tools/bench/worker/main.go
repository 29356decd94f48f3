// Command worker is one process of the scale benchmark (make bench): a
// coordinator that runs either N elections, each with leader work that
// only waits for its context (or, with -units, does units of work while
// its term is valid), or one member of a pool whose work waits for its
// context. It writes bench.Report lines as JSON to stdout and stops
// gracefully on SIGTERM or SIGINT.
//
//	worker -driver postgres -dsn DSN -node w1 -elections 100
//	worker -driver sqlite -dsn DSN -node w1 -pool orders
//	worker -driver postgres -dsn DSN -node c1 -prefix handoff -elections 1 -defaults -terms
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/pgnotify"
	"github.com/leasehold/leasehold/tools/bench"
)

// exitBound bounds the wait for the elections and the coordinator to
// return after the signal; the runner's own bound is longer.
const exitBound = 60 * time.Second

// termAt is when the signal arrived (UnixNano), 0 before: statements
// that start from then on count as shutdown statements.
var termAt atomic.Int64

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		// Noted before anything is cancelled, so that no shutdown
		// statement can start before it.
		termAt.Store(time.Now().UnixNano())
		cancel()
	}()
	err := run(ctx)
	signal.Stop(sig)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench worker: %v\n", err)
		os.Exit(1)
	}
}

// out writes the report lines.
type out struct {
	mu    sync.Mutex
	enc   *json.Encoder
	began time.Time
}

func (o *out) send(r bench.Report) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r.AtMS = time.Since(o.began).Milliseconds()
	_ = o.enc.Encode(r)
}

func run(ctx context.Context) error {
	began := time.Now()
	driver := flag.String("driver", "", "database driver (dbopen names)")
	dsn := flag.String("dsn", "", "database DSN")
	node := flag.String("node", "w", "node name of this process; also the prefix of its election names unless -prefix is given")
	elections := flag.Int("elections", 0, "run this many elections")
	prefix := flag.String("prefix", "", "prefix of the election names (default: -node); processes given the same one campaign for the same elections")
	poolName := flag.String("pool", "", "run one member of this pool")
	ttl := flag.Duration("ttl", bench.TTL, "lease TTL")
	renew := flag.Duration("renew", bench.RenewInterval, "renew interval")
	retry := flag.Duration("retry", 0, "retry interval (0: coordination's default for the TTL)")
	defaults := flag.Bool("defaults", false, "run with coordination's zero Config, as the README's snippet (TTL 15s, RetryInterval 2s, peer wake-ups on PostgreSQL); -ttl, -renew and -retry are ignored")
	terms := flag.Bool("terms", false, "report the start and the end of every term (\"elected\", \"ended\")")
	units := flag.Duration("units", 0, "leader work does one unit every this long while its term is valid, and reports each (\"unit\"); 0: it only waits for its context")
	flag.Parse()
	if *driver == "" || *dsn == "" {
		return errors.New("-driver and -dsn are required")
	}
	if (*elections > 0) == (*poolName != "") {
		return fmt.Errorf("give exactly one of -elections (%d) and -pool (%q)", *elections, *poolName)
	}
	if *prefix == "" {
		*prefix = *node
	}
	cfg := coordination.Config{TTL: *ttl, RenewInterval: *renew, RetryInterval: *retry, ShutdownTimeout: bench.ShutdownTimeout}
	if *defaults {
		cfg = coordination.Config{} // as the README's snippet: peer wake-ups on PostgreSQL too
	} else {
		cfg.Notifications = pgnotify.New() // LISTEN/NOTIFY on PostgreSQL
	}
	o := &out{enc: json.NewEncoder(os.Stdout), began: began}

	db, err := dbopen.Open(*driver, *dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer func() { _ = sqlDB.Close() }()

	var (
		stmts, afterTerm atomic.Int64
		mu               sync.Mutex
		renewUS          []int64
	)
	if err := bench.Trace(db, func(s bench.Stmt) {
		stmts.Add(1)
		if t := termAt.Load(); t != 0 && s.Start.UnixNano() >= t {
			afterTerm.Add(1)
		}
		if s.Renew {
			mu.Lock()
			renewUS = append(renewUS, s.Dur.Microseconds())
			mu.Unlock()
		}
	}); err != nil {
		return err
	}

	id, err := identity.New(*node, bench.Cluster)
	if err != nil {
		return err
	}
	c, err := coordination.New(db, id, cfg)
	if err != nil {
		return err
	}
	var ev bench.EventCounts
	// The subscription outlives ctx, to count the events of the shutdown.
	sctx, unsubscribe := context.WithCancel(context.WithoutCancel(ctx))
	defer unsubscribe()
	events := c.Subscribe(sctx, 1<<16)
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		for e := range events {
			ev.Add(e)
		}
	}()

	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()
	var (
		runErr   string
		runErrMu sync.Mutex
	)
	select {
	case <-c.Ready():
	case err := <-runDone:
		return fmt.Errorf("coordinator: %w", err)
	}

	var held, unitsDone atomic.Int64
	var work sync.WaitGroup
	if *elections > 0 {
		var once sync.Once
		n := *elections
		fn := func(ctx context.Context, l *coordination.Lease) error {
			if *terms {
				o.send(bench.Report{Type: "elected", Epoch: l.Epoch(), WallNS: time.Now().UnixNano()})
				defer func() { o.send(bench.Report{Type: "ended", Epoch: l.Epoch(), WallNS: time.Now().UnixNano()}) }()
			}
			if held.Add(1) == int64(n) {
				once.Do(func() { o.send(bench.Report{Type: "held", Held: n, Want: n}) })
			}
			if *units > 0 {
				doUnits(ctx, l, *units, o, &unitsDone)
			} else {
				<-ctx.Done()
			}
			held.Add(-1)
			return nil
		}
		for i := range n {
			e, err := c.Election(coordination.GlobalScope, fmt.Sprintf("%s-%06d", *prefix, i))
			if err != nil {
				return err
			}
			work.Go(func() { _ = e.Run(ctx, fn, nil) })
		}
	} else {
		p, err := c.Pool(coordination.GlobalScope, *poolName, coordination.PoolConfig{})
		if err != nil {
			return err
		}
		work.Go(func() {
			_ = p.Run(ctx, func(ctx context.Context, a coordination.Assignment) error {
				o.send(bench.Report{Type: "assigned", Index: a.Index, Count: a.Count, Generation: a.Generation, WallNS: time.Now().UnixNano()})
				<-ctx.Done()
				return nil
			}, nil)
		})
	}
	o.send(bench.Report{Type: "ready", WallNS: time.Now().UnixNano()})

	stats := func(typ string) bench.Report {
		mu.Lock()
		r := renewUS
		renewUS = nil
		mu.Unlock()
		rep := ev.Report()
		rep.Type = typ
		rep.Held = int(held.Load())
		rep.Want = *elections
		rep.Stmts = stmts.Load()
		rep.RenewUS = r
		rep.OpenConns = sqlDB.Stats().OpenConnections
		return rep
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			o.send(stats("stats"))
		}
	}
	term := time.Unix(0, termAt.Load())

	finished := make(chan struct{})
	go func() {
		work.Wait()
		if err := <-runDone; err != nil {
			runErrMu.Lock()
			runErr = fmt.Sprintf("coordinator: %v", err)
			runErrMu.Unlock()
		}
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(exitBound):
		runErrMu.Lock()
		runErr = fmt.Sprintf("the elections and the coordinator had not returned %v after the signal", exitBound)
		runErrMu.Unlock()
	}
	unsubscribe()
	select {
	case <-evDone:
	case <-time.After(time.Second):
	}
	rep := stats("exit")
	rep.StmtsAfterTerm = afterTerm.Load()
	rep.TermToDoneMS = time.Since(term).Milliseconds()
	runErrMu.Lock()
	rep.Err = runErr
	runErrMu.Unlock()
	o.send(rep)
	return nil
}

// doUnits is leader work made of units, one every interval: before each,
// Lease.Valid (which reads the clock itself) must report true, and the
// unit is then done at once, by reporting it with its instant. Once Valid
// reports false no unit starts: the work waits for the term's context,
// which the coordinator ends.
func doUnits(ctx context.Context, l *coordination.Lease, every time.Duration, o *out, done *atomic.Int64) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !l.Valid() {
			<-ctx.Done()
			return
		}
		o.send(bench.Report{Type: "unit", Epoch: l.Epoch(), Unit: done.Add(1), WallNS: time.Now().UnixNano()})
	}
}
