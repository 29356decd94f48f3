// Command sample is a runnable service built on leasehold's workers
// package. One coordination.Coordinator holds the process's session and
// leases, and one workers.Host, run beside it, runs three workers on a
// shared SQL database:
//
//   - "cluster-report", a cluster singleton that logs a report every
//     second and writes it to sample_timeline;
//   - "ledger", a global singleton that appends a row to sample_ledger
//     every 200 ms in a fenced transaction;
//   - "orders", a partitioned worker whose members process the rows of
//     sample_orders with id % Count = Index, in fenced batches, logging
//     each order processed to sample_processing.
//
// The host's events (started-leading, stopped-leading,
// assignment-started, assignment-stopped) go to sample_timeline. Start
// three copies, kill the leader, and watch the others take over: see
// README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/pgnotify"
	"github.com/leasehold/leasehold/workers"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the database or the host failed
	exitUsage = 2 // bad flags or environment
)

// Waits between attempts when the database fails.
const (
	openRetry  = 500 * time.Millisecond // opening it…
	setupRetry = 2 * time.Second        // creating the sample's tables
)

// openAttempts bounds the attempts to open the database: a DSN that
// cannot work should fail the process rather than loop.
const openAttempts = 20

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program: it returns the exit status. It stops when ctx
// ends, after the workers returned and their leases were released. Logs
// and errors go to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "sample: %v\n", err)
		return exitUsage
	}
	// Everything written from here on has the DSN's passwords replaced,
	// the drivers' errors included: some quote their DSN.
	stderr = redactingWriter{w: stderr, driver: cfg.driver, dsn: cfg.dsn}
	id, err := identity.FromLookup(func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	})
	if err != nil {
		fmt.Fprintf(stderr, "sample: %v\n", err)
		return exitUsage
	}
	log := newLogger(cfg.logFormat, stderr).With(zap.String("node", id.Node), zap.String("cluster", id.Cluster))
	defer func() { _ = log.Sync() }()

	dsn := redactDSN(cfg.driver, cfg.dsn)
	db, err := openDB(ctx, cfg.driver, cfg.dsn, dsn, log)
	if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped before the database could be opened")
			return exitOK
		}
		log.Error("cannot open the database", zap.String("driver", cfg.driver), zap.String("dsn", dsn), zap.Error(err))
		return exitError
	}
	defer closeDB(db, log)

	s := &service{db: db, id: id, holder: id.Holder(), log: log, workDelay: cfg.workDelay}
	coordCfg := coordinationConfig(cfg, log)
	var tel *telemetry
	if cfg.httpAddr != "" && !cfg.seedOnly {
		if tel, err = newTelemetry(); err != nil {
			log.Error("cannot set up the metrics", zap.Error(err))
			return exitError
		}
		defer tel.shutdown(log)
		coordCfg.MeterProvider = tel.provider
	}
	// The coordinator holds this process's session and leases; the host
	// runs the workers on it. New checks the timing and does no I/O.
	coord, err := coordination.New(db, id, coordCfg)
	if errors.Is(err, coordination.ErrInvalidConfig) {
		fmt.Fprintf(stderr, "sample: invalid settings -ttl=%v -renew=%v -retry=%v (0 = library default) -wake-address=%q -wake-advertise=%q: %v\n",
			cfg.ttl, cfg.renew, cfg.retry, cfg.wakeAddr, strings.Join(cfg.wakeAdvertise, ","), err)
		return exitUsage
	}
	if err != nil {
		log.Error("cannot create the coordinator", zap.Error(err))
		return exitError
	}
	host, err := workers.NewHost(coord, workers.Config{},
		workers.ClusterSingleton("cluster-report", s.clusterReport),
		workers.GlobalSingleton("ledger", s.ledger),
		workers.GlobalPartitioned("orders", s.orders, coordination.PoolConfig{}),
	)
	if err != nil {
		log.Error("cannot create the workers host", zap.Error(err))
		return exitError
	}
	timing := coord.Config()
	log.Info("starting",
		zap.String("driver", cfg.driver), zap.String("dsn", dsn), zap.String("holder", s.holder),
		zap.Duration("ttl", timing.TTL), zap.Duration("renew", timing.RenewInterval),
		zap.Duration("retry", timing.RetryInterval), zap.Int("orders", cfg.orders),
		zap.Duration("work_delay", cfg.workDelay), zap.Bool("seed_only", cfg.seedOnly), zap.String("http", cfg.httpAddr))

	// The endpoints answer from here on: /healthz while the tables are
	// waited for, and /readyz once the coordinator runs.
	if tel != nil {
		srv, err := startHTTP(cfg.httpAddr, coord, tel, log)
		if err != nil {
			log.Error("cannot serve HTTP", zap.Error(err))
			return exitError
		}
		defer srv.stop()
	}
	if err := setupTables(ctx, db, cfg.orders, setupRetry, log); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped before the tables were ready")
			return exitOK
		}
		log.Error("cannot set up the sample tables", zap.Error(err))
		return exitError
	}
	if cfg.seedOnly {
		log.Info("tables ready; -seed-only given, exiting")
		return exitOK
	}
	return serve(ctx, s, coord, host)
}

// coordinationConfig returns the coordinator's settings for cfg. Without
// -wake-address and -wake-advertise, wake-ups on PostgreSQL go through
// LISTEN/NOTIFY, so that the copies need no port open to each other there;
// with either, they go over UDP as on MySQL and SQL Server, to the given
// addresses. SQLite ignores both.
func coordinationConfig(cfg config, log *zap.Logger) coordination.Config {
	c := coordination.Config{
		TTL: cfg.ttl, RenewInterval: cfg.renew, RetryInterval: cfg.retry, Logger: log,
		WakeAddress: cfg.wakeAddr, WakeAdvertise: cfg.wakeAdvertise,
	}
	if cfg.wakeAddr == "" && len(cfg.wakeAdvertise) == 0 {
		c.Notifications = pgnotify.New()
	}
	return c
}

// serve runs the coordinator and the host beside it until ctx ends, with
// the timeline writer beside them.
func serve(ctx context.Context, s *service, coord *coordination.Coordinator, host *workers.Host) int {
	// The subscription outlives ctx: the events of the shutdown (the
	// leases released) are recorded too. The channel closes when
	// host.Run returns.
	subCtx, unsubscribe := context.WithCancel(context.WithoutCancel(ctx))
	defer unsubscribe()
	events := host.Subscribe(subCtx, timelineBuffer)
	writeCtx, stopWriting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriting()
	tl := followTimeline(writeCtx, s, events)

	start := s.row(kindProcessStart, "", "started")
	if err := s.write(ctx, start); err != nil && ctx.Err() == nil {
		s.log.Warn("writing the timeline failed", zap.Error(err))
	}
	// The coordinator and the host run side by side, and stop together:
	// when ctx ends, the host's workers return and release their leases,
	// which the coordinator keeps renewing until then; when either fails,
	// the other is stopped.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return coord.Run(gctx) })
	g.Go(func() error { return host.Run(gctx) })
	err := g.Wait()

	// The events channel is closed now; let the writer finish what is
	// buffered, for at most timelineDrain.
	drain := time.AfterFunc(timelineDrain, stopWriting)
	<-tl.done
	drain.Stop()

	code, detail := exitOK, "stopped cleanly"
	if err != nil {
		code, detail = exitError, "stopped with an error: "+err.Error()
		s.log.Error("stopped with an error", zap.Error(err))
	}
	if werr := s.write(writeCtx, s.row(kindProcessStop, "", detail)); werr != nil {
		s.log.Warn("writing the timeline failed", zap.Error(werr))
	}
	s.log.Info("stopped", zap.Int("exit", code))
	return code
}

// newLogger returns a zap logger at Info level writing to w: a
// human-readable development-style console encoder, or JSON.
func newLogger(format string, w io.Writer) *zap.Logger {
	var enc zapcore.Encoder
	if format == "json" {
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		ec.EncodeDuration = zapcore.StringDurationEncoder
		enc = zapcore.NewJSONEncoder(ec)
	} else {
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(ec)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), zap.InfoLevel)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w))))
}

// openDB opens the database, trying openAttempts times, openRetry apart. It
// does not ping: a server that is down at start is waited for by the table
// setup and ridden out by the coordinator. Opening can still fail at once,
// as the SQLite drivers read the library version: with SQLITE_BUSY while
// another process puts a new file into WAL mode, for example.
func openDB(ctx context.Context, driver, dsn, redactedDSN string, log *zap.Logger) (*gorm.DB, error) {
	t := time.NewTimer(0)
	defer t.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		db, err := openGorm(driver, dsn)
		if err == nil {
			return db, nil
		}
		if attempt == openAttempts {
			return nil, fmt.Errorf("%d attempts failed, the last: %w", attempt, err)
		}
		log.Warn("opening the database failed; retrying", zap.String("driver", driver), zap.String("dsn", redactedDSN),
			zap.Int("attempt", attempt), zap.Duration("retry_in", openRetry), zap.Error(err))
		t.Reset(openRetry)
	}
}

// redactingWriter writes to w with the passwords of dsn replaced.
type redactingWriter struct {
	w           io.Writer
	driver, dsn string
}

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redactMessage(r.driver, r.dsn, string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// closeDB closes the database's connection pool.
func closeDB(db *gorm.DB, log *zap.Logger) {
	sqlDB, err := db.DB()
	if err != nil {
		return
	}
	if err := sqlDB.Close(); err != nil {
		log.Warn("closing the database failed", zap.Error(err))
	}
}
