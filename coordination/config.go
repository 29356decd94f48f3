package coordination

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/logbridge"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

// Defaults and bounds of Config, as its fields' docs state them.
const (
	defaultTTL             = 15 * time.Second
	defaultRetryInterval   = 2 * time.Second
	defaultShutdownTimeout = 10 * time.Second
	minTTL                 = 10 * time.Millisecond
	maxTTL                 = 24 * time.Hour
	defaultMaxConnections  = store.DefaultMaxConnections
	// minInterval is the least RenewInterval, RetryInterval and
	// HealthInterval.
	minInterval           = time.Millisecond
	defaultHealthFailures = 3
)

// Config tunes a Coordinator. The zero value is valid: a zero field takes
// its default, and defaults derived from TTL scale with it. New refuses
// negative durations and values outside the bounds below with an error
// wrapping ErrInvalidConfig that names them. docs/configuration.md
// explains each field and how to choose timings.
type Config struct {
	// TTL is how long a lease stays live in the database after an acquire
	// or renewal, by the database clock; a crashed holder is replaced within
	// TTL plus one RetryInterval and its jitter. 10ms to 24h; defaults to 15s.
	TTL time.Duration

	// RenewInterval is the time between renewals of the process's session,
	// one statement for all its leases. At least 1ms and at most
	// (TTL - Margin)/2. Defaults to TTL/3 (5s).
	RenewInterval time.Duration

	// RetryInterval is the time between a follower's attempts to acquire,
	// plus a random 0-5% (at most 25ms), and between retries of a failed
	// renewal, plus up to half of it. At least 1ms and at most TTL.
	// Defaults to 2s, or TTL/4 when that is shorter.
	RetryInterval time.Duration

	// Margin is subtracted from TTL for the trust deadline (package doc,
	// "Time and trust"): the time leader work has to stop, and room for
	// clock rate drift. Less than TTL. Defaults to TTL/5 (3s).
	Margin time.Duration

	// ShutdownTimeout bounds how long a cancelled Run waits for the work
	// under its leases (see Coordinator.Run), and each Release. Leases whose
	// work has not returned by then are not released: they expire after
	// TTL, and the overrun is logged as an error. Defaults to 10s.
	ShutdownTimeout time.Duration

	// MaxConnections bounds the connections of db the coordinator's own
	// statements use at once; with 2 or more, one is kept for the renewal
	// and the releases. Fencing checks use the caller's transaction. At
	// least 1; notifications on PostgreSQL need 2 or more. Defaults to 2.
	MaxConnections int

	// TablePrefix prefixes the coordination tables' names: ASCII letters,
	// digits and '_', not starting with a digit, at most 40 bytes. Defaults
	// to "leasehold_".
	TablePrefix string

	// DisableNotifications turns off wake-ups: with them, a release wakes
	// the processes campaigning for the lease, and a pool change the pool's
	// members, at once rather than at their next poll. They are hints;
	// polling goes on. Defaults to false (wake-ups on).
	DisableNotifications bool

	// Notifications receives wake-ups on PostgreSQL through LISTEN
	// (pgnotify.New(), package github.com/leasehold/leasehold/pgnotify)
	// instead of the peer wake-ups over UDP. Processes with and without it
	// on the same tables wake each other. Ignored on other databases and
	// with DisableNotifications. Defaults to nil: peer wake-ups.
	Notifications NotificationTransport

	// WakeAddress is the UDP host:port on which this process receives peer
	// wake-ups (every database but SQLite; not with Notifications set):
	// an IP or empty host (every interface), port 0 for one the system
	// picks. The processes must reach each other's advertised addresses over
	// UDP, their clocks agreeing within 30s. Defaults to ":0".
	WakeAddress string

	// WakeAdvertise lists where the others send this process's peer
	// wake-ups: unicast IPs (the bound port is added) or IP:port; in
	// Kubernetes, the pod IP. Defaults to WakeAddress's IP if it names one,
	// else every unicast address of the host's interfaces (loopback only
	// when there is no other).
	WakeAdvertise []string

	// DisableAutoMigrate makes Run check the schema version, failing with
	// ErrSchemaMissing when behind, instead of migrating. Defaults to false.
	DisableAutoMigrate bool

	// Logger receives the logs, every line with the holder identity and
	// lease lines with the lease and epoch. Defaults to a no-op logger,
	// or to Slog.
	Logger *zap.Logger

	// Slog receives the logs when Logger is nil, for a program that logs
	// with log/slog (slog.New(handler) for a handler): zap's levels as
	// slog's, the same keys as attributes, the caller as the source.
	// Setting both is an error. Config() reports it as Logger.
	Slog *slog.Logger

	// MeterProvider receives the coordinator's OpenTelemetry metrics,
	// named under "leasehold." (docs/operations.md lists them). Defaults to
	// a no-op provider: nothing is recorded.
	MeterProvider metric.MeterProvider

	// TracerProvider receives the coordinator's OpenTelemetry spans: its
	// acquires, releases, terms, fencing checks and pool rebalances, and
	// the workers' scheduled slot runs (docs/operations.md lists them). A
	// term's span is in its lease's context, so spans of the leader work
	// are its children. Defaults to a no-op provider: nothing is recorded.
	TracerProvider trace.TracerProvider

	// HealthCheck, when set, is called by Run every HealthInterval; nil
	// means fit to lead. A check that errs, panics or overruns HealthInterval
	// (its context is then cancelled) fails, as does each tick while it
	// overruns. Until a check passes, and while the last failed, the process
	// attempts no acquire (ErrUnhealthy) and joins no pool; after
	// HealthFailures failures in a row, its terms end with ErrUnhealthy. Run
	// waits for a running check, at most ShutdownTimeout, when it stops.
	// Defaults to nil (always healthy).
	HealthCheck func(ctx context.Context) error

	// HealthInterval is the time between the starts of two health checks,
	// and the longest a check may take. At least 1ms; ignored without
	// HealthCheck. Defaults to RetryInterval.
	HealthInterval time.Duration

	// HealthFailures is how many health checks in a row must fail before
	// this process steps down from every term it holds; one already stops
	// it campaigning. At least 1. Defaults to 3.
	HealthFailures int
}

// bothLoggers is the error of a Config with both Logger and Slog.
const bothLoggers = "Logger and Slog are both set; set one"

// withDefaults returns a copy with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.TTL = cmp.Or(c.TTL, defaultTTL)
	c.RenewInterval = cmp.Or(c.RenewInterval, c.TTL/3)
	c.RetryInterval = cmp.Or(c.RetryInterval, min(defaultRetryInterval, c.TTL/4))
	c.Margin = cmp.Or(c.Margin, c.TTL/5)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, defaultShutdownTimeout)
	c.MaxConnections = cmp.Or(c.MaxConnections, defaultMaxConnections)
	c.TablePrefix = cmp.Or(c.TablePrefix, store.DefaultTablePrefix)
	c.HealthInterval = cmp.Or(c.HealthInterval, c.RetryInterval)
	c.HealthFailures = cmp.Or(c.HealthFailures, defaultHealthFailures)
	switch {
	case c.Logger == nil && c.Slog != nil:
		c.Logger, c.Slog = logbridge.Logger(c.Slog.Handler()), nil
	case c.Logger == nil:
		c.Logger = zap.NewNop()
	}
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = tracenoop.NewTracerProvider()
	}
	return c
}

// validate checks the invariants of a config with defaults filled in.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"TTL", c.TTL}, {"RenewInterval", c.RenewInterval}, {"RetryInterval", c.RetryInterval},
		{"Margin", c.Margin}, {"ShutdownTimeout", c.ShutdownTimeout}, {"HealthInterval", c.HealthInterval},
	} {
		if f.v < 0 {
			return bad("%s (%v) must not be negative", f.name, f.v)
		}
	}
	switch {
	case c.Slog != nil:
		return bad(bothLoggers)
	case c.TTL < minTTL:
		return bad("TTL (%v) must be at least %v", c.TTL, minTTL)
	case c.TTL > maxTTL:
		return bad("TTL (%v) must be at most %v", c.TTL, maxTTL)
	case c.Margin >= c.TTL:
		return bad("Margin (%v) must be less than TTL (%v)", c.Margin, c.TTL)
	case c.RenewInterval > c.trustWindow()/2:
		return bad("RenewInterval (%v) must be at most half of TTL - Margin (%v - %v = %v), so a failed renewal can be retried before the trust deadline",
			c.RenewInterval, c.TTL, c.Margin, c.trustWindow())
	case c.RetryInterval > c.TTL:
		return bad("RetryInterval (%v) must be at most TTL (%v)", c.RetryInterval, c.TTL)
	case c.RenewInterval == 0 || c.RetryInterval == 0 || c.Margin == 0:
		return bad("TTL (%v) is too short to derive RenewInterval, RetryInterval and Margin; set them explicitly", c.TTL)
	case c.RenewInterval < minInterval:
		return bad("RenewInterval (%v) must be at least %v", c.RenewInterval, minInterval)
	case c.RetryInterval < minInterval:
		return bad("RetryInterval (%v) must be at least %v", c.RetryInterval, minInterval)
	case c.MaxConnections < 1:
		return bad("MaxConnections (%d) must be at least 1", c.MaxConnections)
	case c.HealthInterval < minInterval:
		return bad("HealthInterval (%v) must be at least %v", c.HealthInterval, minInterval)
	case c.HealthFailures < 1:
		return bad("HealthFailures (%d) must be at least 1", c.HealthFailures)
	}
	if c.WakeAddress != "" {
		if err := wake.CheckListen(c.WakeAddress); err != nil {
			return bad("WakeAddress (%q) %v", c.WakeAddress, err)
		}
	}
	for i, a := range c.WakeAdvertise {
		if err := wake.CheckAdvertise(a); err != nil {
			return bad("WakeAdvertise[%d] (%q) %v", i, a, err)
		}
	}
	if err := store.ValidateTablePrefix(c.TablePrefix); err != nil {
		return err
	}
	return nil
}

// Durations derived from the config are computed here and nowhere else.

// trustWindow is how long the holder trusts its session after the start
// of a successful renewal, or of the session's creation: TTL - Margin.
func (c Config) trustWindow() time.Duration { return c.trustFor(c.TTL) }

// trustFor is how long the holder may trust, from the start of a read, a
// session the read shows live for left more.
func (c Config) trustFor(left time.Duration) time.Duration { return min(left, c.TTL) - c.Margin }

// peerConfig is the configuration of the peer wake-ups of holder: a peer
// is still sent to for two RetryIntervals after its row expired, and the
// peers are read again at most every RetryInterval.
func (c Config) peerConfig(holder string) wake.PeerConfig {
	return wake.PeerConfig{
		Listen:    c.WakeAddress,
		Advertise: c.WakeAdvertise,
		Holder:    holder,
		TTL:       c.TTL,
		Grace:     2 * c.RetryInterval,
		Refresh:   c.RetryInterval,
	}
}

// sessionPruneAfter is how long, in TTLs, a session row is kept after it
// expired before a process ending its own session deletes it.
const sessionPruneAfter = 10

func (c Config) sessionPrune() time.Duration { return sessionPruneAfter * c.TTL }

// deadMemberGrace is how long, in TTLs, a member row nobody holds is kept
// before it is pruned; a row created or released moments ago is never
// pruned, so a member about to acquire its row never finds it gone.
const deadMemberGrace = 10

func (c Config) deadMemberPrune() time.Duration { return deadMemberGrace * c.TTL }

// resignHoldOff is how long a process holds off taking a lease again
// after it resigned it, unless it sees another holder first.
func (c Config) resignHoldOff() time.Duration { return c.TTL }

// roundTimeout bounds one campaign round over n names: a share for each
// statement it may send.
func (c Config) roundTimeout(n int) time.Duration {
	statements := 3 + n/1000 + 2*(n/500)
	return time.Duration(statements) * max(c.RenewInterval, 2*c.RetryInterval)
}

// poolStepTimeout bounds one step of a pool member; safety never depends
// on it (the membership and the generation fence the work).
func (c Config) poolStepTimeout() time.Duration { return max(c.roundTimeout(1), c.TTL) }
