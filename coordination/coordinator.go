package coordination

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/broadcast"
	"github.com/leasehold/leasehold/internal/ctxtime"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

// The coordinator is split by concern:
//
//   - coordinator.go: the type, its construction and the store it uses;
//   - lifecycle.go: Run, start-up and shutdown;
//   - session.go: the session that every held lease rides on, and its
//     renewal loop;
//   - failover.go: what a holder does when the database failed over;
//   - release.go: releases, batched across concurrent callers;
//   - campaign.go: the campaign loop and acquiring;
//   - queries.go: what the process holds and what the database shows;
//   - fencerenew.go: renewal inside fenced transactions (SQLite);
//   - resign.go: resign requests, and how a holder acts on them;
//   - stepdown.go: health checks, and the step-down after failed ones.

type runState int

const (
	stateIdle runState = iota
	stateRunning
	stateStopped
)

// Coordinator hands out named elections and pools for one process
// identity. Every lease it holds rides on one session row, which one
// renewal statement per tick keeps alive, however many leases there are.
// Create it with New, start it with Run. It is safe for concurrent use.
type Coordinator struct {
	cfg     Config
	id      identity.Identity
	holder  string
	store   leaseStore
	log     *zap.Logger
	events  broadcaster
	metrics *metrics

	ready   chan struct{} // closed once the schema is in place and loops run
	closing chan struct{} // closed when shutdown begins
	done    chan struct{} // closed when Run returns

	renewWake    chan struct{}
	campaignWake chan struct{}
	wokenWake    chan struct{} // woken holds names to attempt at once
	resignWake   chan struct{}
	heldDropped  chan struct{} // a term left held (awaitReleases)

	// sessMu serialises starting and topping up the session (ensureSession).
	sessMu sync.Mutex
	// relMu is held by the one caller that sends the queued releases.
	relMu sync.Mutex

	mu          sync.Mutex
	state       runState
	leaseParent context.Context
	sess        *session // the current session; nil before the first acquire and after a loss
	held        map[string]*Lease
	releaseQ    []*releaseReq // releases waiting for a statement
	releasing   int           // releases queued or being sent
	campaigns   map[string]*campaign
	observed    map[string]*Election // elections with observers
	elections   map[string]*Election
	woken       map[string]struct{}  // campaigned leases a notification named, not attempted yet (acquireWoken)
	wokenAt     time.Time            // when the latest of them arrived
	pools       map[string]*Pool     // the pools whose Run is active in this process, by key
	joins       map[string]int       // per pool key, the memberships this process started (memberID)
	holdOff     map[string]time.Time // leases this process resigned, until when it does not take them again
	unhealthy   bool                 // no health check passed yet, or the last one failed: no campaigning
	healthKnown bool                 // a health check has returned

	// healthChanged is when unhealthy last changed, or when Run
	// started; healthErr is the last check's error, nil after a
	// pass. Both are for Renewal.
	healthChanged time.Time
	healthErr     error

	renewals renewals // outcomes of the renewal loop's statements (Renewal)

	// wake carries the wake-ups (wake.go); nil where there is none.
	wake wake.Transport
	// listening is true while wake-ups arrive (wake.go); listenChanged
	// (buffered 1) is signalled after each change of listening's state
	// has been logged.
	listening     atomic.Bool
	listenChanged chan struct{}
	// dropWakes, when set by tests, drops every wake-up received.
	dropWakes atomic.Bool

	// afterRenew, when set by tests (under mu), is called after every
	// renewal attempt with the number of leases it covered, the number it
	// found lost and the error.
	afterRenew func(terms, lost int, err error)
	// afterRound, when set by tests, is called after every campaign round
	// with the number of names it read.
	afterRound func(names int)
	// afterWoken, when set by tests (under mu), is called after every
	// attempt of leases named by a notification (acquireWoken) with the
	// number it attempted.
	afterWoken func(attempted int)
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
	st, err := store.New(db, store.Options{TablePrefix: cfg.TablePrefix, MaxConnections: cfg.MaxConnections, FailoverHold: cfg.TTL})
	if err != nil {
		return nil, err
	}
	return newCoordinator(st, id, cfg), nil
}

func newCoordinator(st leaseStore, id identity.Identity, cfg Config) *Coordinator {
	holder := id.Holder()
	log := cfg.Logger.Named("leasehold").With(zap.String("identity", holder))
	m, err := newMetrics(cfg.MeterProvider)
	if err != nil {
		log.Warn("the meter provider refused an instrument; no metrics are recorded", zap.Error(err))
	}
	c := &Coordinator{
		cfg:           cfg,
		id:            id,
		holder:        holder,
		store:         st,
		log:           log,
		metrics:       m,
		ready:         make(chan struct{}),
		closing:       make(chan struct{}),
		done:          make(chan struct{}),
		renewWake:     make(chan struct{}, 1),
		campaignWake:  make(chan struct{}, 1),
		wokenWake:     make(chan struct{}, 1),
		woken:         make(map[string]struct{}),
		resignWake:    make(chan struct{}, 1),
		heldDropped:   make(chan struct{}, 1),
		listenChanged: make(chan struct{}, 1),
		held:          make(map[string]*Lease),
		campaigns:     make(map[string]*campaign),
		observed:      make(map[string]*Election),
		elections:     make(map[string]*Election),
		pools:         make(map[string]*Pool),
		joins:         make(map[string]int),
		holdOff:       make(map[string]time.Time),
		unhealthy:     cfg.HealthCheck != nil,
		events:        broadcaster{b: broadcast.Broadcaster[Event]{Stamp: stampDropped}},
	}
	if st != nil { // a coordinator built only for its Admin (tests)
		c.wake = wakeTransport(st.Wakeups(), cfg)
	}
	return c
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

// poke wakes a loop without blocking.
func (c *Coordinator) poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// closingNow reports whether shutdown has begun.
func (c *Coordinator) closingNow() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// jitter returns d plus a random 0-50% of d.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/2+1)
}

// maxPollJitter bounds the random part of a follower's poll interval.
const maxPollJitter = 25 * time.Millisecond

// pollJitter returns the wait between two campaign rounds for a poll
// interval d: d plus a random 0-5% of d, at most maxPollJitter. Never less
// than d, so an idle follower reads at most once per RetryInterval; never
// much more, so that a release is noticed within about one RetryInterval
// where there are no notifications, and an expiry within TTL plus that.
// The small random part keeps followers that started together from
// polling in step.
func pollJitter(d time.Duration) time.Duration {
	return d + rand.N(min(d/20, maxPollJitter)+1)
}

// sleepCtx waits d or until ctx is done; it reports whether d passed.
var sleepCtx = ctxtime.Sleep
