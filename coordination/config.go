package coordination

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

// Defaults of Config. A zero field takes its default; fields whose default
// depends on TTL scale with a TTL you set.
const (
	// DefaultTTL is how long a lease lives in the database after each
	// successful acquire or renewal.
	DefaultTTL = 15 * time.Second
	// DefaultRetryInterval is how often a follower tries to acquire.
	DefaultRetryInterval = 2 * time.Second
	// DefaultShutdownTimeout bounds how long Run waits, after its context
	// is cancelled, for leader work to return before giving up on release.
	DefaultShutdownTimeout = 10 * time.Second
	// MinTTL is the smallest TTL accepted.
	MinTTL = 10 * time.Millisecond
	// MaxTTL is the largest TTL accepted. A crashed holder keeps its lease
	// for up to TTL, so a longer TTL has no use, and the cap keeps every
	// duration derived from TTL (the trust deadline, the retention of dead
	// pool members, ten TTLs, and the recovery bounds) far from the limit
	// of time.Duration, about 292 years.
	MaxTTL = 24 * time.Hour
	// DefaultMaxConnections is how many connections the coordinator's own
	// statements use at most.
	DefaultMaxConnections = store.DefaultMaxConnections
	// MinInterval is the smallest RenewInterval, RetryInterval and
	// HealthInterval accepted: shorter ones would make the renewal,
	// campaign or health loop run back to back.
	MinInterval = time.Millisecond
	// DefaultHealthFailures is how many health checks in a row must fail
	// before a process steps down.
	DefaultHealthFailures = 3
)

// Config tunes a Coordinator. The zero value is valid and gives the
// documented defaults. Invariants are checked by New, and every error names
// the field and the values involved.
//
// Timing in brief: a holder renews its session every RenewInterval; each
// successful renewal, attempted at time t on the holder's monotonic clock,
// makes every lease of the session live in the database until at least
// t+TTL by the database clock, and the holder trusts them until
// t+TTL-Margin. Failed renewals are retried
// with jittered backoff until then. Followers retry every RetryInterval
// plus a random 0-5% of it, at most 25ms more.
type Config struct {
	// TTL is how long a lease stays live in the database after an acquire
	// or renewal, measured by the database clock. A crashed holder is
	// replaced at most TTL plus one RetryInterval (and its jitter) later.
	// Must be at least MinTTL (10ms) and at most MaxTTL (24h). Defaults to
	// 15s.
	TTL time.Duration

	// RenewInterval is the time between renewals of the leases this
	// process holds. All held leases ride on one session row, renewed by
	// one single-row statement, however many they are.
	// Must be at most (TTL - Margin) / 2, so that a failed renewal can be
	// retried before the trust deadline, and at least MinInterval (1ms).
	// Defaults to TTL/3 (5s).
	RenewInterval time.Duration

	// RetryInterval is the time between a follower's attempts to acquire
	// (its polls); each wait adds a random 0-5%, at most 25ms, so that
	// followers do not act in step. Where notifications work (see
	// DisableNotifications), a release wakes followers at once and the
	// polls only catch crashes and lost notifications.
	// It is also the ceiling of the backoff between failed renewals.
	// Must be at least MinInterval (1ms) and at most TTL. Defaults to 2s,
	// or TTL/4 when that is shorter.
	RetryInterval time.Duration

	// Margin is subtracted from TTL to get the trust deadline: the leader's
	// work context is cancelled Margin before the earliest moment another
	// process could take the lease. It covers the time leader work needs to
	// notice cancellation, and clock rate drift. Must be less than TTL.
	// Defaults to TTL/5 (3s).
	Margin time.Duration

	// ShutdownTimeout bounds the shutdown after Run's context is
	// cancelled: leader work is cancelled at once, and Run keeps renewing
	// the leases until the work has returned and released them, for at
	// most this long. Leases whose work is still running then are not
	// released (they expire after TTL) and the overrun is logged as an
	// error. It also bounds each Release. Defaults to 10s.
	ShutdownTimeout time.Duration

	// MaxConnections bounds how many connections of db the coordinator's
	// own statements use at once, shutdown and recovery from an outage
	// included: the library enforces it, whatever the pool allows. With two
	// or more, one is kept for the session's renewal and the releases, so
	// that campaigns and reads never delay them. Fencing checks run in the
	// caller's transaction and use its connection. Must be at least 1 (on
	// SQLite, 2 or more lets the renewal loop read while a fenced
	// transaction holds off its statement). Defaults to 2.
	MaxConnections int

	// TablePrefix is prepended to the names of the coordination tables.
	// Only ASCII letters, digits and '_' are allowed, starting with a
	// letter or '_', at most 40 bytes. Defaults to "leasehold_".
	TablePrefix string

	// DisableNotifications turns off release notifications. With them, a
	// release wakes the processes campaigning for the lease, and a change
	// to a pool wakes its members, so that they act at once instead of at
	// their next poll: on PostgreSQL through LISTEN/NOTIFY, which needs
	// Notifications set, on one listening connection per process that
	// also carries the reads and acquires (so within MaxConnections, which
	// must be 2 or more for it); on SQLite through sockets next to the
	// database file, between processes on one host; on MySQL, MariaDB and
	// SQL Server through peer wake-ups, UDP datagrams between the
	// processes (see WakeAddress). Notifications are hints: safety never
	// depends on them, and polling goes on with them. Defaults to false
	// (notifications on).
	DisableNotifications bool

	// Notifications receives release notifications on PostgreSQL: set it
	// to pgnotify.New() (package github.com/leasehold/leasehold/pgnotify),
	// which listens through the pgx driver, or to PeerWakeups() where
	// LISTEN cannot work, behind a pooler in transaction mode (PgBouncer).
	// pgnotify is a separate package so that programs on other databases
	// do not link pgx. Without either, followers on PostgreSQL poll every
	// RetryInterval, and Run logs one warning saying so when it starts;
	// this process's releases and pool changes still wake the processes
	// that listen through pgnotify. It is ignored on other databases and
	// when DisableNotifications is set. Defaults to nil.
	Notifications NotificationTransport

	// WakeAddress is the UDP address, host:port, on which this process
	// receives peer wake-ups: on MySQL, MariaDB and SQL Server, and on
	// PostgreSQL with Notifications set to PeerWakeups(). An empty host
	// listens on every interface, port 0 on a port the system picks. Each
	// session row this process creates advertises where it listens
	// (WakeAdvertise) and a random key; a release, or a pool change, sends
	// one datagram, authenticated with that key, to each other live
	// process on the same tables. The processes must reach each other's
	// advertised addresses over UDP, and their clocks agree within 30s.
	// Defaults to ":0".
	WakeAddress string

	// WakeAdvertise lists the addresses other processes send peer
	// wake-ups to, as IP addresses (the port WakeAddress bound is added)
	// or IP:port (behind a port mapping). Set it where the host's
	// addresses are not the ones the others reach: in Kubernetes, the
	// pod IP (status.podIP, through the downward API). A loopback address
	// is only used by processes on the same host. Defaults to the IP of
	// WakeAddress when it names one, and otherwise to every unicast
	// address of the host's interfaces (loopback only when there is no
	// other).
	WakeAdvertise []string

	// DisableAutoMigrate turns off the schema migration Run performs on
	// start. Run then only checks the schema version and fails with
	// ErrSchemaMissing, saying how to migrate, when it is behind.
	// Defaults to false (migrate on start).
	DisableAutoMigrate bool

	// Logger receives the coordinator's logs. Every line carries the
	// holder identity, and lease lines the lease name and epoch.
	// Defaults to a no-op logger.
	Logger *zap.Logger

	// MeterProvider receives the coordinator's metrics through the
	// OpenTelemetry metric API: whether each lease is held and its epoch,
	// acquisitions, losses by cause, releases, renewal round trips and
	// errors, the trust headroom left at each renewal, handoff gaps, and
	// each pool's generation, members, assignment and rebalance time. The
	// instruments are named under "leasehold." (docs/operations.md lists
	// them). Pass the provider of your OpenTelemetry SDK or bridge.
	// Defaults to a no-op provider, with which nothing is recorded.
	MeterProvider metric.MeterProvider

	// HealthCheck, when set, is called every HealthInterval by Run to
	// tell whether this process is fit to lead; a nil error means healthy.
	// Until a first check passes, and while the last check failed, the
	// process does not campaign: it
	// attempts no acquire, Election.TryAcquire returns an error wrapping
	// ErrUnhealthy, and its pools do not take it back in. After
	// HealthFailures failed checks in a row, it steps down: every term it
	// holds, of elections and pool memberships alike, ends with cause
	// ErrUnhealthy and is released once its work has returned, so that
	// healthy processes take over. It campaigns again, and rejoins its
	// pools, once a check passes. A check that returns an error, panics,
	// or has not returned after HealthInterval (its context is then
	// cancelled) has failed; while an overrunning check is still running,
	// no other starts and each tick counts as failed. A check should
	// return once its context is done: Run waits for it, for at most
	// ShutdownTimeout, when it stops. Defaults to nil (always healthy).
	HealthCheck func(ctx context.Context) error

	// HealthInterval is the time between the starts of two health checks,
	// and the longest a check may take. Must be at least MinInterval (1ms).
	// Ignored without HealthCheck. Defaults to RetryInterval.
	HealthInterval time.Duration

	// HealthFailures is how many health checks in a row must fail before
	// this process steps down from every term it holds (see HealthCheck).
	// One failed check already stops it campaigning. Must be at least 1.
	// Defaults to 3.
	HealthFailures int
}

// withDefaults returns a copy with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.RenewInterval = cmp.Or(c.RenewInterval, c.TTL/3)
	c.RetryInterval = cmp.Or(c.RetryInterval, min(DefaultRetryInterval, c.TTL/4))
	c.Margin = cmp.Or(c.Margin, c.TTL/5)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.MaxConnections = cmp.Or(c.MaxConnections, DefaultMaxConnections)
	c.TablePrefix = cmp.Or(c.TablePrefix, store.DefaultTablePrefix)
	c.HealthInterval = cmp.Or(c.HealthInterval, c.RetryInterval)
	c.HealthFailures = cmp.Or(c.HealthFailures, DefaultHealthFailures)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
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
	case c.TTL < MinTTL:
		return bad("TTL (%v) must be at least %v", c.TTL, MinTTL)
	case c.TTL > MaxTTL:
		return bad("TTL (%v) must be at most %v", c.TTL, MaxTTL)
	case c.Margin >= c.TTL:
		return bad("Margin (%v) must be less than TTL (%v)", c.Margin, c.TTL)
	case c.RenewInterval > c.trustWindow()/2:
		return bad("RenewInterval (%v) must be at most half of TTL - Margin (%v - %v = %v), so a failed renewal can be retried before the trust deadline",
			c.RenewInterval, c.TTL, c.Margin, c.trustWindow())
	case c.RetryInterval > c.TTL:
		return bad("RetryInterval (%v) must be at most TTL (%v)", c.RetryInterval, c.TTL)
	case c.RenewInterval == 0 || c.RetryInterval == 0 || c.Margin == 0:
		return bad("TTL (%v) is too short to derive RenewInterval, RetryInterval and Margin; set them explicitly", c.TTL)
	case c.RenewInterval < MinInterval:
		return bad("RenewInterval (%v) must be at least %v", c.RenewInterval, MinInterval)
	case c.RetryInterval < MinInterval:
		return bad("RetryInterval (%v) must be at least %v", c.RetryInterval, MinInterval)
	case c.MaxConnections < 1:
		return bad("MaxConnections (%d) must be at least 1", c.MaxConnections)
	case c.HealthInterval < MinInterval:
		return bad("HealthInterval (%v) must be at least %v", c.HealthInterval, MinInterval)
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
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// Durations derived from the config. Each is computed here and nowhere
// else; the loops and the pool members ask for them by name.

// trustWindow is how long the holder trusts its session after the start
// of a successful renewal, or of the session's creation: TTL - Margin.
// The trust deadline of every lease of the session is that start plus it.
func (c Config) trustWindow() time.Duration { return c.trustFor(c.TTL) }

// trustFor is how long the holder may trust a session that the database
// shows live for left more, counted from the start of the read: left, at
// most TTL, less Margin (fencerenew.go).
func (c Config) trustFor(left time.Duration) time.Duration { return min(left, c.TTL) - c.Margin }

// peerConfig is the configuration of the peer wake-ups of holder. The
// row that advertises the process lives for TTL and is renewed every
// three quarters of it; it is still sent to for two RetryIntervals after
// its expiry, should a renewal be late. The peers are read again at most
// every RetryInterval, so that a process started since is woken at its
// own poll at worst (a process that starts listening also tells the
// others).
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

// sessionPrune is sessionPruneAfter TTLs (Sessions.EndSession's pruneAfter).
func (c Config) sessionPrune() time.Duration { return sessionPruneAfter * c.TTL }

// deadMemberGrace is how long, in TTLs, a member row that nobody holds (it
// was released, or its session expired) is kept before it is pruned. A
// row is only a record of a membership that has ended: its member id
// never returns (memberID). A row created or released moments ago is
// never pruned, so a member about to acquire its row never finds it gone.
const deadMemberGrace = 10

// deadMemberPrune is deadMemberGrace TTLs (Store.PruneDead's grace).
func (c Config) deadMemberPrune() time.Duration { return deadMemberGrace * c.TTL }

// resignHoldOff is how long a process holds off taking a lease again
// after it resigned it, unless it sees another holder first: one TTL.
func (c Config) resignHoldOff() time.Duration { return c.TTL }

// roundTimeout bounds one campaign round over n names: for each statement
// it may send (a read per thousand names, an insert and an acquire per
// five hundred, the session's), long enough on a loaded database; short
// enough that a round stuck behind a row lock does not hold up the next
// for long.
func (c Config) roundTimeout(n int) time.Duration {
	statements := 3 + n/1000 + 2*(n/500)
	return time.Duration(statements) * max(c.RenewInterval, 2*c.RetryInterval)
}

// poolStepTimeout bounds one step of a pool member. A join sends up to
// seven statements, in a transaction among them, and a step cut short on
// a loaded database only fails again at the next one: the driver may
// close the connection of a statement it cancels, so the next step must
// open one as well. So a step may take a campaign round for one name or a
// TTL, whichever is longer; safety never depends on it (the membership's
// lease and the generation fence the work).
func (c Config) poolStepTimeout() time.Duration { return max(c.roundTimeout(1), c.TTL) }
