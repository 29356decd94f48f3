package coordination

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/broadcast"
	"github.com/leasehold/leasehold/internal/ctxtime"
	"github.com/leasehold/leasehold/internal/store"
)

type runState int32

const (
	stateIdle runState = iota
	stateRunning
	stateStopped
)

// Coordinator hands out the elections, pools, keyed locks and semaphores
// of one process identity (see the package doc). Create it with New, start
// it with Run. It is safe for concurrent use.
type Coordinator struct {
	*shared
	id    identity.Identity
	store leaseStore
	done  chan struct{} // closed when Run returns
	state atomic.Int32  // a runState

	keeper      *keeper   // the session and its renewal
	terms       *termSet  // the terms held and what decides them
	fencer      *fencer   // fencing checks
	wakes       *waker    // the wake-ups: transport, listening, delivery
	admin       *Admin    // reads, resign requests and fence checks
	handles     *handles  // the handles given out, and the running pools
	pools       *poolDeps // what every pool is given
	directTurns chan struct{}
}

// shared is what every owner reads and nobody changes after New: the
// configuration, the holder string, the log, events, metrics, and the
// channels that say the coordinator is ready or closing.
type shared struct {
	cfg     Config
	holder  string
	log     *zap.Logger
	events  *broadcaster
	metrics *metrics
	tracer  trace.Tracer

	ready   chan struct{} // closed once the schema is in place and loops run
	closing chan struct{} // closed when shutdown begins
}

// closingNow reports whether shutdown has begun.
func (s *shared) closingNow() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// waitReady waits until the coordinator serves elections. It returns
// ErrClosed once shutdown has begun, or ctx's error.
func (s *shared) waitReady(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-s.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.closingNow() {
		return ErrClosed
	}
	return nil
}

// New returns a coordinator for the process identity id on db. It checks
// id and cfg and does no I/O: the database may be down until Run.
func New(db *gorm.DB, id identity.Identity, cfg Config) (*Coordinator, error) {
	cfg, err := checkNew(id, cfg)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, fmt.Errorf("%w: db is nil", ErrInvalidConfig)
	}
	st, err := store.Open(db, storeOptions(cfg))
	if err != nil {
		return nil, invalid(err)
	}
	return newCoordinator(st, id, cfg), nil
}

// storeOptions are the options of the store of a coordinator with cfg.
func storeOptions(cfg Config) store.Options {
	return store.Options{TablePrefix: cfg.TablePrefix, MaxConnections: cfg.MaxConnections, FailoverHold: cfg.TTL, Quiet: poolMemberRow}
}

// checkNew checks id and cfg as New does, and returns cfg with its
// defaults.
func checkNew(id identity.Identity, cfg Config) (Config, error) {
	if err := id.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// newCoordinator builds the owners, each with the slice of st it uses; st
// is nil for a coordinator built only for its Admin (tests).
func newCoordinator(st leaseStore, id identity.Identity, cfg Config) *Coordinator {
	holder := id.Holder()
	log := cfg.Logger.Named("leasehold").With(zap.String("identity", holder))
	m, err := newMetrics(cfg.MeterProvider)
	if err != nil {
		log.Warn("the meter provider refused an instrument; no metrics are recorded", zap.Error(err))
	}
	sh := &shared{
		cfg: cfg, holder: holder, log: log, metrics: m, tracer: newTracer(cfg.TracerProvider),
		events:  &broadcaster{b: broadcast.Broadcaster[Event]{Stamp: stampDropped}},
		ready:   make(chan struct{}),
		closing: make(chan struct{}),
	}
	c := &Coordinator{shared: sh, id: id, store: st, done: make(chan struct{}),
		directTurns: make(chan struct{}, max(1, cfg.MaxConnections-1))}
	c.keeper = newKeeper(sh, st)
	c.admin = &Admin{store: st, log: log, tracer: sh.tracer, ttl: cfg.TTL}
	c.fencer = &fencer{shared: sh, store: st, data: st, admin: c.admin, keeper: c.keeper}
	c.terms = newTermSet(sh, flooredOps{leaseOps: st, floored: st}, st, c.keeper, c.fencer)
	c.handles = newHandles(id.Instance)
	var ws wakeStore
	if st != nil {
		ws = st
	}
	c.wakes = newWaker(sh, ws, c.terms.woke, c.handles.woke)
	c.pools = &poolDeps{shared: sh, terms: c.terms, handles: c.handles, store: st, wakes: c.wakes}
	return c
}

// Holder returns the holder string this process writes into leases.
func (c *Coordinator) Holder() string { return c.holder }

// Config returns the configuration in effect, defaults filled in.
func (c *Coordinator) Config() Config { return c.cfg }

// Ready is closed once Run has the schema in place and serves elections.
func (c *Coordinator) Ready() <-chan struct{} { return c.ready }

// Done is closed when Run has returned.
func (c *Coordinator) Done() <-chan struct{} { return c.done }

// poke wakes a loop without blocking.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// jitter returns d plus a random 0-50% of d.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/2+1)
}

// maxPollJitter bounds the random part of a follower's poll interval.
const maxPollJitter = 25 * time.Millisecond

// pollJitter returns the wait between two campaign rounds for a poll
// interval d: d plus a random 0-5% of d, at most maxPollJitter.
func pollJitter(d time.Duration) time.Duration {
	return d + rand.N(min(d/20, maxPollJitter)+1)
}

// sleepCtx waits d or until ctx is done; it reports whether d passed.
var sleepCtx = ctxtime.Sleep
