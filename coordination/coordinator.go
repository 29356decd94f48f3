package coordination

import (
	"github.com/leasehold/leasehold/internal/ctxtime"

	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/broadcast"
	"github.com/leasehold/leasehold/internal/store"
)

// leaseStore is what the coordinator needs from the database. The GORM
// implementation is internal/store; tests wrap it to inject faults.
type leaseStore interface {
	Dialect() string
	EnsureRow(ctx context.Context, name string) error
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (int64, bool, error)
	Renew(ctx context.Context, holder string, terms []store.Term, ttl time.Duration) ([]store.Term, error)
	Release(ctx context.Context, holder string, terms []store.Term) (int64, error)
	Get(ctx context.Context, names []string) ([]store.Row, error)
	List(ctx context.Context, prefix string) ([]store.Row, error)
	Fence(tx *gorm.DB, name string) (store.Row, bool, error)
	SerializesWriters() bool
	RenewIn(tx *gorm.DB, holder string, terms []store.Term, ttl time.Duration) (int64, error)
	SetData(ctx context.Context, holder string, t store.Term, data string) (bool, error)
	Publish(ctx context.Context, name string, from int64, data string) (bool, error)
	PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error)
	Migrate(ctx context.Context, lockTimeout time.Duration) ([]int, error)
	CheckSchema(ctx context.Context) error
}

var _ leaseStore = (*store.Store)(nil)

// migrateTimeout bounds one migration attempt on start, lock wait included.
const migrateTimeout = 30 * time.Second

type runState int

const (
	stateIdle runState = iota
	stateRunning
	stateStopped
)

// Coordinator hands out named elections for one process identity and keeps
// every lease it holds alive with one renewal statement per tick. Create it
// with New, start it with Run. It is safe for concurrent use.
type Coordinator struct {
	cfg    Config
	id     identity.Identity
	holder string
	store  leaseStore
	log    *zap.Logger
	events broadcaster

	ready   chan struct{} // closed once the schema is in place and loops run
	closing chan struct{} // closed when shutdown begins
	done    chan struct{} // closed when Run returns

	renewWake    chan struct{}
	campaignWake chan struct{}

	mu          sync.Mutex
	state       runState
	leaseParent context.Context
	held        map[string]*Lease
	releasing   int // Release calls between leaving held and their statement's end
	campaigns   map[string]*campaign
	elections   map[string]*Election

	// afterRenew, when set by tests, is called after every renewal attempt
	// with the number of terms, the number lost and the error.
	afterRenew func(terms, lost int, err error)
}

// campaign is one waiting Campaign call.
type campaign struct {
	e      *Election
	result chan *Lease // buffered 1: the loop never blocks on it
}

// New returns a coordinator for the process identity id on db. It checks
// id and cfg and does no I/O: the database may be down until Run.
func New(db *gorm.DB, id identity.Identity, cfg Config) (*Coordinator, error) {
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, fmt.Errorf("%w: db is nil", ErrInvalidConfig)
	}
	st, err := store.New(db, cfg.TablePrefix)
	if err != nil {
		return nil, err
	}
	return newCoordinator(st, id, cfg), nil
}

func newCoordinator(st leaseStore, id identity.Identity, cfg Config) *Coordinator {
	holder := id.Holder()
	return &Coordinator{
		cfg:          cfg,
		id:           id,
		holder:       holder,
		store:        st,
		log:          cfg.Logger.Named("leasehold").With(zap.String("identity", holder)),
		ready:        make(chan struct{}),
		closing:      make(chan struct{}),
		done:         make(chan struct{}),
		renewWake:    make(chan struct{}, 1),
		campaignWake: make(chan struct{}, 1),
		held:         make(map[string]*Lease),
		campaigns:    make(map[string]*campaign),
		elections:    make(map[string]*Election),
		events:       broadcaster{b: broadcast.Broadcaster[Event]{Stamp: stampDropped}},
	}
}

// Identity returns the process identity.
func (c *Coordinator) Identity() identity.Identity { return c.id }

// Holder returns the holder string this process writes into leases.
func (c *Coordinator) Holder() string { return c.holder }

// Config returns the configuration in effect, defaults filled in.
func (c *Coordinator) Config() Config { return c.cfg }

// Ready is closed once Run has the schema in place and serves elections.
func (c *Coordinator) Ready() <-chan struct{} { return c.ready }

// Done is closed when Run has returned.
func (c *Coordinator) Done() <-chan struct{} { return c.done }

// Run migrates the schema (unless disabled), then serves elections and
// renews held leases until ctx is cancelled. It blocks, so it composes
// with errgroup.
//
// A database that is unreachable at start or later never makes Run fail:
// it logs, retries with backoff and recovers when the database returns.
// Run returns an error only for a schema it must not fix (ErrSchemaMissing
// with DisableAutoMigrate) or when called twice.
//
// On cancellation, Run cancels every lease context, stops campaigning and
// keeps renewing until the work under each lease has returned and released
// it, for at most ShutdownTimeout. It then returns nil.
func (c *Coordinator) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.state != stateIdle {
		c.mu.Unlock()
		return ErrAlreadyRunning
	}
	c.state = stateRunning
	c.leaseParent = context.WithoutCancel(ctx)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.state = stateStopped
		c.mu.Unlock()
		c.events.close()
		close(c.done)
	}()

	if err := c.prepare(ctx); err != nil {
		c.beginShutdown()
		return err
	}
	if ctx.Err() != nil {
		c.beginShutdown()
		return nil
	}
	c.log.Info("coordinator running", zap.String("dialect", c.store.Dialect()),
		zap.Duration("ttl", c.cfg.TTL), zap.Duration("renew_interval", c.cfg.RenewInterval),
		zap.Duration("retry_interval", c.cfg.RetryInterval), zap.Duration("margin", c.cfg.Margin))
	close(c.ready)

	var wg sync.WaitGroup
	wg.Go(func() { c.campaignLoop(ctx) })
	c.renewLoop(ctx)
	wg.Wait()
	c.log.Info("coordinator stopped")
	return nil
}

// prepare brings the schema in place, retrying while the database is
// unreachable.
func (c *Coordinator) prepare(ctx context.Context) error {
	for failures := 1; ; failures++ {
		opCtx, cancel := context.WithTimeout(ctx, migrateTimeout)
		var err error
		if c.cfg.DisableAutoMigrate {
			err = c.store.CheckSchema(opCtx)
		} else {
			var applied []int
			applied, err = c.store.Migrate(opCtx, migrateTimeout)
			if len(applied) > 0 {
				c.log.Info("migrated coordination schema", zap.Ints("versions", applied))
			}
		}
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, store.ErrSchemaMissing) {
			c.log.Error("coordination schema missing", zap.Error(err))
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := c.backoff(failures)
		c.log.Warn("database not ready; retrying", zap.Error(err), zap.Duration("retry_in", wait))
		c.events.emit(Event{Kind: EventError, Err: err})
		if !sleepCtx(ctx, wait) {
			return nil
		}
	}
}

// beginShutdown stops campaigning and cancels every lease context.
func (c *Coordinator) beginShutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closing:
		return
	default:
	}
	close(c.closing)
	clear(c.campaigns)
	for _, l := range c.held {
		l.cancel(ErrClosed)
	}
}

// poke wakes a loop without blocking.
func (c *Coordinator) poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// jitter returns d plus a random 0-50% of d.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/2+1)
}

// backoff returns the wait after the n-th consecutive failure: 100ms
// doubling up to RetryInterval, each drawn at random from its upper half.
func (c *Coordinator) backoff(n int) time.Duration {
	d := c.cfg.RetryInterval
	if n < 16 {
		d = min(d, 100*time.Millisecond<<(n-1))
	}
	return max(d/2+rand.N(d/2+1), time.Millisecond)
}

// sleepCtx waits d or until ctx is done; it reports whether d passed.
var sleepCtx = ctxtime.Sleep

// heldTerms returns the terms to renew, sorted by name.
func (c *Coordinator) heldTerms() ([]store.Term, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	terms := make([]store.Term, 0, len(c.held))
	var earliest time.Time
	for _, l := range c.held {
		terms = append(terms, store.Term{Name: l.name, Epoch: l.epoch})
		if earliest.IsZero() || l.deadline.Before(earliest) {
			earliest = l.deadline
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].Name < terms[j].Name })
	return terms, earliest
}

// renewLoop renews every held lease with one statement per tick, retries
// failures with backoff, and runs the bounded drain on shutdown. It never
// waits on campaign statements, which run in their own goroutine.
func (c *Coordinator) renewLoop(ctx context.Context) {
	io := context.WithoutCancel(ctx)
	timer := time.NewTimer(c.cfg.RenewInterval)
	defer timer.Stop()
	done := ctx.Done()
	var drain <-chan time.Time
	failures := 0
	for {
		select {
		case <-done:
			done = nil
			c.beginShutdown()
			t := time.NewTimer(c.cfg.ShutdownTimeout)
			defer t.Stop()
			drain = t.C
			if c.heldCount() == 0 {
				return
			}
			continue
		case <-drain:
			c.abandon()
			return
		case <-c.renewWake:
			if done == nil && c.heldCount() == 0 {
				return
			}
			continue
		case <-timer.C:
		}
		switch c.renewOnce(io) {
		case renewed:
			failures = 0
			timer.Reset(c.cfg.RenewInterval)
		case renewedInFences:
			// Try the statement again, early enough that its wait and a
			// read of the rows still fit before the earliest deadline.
			failures = 0
			timer.Reset(min(c.cfg.RenewInterval, c.halfTrustLeft()))
		default:
			failures++
			timer.Reset(c.backoff(failures))
		}
	}
}

// heldCount counts the leases still to be renewed or being released:
// the drain ends when it reaches zero.
func (c *Coordinator) heldCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held) + c.releasing
}

// renewOutcome is what one renewal attempt achieved.
type renewOutcome int

const (
	renewFailed     renewOutcome = iota // retry after a backoff
	renewed                             // the statement ran: next tick after RenewInterval
	renewedInFences                     // the statement could not write, but fenced transactions renewed every term
)

// renewOnce sends one renewal for every held lease.
func (c *Coordinator) renewOnce(ctx context.Context) renewOutcome {
	terms, earliest := c.heldTerms()
	if len(terms) == 0 {
		return renewed
	}
	start := time.Now()
	timeout := min(c.cfg.RenewInterval, earliest.Sub(start))
	if timeout <= 0 {
		// The earliest deadline has passed; its timer ends that term. Try
		// again shortly for the others.
		return renewFailed
	}
	serial := c.store.SerializesWriters()
	var stopWatch func() bool
	if serial {
		stopWatch = c.watchRenewal(ctx, terms)
	}
	opCtx, cancel := context.WithTimeout(ctx, timeout)
	lost, err := c.store.Renew(opCtx, c.holder, terms, c.cfg.TTL)
	cancel()
	covered := false
	if serial {
		covered = stopWatch()
	}
	if c.afterRenew != nil {
		defer c.afterRenew(len(terms), len(lost), err)
	}
	if err != nil {
		if serial && (c.trustFromRows(ctx, terms) || covered) {
			c.log.Debug("renewal waited for a writer; fenced transactions renewed every held lease",
				zap.Error(err), zap.Int("leases", len(terms)))
			return renewedInFences
		}
		c.log.Warn("renewal failed; retrying until the trust deadline", zap.Error(err),
			zap.Int("leases", len(terms)), zap.Duration("trust_left", time.Until(earliest)))
		c.events.emit(Event{Kind: EventError, Err: fmt.Errorf("renew %d leases: %w", len(terms), err)})
		return renewFailed
	}
	c.applyRenew(terms, lost, start)
	return renewed
}

// applyRenew moves the trust deadline of every renewed term to start +
// TTL - Margin and ends the terms the database no longer shows as ours.
func (c *Coordinator) applyRenew(terms, lost []store.Term, start time.Time) {
	isLost := make(map[store.Term]bool, len(lost))
	for _, t := range lost {
		isLost[t] = true
	}
	deadline := start.Add(c.cfg.TTL - c.cfg.Margin)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, t := range terms {
		l := c.held[t.Name]
		if l == nil || l.epoch != t.Epoch || l.state != stateHeld {
			continue // released or lost while the statement ran
		}
		switch {
		case isLost[t]:
			l.confirmedLost = true
			c.loseLocked(l, fmt.Errorf("%w: the database shows another holder or epoch, or the lease expired", ErrLeaseLost))
		case !now.Before(l.deadline):
			// The renewal came back after the trust deadline. The term is
			// over even though the database extended it; Release will give
			// the row back.
			c.loseLocked(l, fmt.Errorf("%w: trust deadline passed before the renewal completed", ErrLeaseLost))
		case deadline.After(l.deadline):
			l.deadline = deadline
			l.timer.Reset(deadline.Sub(now))
		}
	}
}

// abandon gives up on terms whose work did not return within the
// shutdown timeout. They are not released: the work may still be acting.
func (c *Coordinator) abandon() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.held {
		err := fmt.Errorf("%w: leader work did not return within ShutdownTimeout (%v); the lease is not released and expires after TTL (%v)",
			ErrClosed, c.cfg.ShutdownTimeout, c.cfg.TTL)
		c.log.Error("leader work still running at shutdown timeout", zap.String("lease", l.name),
			zap.Int64("epoch", l.epoch), zap.Error(err))
		l.state = stateLost
		l.timer.Stop()
		delete(c.held, l.name)
		c.events.emit(Event{Kind: EventLost, Lease: l.name, Holder: c.holder, Epoch: l.epoch, Err: err})
	}
}

// campaignLoop polls the leases this process campaigns for, all with one
// read, and acquires those that are free or expired.
func (c *Coordinator) campaignLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.campaignWake:
		case <-timer.C:
		}
		names := c.campaignNames()
		if len(names) > 0 {
			c.pollOnce(ctx, names)
		}
		timer.Reset(jitter(c.cfg.RetryInterval))
	}
}

func (c *Coordinator) campaignNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.campaigns))
	for n := range c.campaigns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// pollOnce reads the campaigned leases and tries to acquire the ones
// that are free, expired or left over from an earlier term of ours.
func (c *Coordinator) pollOnce(ctx context.Context, names []string) {
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.RenewInterval)
	defer cancel()
	rows, err := c.store.Get(opCtx, names)
	if err != nil {
		c.campaignError("read leases", "", err)
		return
	}
	byName := make(map[string]store.Row, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	for _, name := range names {
		r, exists := byName[name]
		c.observe(name, r, exists)
		if exists && r.Live() && r.Holder != c.holder {
			continue
		}
		if !exists {
			if err := c.store.EnsureRow(opCtx, name); err != nil {
				c.campaignError("create lease row", name, err)
				continue
			}
		}
		start := time.Now()
		epoch, ok, err := c.store.Acquire(opCtx, name, c.holder, c.cfg.TTL)
		if err != nil {
			c.campaignError("acquire", name, err)
			continue
		}
		if ok {
			c.grant(name, epoch, start)
		}
	}
}

func (c *Coordinator) campaignError(op, name string, err error) {
	if errors.Is(err, context.Canceled) {
		return // shutting down
	}
	err = fmt.Errorf("%s: %w", op, err)
	c.log.Warn("campaign attempt failed; retrying", zap.String("lease", name), zap.Error(err))
	c.events.emit(Event{Kind: EventError, Lease: name, Err: err})
}

// observe emits EventLeaderChanged when a campaigned lease shows a new
// holder or epoch.
func (c *Coordinator) observe(name string, r store.Row, exists bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.campaigns[name]
	if cp == nil {
		return
	}
	holder, epoch := "", int64(0)
	if exists && r.Live() {
		holder, epoch = r.Holder, r.Epoch
	}
	e := cp.e
	if e.seen && e.seenHolder == holder && e.seenEpoch == epoch {
		return
	}
	e.seen, e.seenHolder, e.seenEpoch = true, holder, epoch
	c.events.emit(Event{Kind: EventLeaderChanged, Lease: name, Holder: holder, Epoch: epoch})
}

// grant turns a successful acquire into a Lease for the waiting campaign,
// or releases it at once when nobody waits any more.
func (c *Coordinator) grant(name string, epoch int64, start time.Time) {
	c.mu.Lock()
	cp := c.campaigns[name]
	closing := false
	select {
	case <-c.closing:
		closing = true
	default:
	}
	if cp == nil || closing {
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
		defer cancel()
		if _, err := c.store.Release(ctx, c.holder, []store.Term{{Name: name, Epoch: epoch}}); err != nil {
			c.log.Warn("could not give back a lease nobody waits for; it expires after TTL",
				zap.String("lease", name), zap.Int64("epoch", epoch), zap.Error(err))
		}
		return
	}
	delete(c.campaigns, name)
	l := c.holdLocked(name, epoch, start, cp.e)
	cp.e.seen, cp.e.seenHolder, cp.e.seenEpoch = true, c.holder, epoch
	cp.result <- l
	c.mu.Unlock()
}

// holdLocked starts a term: the lease joins the renewal set and its trust
// deadline timer starts. c.mu must be held.
func (c *Coordinator) holdLocked(name string, epoch int64, start time.Time, e *Election) *Lease {
	lctx, cancel := context.WithCancelCause(c.leaseParent)
	l := &Lease{
		c: c, name: name, epoch: epoch, ctx: lctx, cancel: cancel,
		deadline: start.Add(c.cfg.TTL - c.cfg.Margin),
		election: e,
	}
	l.timer = time.AfterFunc(time.Until(l.deadline), func() { c.expire(l) })
	c.held[name] = l
	c.log.Info("acquired lease", zap.String("lease", name), zap.Int64("epoch", epoch))
	c.events.emit(Event{Kind: EventElected, Lease: name, Holder: c.holder, Epoch: epoch})
	return l
}

// acquireDirect takes a lease that only this process ever competes for
// (a pool member row) without going through the campaign loop.
func (c *Coordinator) acquireDirect(ctx context.Context, name string) (*Lease, error) {
	select {
	case <-c.ready:
	case <-c.closing:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := c.store.EnsureRow(ctx, name); err != nil {
		return nil, err
	}
	start := time.Now()
	epoch, ok, err := c.store.Acquire(ctx, name, c.holder, c.cfg.TTL)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q is held by another process with this instance id", ErrNotAcquired, name)
	}
	c.mu.Lock()
	select {
	case <-c.closing:
		c.mu.Unlock()
		// Given back at once, as grant does, so that no statement outlives
		// the call that started it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ShutdownTimeout)
		defer cancel()
		_, _ = c.store.Release(rctx, c.holder, []store.Term{{Name: name, Epoch: epoch}})
		return nil, ErrClosed
	default:
	}
	defer c.mu.Unlock()
	return c.holdLocked(name, epoch, start, nil), nil
}

// Held returns the tokens of the leases this process holds now.
func (c *Coordinator) Held() []Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Token, 0, len(c.held))
	for _, l := range c.held {
		if l.validLocked() {
			out = append(out, l.Token())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LeaseInfo is a lease as the database sees it.
type LeaseInfo struct {
	Name   string // full lease name: the row key (see "Names and rows" in the package doc)
	Holder string // "" when free
	Epoch  int64
	// AcquiredAt, RenewedAt and ExpiresAt are database-clock times in UTC;
	// zero for a lease never acquired.
	AcquiredAt, RenewedAt, ExpiresAt time.Time
	// DatabaseTime is the database clock at the read.
	DatabaseTime time.Time
	// Live reports whether the lease was held and unexpired at the read.
	Live bool
	// Mine reports whether the holder is this process.
	Mine bool
}

func microsTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func (c *Coordinator) info(r store.Row) LeaseInfo {
	return LeaseInfo{
		Name: r.Name, Holder: r.Holder, Epoch: r.Epoch,
		AcquiredAt: microsTime(r.AcquiredAtUS), RenewedAt: microsTime(r.RenewedAtUS),
		ExpiresAt: microsTime(r.ExpiresAtUS), DatabaseTime: microsTime(r.NowUS),
		Live: r.Live(), Mine: r.Holder == c.holder,
	}
}

// Leases lists every lease in the database, ordered by name.
func (c *Coordinator) Leases(ctx context.Context) ([]LeaseInfo, error) {
	rows, err := c.store.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("coordination: list leases: %w", err)
	}
	out := make([]LeaseInfo, len(rows))
	for i, r := range rows {
		out[i] = c.info(r)
	}
	return out, nil
}
