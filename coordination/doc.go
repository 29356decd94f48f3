// Package coordination elects leaders through the SQL database a service
// already has: named leases with fencing epochs, decided by the database
// clock, all riding on one session row per process.
//
// # Overview
//
// A [Coordinator] is built from a *gorm.DB, the process identity (package
// identity) and a [Config]; [Coordinator.Run] serves until its context
// ends. It hands out:
//
//   - [Election]: a lease at most one process holds, per cluster
//     ([ClusterScope]) or across everyone on the database ([GlobalScope]).
//   - [Pool]: work split over every live process that runs it.
//   - [Locks]: mutual exclusion per key for keys known at run time.
//   - [Semaphore]: at most a limit of holders at once.
//
// [Admin] lists leases, pools and processes, asks a holder to resign and
// checks fencing tokens, from any process. [Coordinator.Subscribe]
// delivers [Event] values, [Coordinator.Renewal] tells how this process
// fares, and [Config].MeterProvider takes OpenTelemetry metrics. The
// package Example runs a cluster singleton.
//
// # Names and rows
//
// A name is 1 to 128 bytes of ASCII letters, digits, '.', '_', '-', ':'
// and '/', where '/' separates non-empty segments other than "." and "..".
// Everything is stored as rows of one lease table, whose keys are what
// [Lease.Key], [Token.Key], [LeaseInfo.Key] and [Event.Key] report:
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
// into a row, and every comparison with "now", is the database's. The
// holder measures only durations, on its monotonic clock: an acquire or
// renewal that started at s and succeeded keeps the lease live for every
// other process until at least s + TTL, so the holder trusts the term
// until
//
//	deadline = s + TTL - Margin
//
// When the deadline passes without a successful renewal the term ends
// (see [Lease]).
//
// # Epochs and fencing
//
// Every acquire increments the lease's epoch in the same statement, so
// epochs of a name only grow and never repeat, also across a failover of
// the database. Renew and release match (session, name, epoch), so a stale
// process never touches a newer term. [Lease.Fence], [Assignment.Fence]
// and [Admin.CheckFence] check inside the caller's transaction that a term
// still holds, and lock its row until the transaction ends, so a paused
// process cannot commit after losing its lease.
//
// # Sessions, cost and wake-ups
//
// One renewal statement per RenewInterval keeps every lease of a process
// alive. Followers read the leases they campaign for with one statement
// per thousand names per RetryInterval, and write only to take what is
// free. Releases that end together go out in batches. Wake-ups make a
// graceful handoff immediate ([Config].DisableNotifications); they are
// hints, and polling goes on.
//
// # Failure handling
//
//   - Transient database errors, also at start: every loop retries at its
//     interval or later, with jitter, and warns once per outage; renewals
//     are retried until the trust deadline.
//   - Confirmed loss (the database shows the session expired): the term
//     ends at once.
//   - Failover of the database (PostgreSQL, MariaDB; SQL Server by the
//     same rule): a holder's terms the new primary does not show end at
//     its first renewal there; nothing is taken for one TTL after the
//     failover is seen, and new epochs go above any the old primary
//     issued. The old primary must be fenced by the failover tool.
//   - Failing work: see [RunOptions]; shutdown: see [Coordinator.Run].
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
//	poolRun (member.go), owned     one Run's membership and the assignment        the registry asks it: key,
//	by Pool.Run's goroutine        worked on                                      wokenBy, observe
//	handles.mu (handles.go)        the handles given out, the running pools       map operations only
//	Locks.mu (locks.go)            a namespace's key gates and its prune time     map operations only
//	listen goroutine (wake.go)     the wake-up transport's listening              delivers names to the loop
//
// Every read or write of another type's unexported fields in this
// package is one of these:
//
//   - of a value fixed at construction: the shared configuration, a
//     handle's key and attributes, a pool's rows and dependencies, the
//     instruments, the channels between owners;
//   - of the loop's state (termState and its parts), on the loop: a handle
//     reaches it only in the operations it hands to call;
//   - of an owner on what it owns: the keeper on its sessions, Locks on
//     its key gates under Locks.mu;
//   - of a message, by the goroutine it was sent to: replies, release
//     tickets, rebinds, health snapshots, a pool run's last read;
//   - of one of the atomics through which owners see each other: the
//     current session and a session's notice and acquire counters (read
//     by the loop), the fenced renewals the fencer adds for the keeper
//     (SQLite), the loop's health snapshot, whether the waker listens.
