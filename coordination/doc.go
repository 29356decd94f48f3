// Package coordination elects leaders through the SQL database a service
// already has: named leases with fencing epochs, decided by the database
// clock, all riding on one session row per process.
//
// # Overview
//
// A [Coordinator] is built from a *gorm.DB, the process identity (package
// identity) and a [Config]; [Coordinator.Run] migrates the schema (unless
// disabled) and serves until its context ends. It hands out:
//
//   - [Election]: a lease at most one process holds, per cluster
//     ([ClusterScope]) or across everyone on the database ([GlobalScope]).
//     [Election.Run] runs a function while this process leads;
//     [Election.Campaign] waits for a [Lease]; [Election.TryAcquire] makes
//     one attempt; [Election.Observe] follows the leader without
//     campaigning.
//   - [Pool]: work split over every live process that runs it, by index
//     and count ([Pool.Run]) or as sticky partitions ([Pool.RunPartitions]).
//   - [Locks]: mutual exclusion per key for keys known at run time.
//   - [Semaphore]: at most a limit of holders at once.
//
// For example:
//
//	coord, err := coordination.New(db, id, coordination.Config{Logger: log})
//	e, err := coord.Election(coordination.ClusterScope, "reports")
//	g.Go(func() error { return coord.Run(ctx) })
//	g.Go(func() error {
//		return e.Run(ctx, func(ctx context.Context, l *coordination.Lease) error {
//			// leader work: stops when ctx is cancelled; l.Epoch() fences writes
//		})
//	})
//
// # Names and rows
//
// Names are checked by [ValidateName]: ASCII letters, digits, '.', '_',
// '-', ':' and '/'. Everything is stored as rows of one lease table, whose
// keys are what [Lease.Key], [Token.Name], [LeaseInfo.Name] and
// [Event.Lease] report:
//
//	cluster/<cluster>/<name>        election, ClusterScope
//	global/<name>                   election, GlobalScope
//	pool|<key>|generation           pool generation (<key> is Pool.Key())
//	pool|<key>|member|<member id>   pool membership
//	lock|<key>|<lock key>           keyed lock (<key> is Locks.Key())
//	lockfloor|<key>|<bucket>        epoch floor of keyed locks
//	sem|<key>|<slot>                semaphore slot (<key> is Semaphore.Key())
//
// No name contains '|', so no name can produce another's key or a key
// under another pool's prefix.
//
// # Time and trust
//
// Lease expiry is decided by the database clock only: every time written
// into a row is computed by the database in the statement itself, and
// every comparison with "now" is the database's. The holder measures only
// durations, on its monotonic clock: an acquire or renewal that started at
// s and succeeded makes every other process see the lease live until at
// least s + TTL, so the holder trusts the term until
//
//	deadline = s + TTL - Margin
//
// When the deadline passes without a successful renewal the term ends:
// its context is cancelled and [EventLost] is emitted. [Lease.Valid] reads
// the clock itself, so a process resumed after a pause sees false at once.
//
// # Epochs and fencing
//
// Every acquire increments the lease's epoch in the same statement, so
// epochs of a name only grow and every term has its own; they never
// repeat, also across a failover of the database. Renew and release match
// (session, name, epoch), so a stale process never touches a newer term.
// The epoch is a fencing token: [Lease.Fence] (and [Coordinator.CheckFence]
// for a [Token]) checks inside the caller's transaction that the term
// still holds, and locks the lease row until the transaction ends, so a
// takeover waits for a fenced transaction in flight and a paused process
// cannot commit after losing its lease ([ErrFenced]). [Assignment.Fence]
// and [Partition.Fence] do the same for pools. The handle must be inside a
// transaction ([ErrNotInTransaction] otherwise).
//
// # Sessions and cost
//
// Every lease of a process rides on one session row: one renewal
// statement per tick keeps any number of them alive. Followers read every
// lease they campaign for with one statement per thousand names per
// RetryInterval, and write only to take what is free. Releases that end
// together go out in batches. The coordinator's statements use at most
// [Config].MaxConnections connections, one kept for the renewal.
//
// # Failure handling
//
//   - Transient database errors: every loop retries at its interval or
//     later, with jitter, and warns once per outage; renewals are retried
//     until the trust deadline.
//   - Database unreachable at start: Run retries and becomes ready when it
//     returns. It never panics.
//   - Confirmed loss (the database shows the session expired): the term
//     ends at once.
//   - Failover of the database (PostgreSQL, MariaDB; SQL Server by the
//     same rule): a holder's terms the new primary does not show end at
//     its first renewal there; nothing is taken for one TTL after the
//     failover is seen, and new epochs go above any the old primary
//     issued. The old primary must be fenced by the failover tool.
//   - Work that returns an error or panics while its term is valid
//     ([Election.Run], [Pool.Run]) is reported (a panic as a
//     [*PanicError]) and called again after a backoff ([RunOptions]).
//   - Shutdown: every lease context is cancelled with [ErrClosed]; Run
//     keeps renewing until the work under each lease has returned and
//     released it, for at most ShutdownTimeout.
//
// # Resign and step-down
//
// [Admin.Resign] asks the holder of a lease to hand it over, for the
// epoch of the current term only; the holder learns of it at its next
// renewal, ends the term with [ErrResigned] and holds off for one TTL so a
// follower takes over. [Config].HealthCheck keeps an unhealthy process
// from campaigning, and after HealthFailures failed checks ends its terms
// with [ErrUnhealthy].
//
// # Notifications and inspection
//
// [Coordinator.Subscribe] delivers [Event] values in order without ever
// blocking the coordinator, dropping (and counting) events while a
// subscriber's buffer is full. Wake-ups make a graceful handoff immediate
// where the database or the network carries them; they are hints, and
// polling goes on. [Admin] reads every lease and pool by the database
// clock and needs no identity; [Coordinator.Renewal] and [Coordinator.Held]
// report, without I/O, how this process fares. [Config].MeterProvider
// takes an OpenTelemetry MeterProvider (docs/operations.md lists the
// instruments).
//
// # Errors
//
// Errors wrap the sentinels of this package; compare them with errors.Is.
// A failed fencing check is a [*FenceError] that says what it found.
package coordination

// Ownership. Each piece of state has one owner, and only the owner
// changes it; no owner calls another while holding a lock.
//
//	owner                          owns                                           others use
//	termSet's loop goroutine       the terms held and ended, the campaigns,       call (ops run on the loop);
//	(terms.go: termState)          elections and observers, leases attempted,     I/O is done by the caller or
//	                               release queue, give-backs, hold-offs, health   a goroutine the loop starts
//	                               checks, resign reading
//	keeper goroutine (session.go)  the session: its row, renewal, trust deadline  session's atomic reads; attach
//	                                                                              and acquire counts; acquire()
//	poolRun (member.go), owned     one Run's membership and the assignment        Current and metrics read its
//	by Pool.Run's goroutine        worked on                                      atomics
//	handles.mu (handles.go)        the handles given out, the running pools       map operations only
//	Locks.mu (locks.go)            a namespace's key gates and its prune time     map operations only
//	listen goroutine (wake.go)     the wake-up transport's listening              delivers names to the loop
//
// Reads of another type's fields are of values that do not change after
// construction (the shared configuration, a handle's name and epoch, a
// pool's row names), of the loop's own sub-states (termState's parts), of
// a session by its keeper, and of the atomics listed above.
