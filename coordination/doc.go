// Package coordination elects leaders through the SQL database a service
// already has: named leases with fencing epochs, decided by the database
// clock, all riding on one session row per process.
//
// # Overview
//
// A [Coordinator] is built from a *gorm.DB, the process identity (package
// identity) and a [Config]. [Coordinator.Run] migrates the schema (unless
// disabled) and then keeps its loops going until its context ends: one
// campaigns for the elections this process wants, one renews the session
// of the leases it holds, one reads the resign requests for them, one
// runs the health checks (with a HealthCheck) and one listens for
// wake-ups; each running pool has its own. [Coordinator.Election] returns an [Election] scoped to this
// process's cluster ([ClusterScope]) or to everyone who shares the database
// ([GlobalScope]). [Election.Run] runs a function whenever this process
// leads; [Election.Campaign] gives the lower-level [Lease], and
// [Election.TryAcquire] makes one attempt for it, returning [ErrNotAcquired]
// (naming the holder) when another process leads, and [ErrSessionLost]
// when this process stopped trusting its own session during the attempt.
// [Election.Observe] follows who leads an election without campaigning
// for it. [Coordinator.Pool] splits work over every live process that runs
// it: [Pool.Run] gives each member an index of a count, and a pool with
// [PoolConfig].Partitions spreads that many partitions over the members
// with [Pool.RunPartitions], moving only what balance requires when one
// joins or leaves (see [Partition]).
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
// Elections and pools are named by [ValidateName]: ASCII letters, digits,
// '.', '_', '-', ':' and '/'. Each is stored as rows of one lease table,
// whose keys are what [Lease.Key], [Token.Name], [LeaseInfo.Name] and
// [Event.Lease] report:
//
//	cluster/<cluster>/<name>        election, ClusterScope
//	global/<name>                   election, GlobalScope
//	pool|<key>|generation           pool generation (<key> is Pool.Key())
//	pool|<key>|member|<member id>    pool membership
//	lock|<key>|<lock key>           keyed lock (<key> is Locks.Key())
//	lockfloor|<key>|<bucket>        epoch floor of keyed locks
//	sem|<key>|<slot>                semaphore slot (<key> is Semaphore.Key())
//
// No name contains '|', so no name can produce another election's or
// pool's key, or a key under another pool's prefix: pools "a" and
// "a/member/x" never see each other's rows, and neither does an election
// named like a pool row. Schema version 3 renamed the pool rows of older
// versions, whose keys could collide.
//
// # Keyed locks and semaphores
//
// [Coordinator.Locks] returns a namespace of keyed locks: mutual
// exclusion per key for keys known only at run time (an account id, a
// file name; [ValidateKey]). [Locks.Lock] waits for a key (a free one is
// taken by the caller's own attempt, with no read and no campaign round),
// [Locks.TryLock] makes one attempt, and [Locks.Do] holds the key while a
// function runs, under a context cancelled when ctx is and at the trust
// deadline, Margin before anyone else could take the key. Each grant is a
// [*Lease] of the key's row: Key, Epoch, Fence, TrustDeadline, Release,
// as for an election. Held keys ride the session like every lease, so any
// number of them is renewed by the one statement per tick.
//
// A release deletes the key's row, and wakes the processes waiting for
// it where wake-ups exist; a waiter creates the row again. Rows of
// holders that died are deleted by a prune of at most 500 rows that runs
// at a release at most once per TTL per namespace and process, so the
// table keeps the rows of keys in use plus 64 floor rows per namespace.
// The epochs of a key still never repeat and never go back: a row is
// created at the epoch of its floor row (one of 64, by a hash of the key),
// and deleted only after that floor was raised to its epoch, both under
// the floor row's lock (internal/store's floored rows).
//
// [Coordinator.Semaphore] is a concurrency limit: at most Limit holders
// of a name at once, each a lease of one of Limit slot rows with its own
// epoch. [Semaphore.Acquire] waits for any slot, [Semaphore.TryAcquire]
// tries once, and [Semaphore.Run] runs a function under a slot on
// Election.Run's term loop (the workers package's Limited worker). Every
// process must use the same limit for a name.
//
// # State model
//
// For each election, this process is a follower or the holder of one term:
//
//	          acquire (epoch+1)              trust deadline passed,
//	follower ─────────────────────▶ holder ──database shows another term,──▶ follower
//	   ▲                              │      Release, or shutdown
//	   └──────── Release ─────────────┘
//
// A term is one acquisition: a lease name, this holder, and an epoch. It
// ends exactly once, and its [Lease.Context] is cancelled when it does.
//
// # Time authority
//
// Lease expiry is decided by the database clock only. Every time written
// into a lease row (acquired, renewed, expires) is computed by the database
// in the statement itself, as microseconds since the Unix epoch, and every
// comparison with "now" is made by the database in the same statement. The
// application's wall clock never reaches the database, so an application
// clock that is hours off changes nothing.
//
// # Trust window
//
// The holder measures only durations, on its own monotonic clock. If an
// acquire or renewal that started at time s succeeds, the database made the
// lease live until at least its own now + TTL, and its now came after s.
// So every other process sees the lease live until at least s + TTL (given
// clocks whose rate drifts by less than Margin per TTL), and the holder
// trusts the term until
//
//	deadline = s + TTL - Margin
//
// A renewal's deadline is anchored at the attempt's start, never at its
// completion, so a slow renewal cannot stretch the window. When the
// deadline passes without a successful renewal, the term ends: its context
// is cancelled and [EventLost] is emitted. [Lease.Valid] compares the
// monotonic clock with the deadline itself, so a process resumed after a
// long pause sees false before any timer goroutine has run.
//
// # Term-scoped writes and epochs
//
// Acquire is one conditional UPDATE that takes leases that are free,
// expired, held by an expired session, or held by this process's own
// session, and always increments the epoch in that statement. Epochs of a
// name therefore only grow, a release keeps the epoch, and every term has
// its own. Release matches (session, name, epoch), so a stale process can
// never release a newer term, and an expired session is never renewed
// again, so it can never extend one. On PostgreSQL, MySQL/MariaDB and
// SQLite the acquire runs in a short transaction that has the new epochs
// before it commits, so an acquire abandoned while it waits on a locked row
// never commits a term this process does not know of.
//
// # Sessions
//
// Every lease and pool membership of a process rides on one row of the
// session table: a lease row names the session holding it and is live while
// that session is unexpired by the database clock. One renewal of that row
// per tick keeps every lease alive, whatever their number, and the trust
// deadline is the session's. A session id is random and never reused.
//
// # Statements and the primary
//
// Every statement goes through gorm, so the caller's callbacks and plugins
// see it, and to the primary: with read/write splitting
// (gorm.io/plugin/dbresolver) each carries the resolver's Write marker, so
// reads such as [Election.Leader] and [Coordinator.Leases] never come from a
// replica. The fencing check runs in the caller's transaction.
//
// # Batching
//
// One renewal statement per tick, of one row, covers every lease the process
// holds, however many. Followers read every lease they campaign for with
// one SELECT per thousand names per attempt and write only to take leases
// that are free or expired, in batches of 500. Observed elections
// ([Election.Observe]) join that SELECT at no cost per name. Releases that end together
// (a shutdown, a pool leave) go out in batches of 500 too. The coordinator's
// statements use at most [Config].MaxConnections connections at once (2 by
// default), one of them kept for the renewal and releases, so renewals
// never wait behind a campaign statement.
//
// # Fencing
//
// The epoch is a fencing token. [Lease.Fence] (and [Coordinator.CheckFence]
// for a [Token]) checks inside the caller's own GORM transaction that this
// process still holds the lease at that epoch and that it is unexpired by
// the database clock, and locks the lease row until the transaction ends
// (FOR SHARE OF on PostgreSQL, LOCK IN SHARE MODE on MySQL, HOLDLOCK on SQL
// Server; SQLite serialises writers anyway). A takeover therefore waits for
// a fenced transaction in flight, and a paused process that wakes after
// losing its lease cannot commit: its check fails with [ErrFenced]. The
// handle passed must be inside a transaction (the one db.Transaction gives
// its function, or one from db.Begin): outside one the lock would end with
// the check's own statement, so a nil or plain handle is refused with
// [ErrNotInTransaction]. [Assignment.Fence] works the same way for a pool,
// and [Partition.Fence] for a partition of a sticky pool: it stays valid
// across generations that do not move the partition.
//
// Only the lease row is locked, so on PostgreSQL, MySQL and SQL Server a
// fenced transaction never holds off the renewal of the session. On SQLite,
// whose single write lock lets back-to-back transactions keep the renewal
// out for good, the check therefore renews the session inside the caller's
// transaction, and while the renewal statement waits, the renewal loop
// reads the session row (WAL readers are not blocked) and trusts a renewal
// once it sees it committed. See [Lease.Fence] for the budget.
//
// # Failure handling
//
//   - Transient database errors: renewals are retried with jittered
//     backoff (100ms doubling up to RetryInterval) until the trust
//     deadline; one failed renewal is not a lost lease. Each failure is
//     logged and emitted as [EventError].
//   - Database unreachable at start: Run logs, retries with backoff and
//     becomes ready when the database returns. It never panics.
//   - Confirmed loss (the database shows another holder or epoch, or the
//     lease expired): the term ends at once.
//   - Failover of the database (PostgreSQL; SQL Server by the same rule):
//     a promoted standby is noticed by its incarnation (system identifier
//     and timeline). A holder's first renewal there checks its terms: those
//     the new primary does not show end at once with [ErrLeaseLost], the
//     rest go on. No lease is taken and no pool generation published for
//     one TTL after the failover is first seen, and new epochs go 2^32
//     above the highest the new primary has, so an asynchronous standby
//     that lost the last writes never leads to two holders or to an epoch
//     issued twice. The old primary must be fenced by the failover tool:
//     writes it still accepts are out of reach (docs/design.md).
//   - Leader or pool work that returns an error or panics while its term
//     is valid ([Election.Run], [Pool.Run]): the panic is recovered into a
//     [*PanicError] with its stack, the failure is logged and emitted as
//     [EventError], and the work is called again under the same term after
//     RetryInterval, doubling up to 30s ([RunOptions] changes the backoff
//     and where failures are reported). The workers package runs on these
//     two loops. A panicking [Config].HealthCheck is recovered and reported
//     the same way, and counts as a failed check.
//   - Shutdown (Run's context cancelled): every lease context is cancelled
//     with cause [ErrClosed]; Run keeps renewing until the work under each
//     lease has returned and called [Lease.Release], for at most
//     ShutdownTimeout. Work still running then is reported as an error and
//     its lease is not released: it expires after TTL.
//
// # Resign and step-down
//
// [Admin.Resign] (or [Coordinator.Resign]) asks the holder of a lease to
// hand it over, for a deploy, say; it needs no running coordinator. The request is recorded in
// the lease row for the epoch of the current term, so it never ends a
// later one, and the holder learns of it from its next renewal, which
// returns its session's notice counter in the same one statement. The
// holder ends the term with cause [ErrResigned], releases the lease once
// the work has returned, and holds off taking it again for one TTL, so a
// follower takes over; [ResignOptions].PreferredHolder reserves the lease
// for one process for twice the holder's TTL.
//
// [Config].HealthCheck makes a process step down when it is unfit to lead:
// while its last check failed it does not campaign, and after
// HealthFailures failed checks in a row every term it holds ends with
// cause [ErrUnhealthy] and is released; it campaigns again once a check
// passes.
//
// # Notifications
//
// [Coordinator.Subscribe] delivers [Event] values without ever blocking the
// loops: in order per subscriber, dropping new events while a subscriber's
// buffer is full and counting them in the next delivered event's Dropped
// field. Channels close when Run returns.
//
// [Election.Observe] delivers the lease of one election, read by the
// database clock, at the first read and on each change of holder or epoch;
// its channel keeps only the latest value. Both are hints: a change is
// seen at the next read, one per RetryInterval, so terms that began and
// ended between two reads are missed. Act as leader only under a [Lease].
//
// # Owners
//
// Inside the package, each piece of the coordinator's state has one
// owner, which holds it behind its own lock; [Coordinator] only builds
// the owners, wires them and runs their loops. Owners call each other
// through narrow methods, never by reaching into another's fields, and
// take locks in one order (campaigner, then term set, then keeper; the
// hold-offs' last), so none calls another while holding its own lock
// otherwise.
//
//	owner         file(s)                 owns                                        called by
//	keeper        session.go, failover.go, the session, its renewal loop, the trust    campaigner (ensureSession),
//	              fencerenew.go           deadline, notice counters, the rebind        term set (trust of a term),
//	                                      after a failover                             fencer, resign reader, Run
//	termSet       terms.go, lease.go      the terms held, each Lease's state, the      campaigner (hold), keeper,
//	                                      releases in flight                           resign reader, health gate,
//	                                                                                   Lease, Run (drain)
//	campaigner    campaign.go,            campaigns, elections and their observers,    Election, Locks, pool
//	              elections.go,           wake-ups received, the leases being          members (acquireDirect),
//	              direct.go               attempted; the one acquire path              wake-ups, Run
//	releaser      release.go              the queue of releases, batching              Lease.Release, campaigner
//	unsure-       giveback.go             the leases of acquires reported failed that  campaigner (note, and
//	Acquires                              may have committed; gives them back          giveBack from its loop)
//	resignReader  resign.go               nothing but its wake-up                      keeper (wakes it), Run
//	holdOffs      resign.go               the leases this process resigned and does    resign reader (add),
//	                                      not take again for a while                   campaigner
//	healthGate    stepdown.go             health state: campaigning allowed,           campaigner, pool members,
//	                                      step-down                                    Renewal, Run
//	poolSet       pools.go                the pools running here, member ids, each     Pool, pool members,
//	                                      Pool's last read and assignment              wake-ups, metrics
//	membership.   internal/membership,    one Run's membership of its pool: its        Pool.Run only
//	Member        member.go (its seam)    member row's lease, acknowledgement and
//	                                      work, the read schedule; no lock, owned
//	                                      by Run's goroutine
//	fencer        fencerenew.go           nothing: the fencing check                   Lease, CheckFence
//	lockSet       locks.go, semaphore.go  the keyed lock namespaces and semaphores     Locks, Semaphore
//	                                      of this process, each key's gate
//	waker         wake.go                 the wake-up transport, the listen loop and   Run, pool members (notify),
//	                                      whether it listens; hands each wake-up to    transport (wakeFor)
//	                                      the campaigner and the pool set
//
// The pool member protocol (join, read, publish, revoke and acknowledge,
// assign, leave, prune, when to read next) is the package
// internal/membership, which declares what it needs from outside as small
// interfaces: its slice of the store, the join of a member row, the
// wake-up of the other members, the start and stop of a generation's
// work, and where reads, failures and rebalance times go. poolRun
// (member.go) implements them with the campaigner, the health gate, the
// pool set, the wake-ups, Run's term loop, events and metrics; Pool.Run
// keeps the loop that steps the member and the public types.
//
// Each owner is handed only the slice of the store it uses (stores.go),
// and test hooks live in one testSignals value, unset in production.
//
// # Inspection
//
// [Admin].Leases and [Admin].Pools read every lease and every pool in the
// database, by the database clock, with one statement each; an [Admin]
// ([NewAdmin]) needs no identity and no Run, and also asks holders to
// resign and checks fencing tokens. The coordinator's methods of the same
// names delegate to its [Coordinator.Admin]. Coordinator.Held and Coordinator.Renewal
// report, without I/O, what this process holds and how its renewals and
// health checks fare: package health builds liveness and readiness checks
// on them, and package status a status page.
//
// # Metrics
//
// [Config].MeterProvider takes an OpenTelemetry MeterProvider
// (go.opentelemetry.io/otel/metric); the package depends on the API only,
// and a nil provider records nothing. The instruments, named under
// "leasehold.", are gauges of whether each lease is held and its epoch
// (attribute "lease"), counters of acquisitions, losses by cause
// (attribute "cause": trust_deadline, late_renewal, session_gone,
// shutdown_timeout, resigned, unhealthy, failover), releases and renewal
// errors, histograms in seconds of renewal and acquire round trips, the
// trust headroom left at each renewal and the handoff gap before an
// acquire, a gauge of the trust left now (session.trust.remaining, which
// falls while renewals stall), a gauge of whether failed health checks
// keep the process from campaigning (health.unhealthy, observed only
// with a HealthCheck), and, per pool (attribute "pool"), gauges of its
// generation, members and assignment and a histogram of rebalance time.
// The gauges are read by a callback registered while Run runs.
// docs/operations.md lists each instrument and the alerts to set.
//
// # Errors
//
// Errors wrap the sentinels in errors.go; compare them with errors.Is. A
// failed fencing check is a [*FenceError] that says what it found.
package coordination
