// Package workers runs the work of a service that must not run everywhere
// at once: a Host runs any number of workers in one process, on top of one
// coordination.Coordinator and the SQL database the service already has.
//
// # Which worker for which job
//
//   - ClusterSingleton: one process per cluster (identity.Identity.Cluster)
//     at a time. For work that belongs to a region or cluster: a cache
//     warmer for the cluster's local cache, a scheduled job that runs once
//     per region, cleanup of cluster-local resources.
//   - GlobalSingleton: one process across every cluster that shares the
//     database. For work that must happen exactly once overall: an outbox
//     publisher, a billing run, a report sent once a day.
//   - Limited: at most a limit of processes at once, across every cluster
//     (coordination.Semaphore). For work that may run in parallel but not
//     everywhere: exports that load a shared system, calls to a rate
//     limited partner.
//   - ClusterPartitioned and GlobalPartitioned: every live process of a
//     pool (of this cluster, or of every cluster), each with a distinct
//     index of the pool's count, for work that can be split: batch
//     processing by id % count == index, projections or consumers sharded
//     by key.
//   - ClusterSticky and GlobalSticky: partitioned workers over a fixed
//     number of partitions (StickyConfig.Partitions, say 256) spread over
//     the live processes, the function called once per owned partition. A
//     join or leave moves only the partitions balance requires, and the
//     others keep running through it: for partitions with state or
//     caches worth keeping, such as consumers of partitioned streams.
//   - Scheduled: a function run at each slot of a cron expression or an
//     interval, each slot once across every process that shares the
//     database. For periodic jobs: a nightly report, an hourly cleanup.
//
// A host is built from a *gorm.DB, the process identity and a Config:
//
//	h, err := workers.NewHost(db, id, workers.Config{Coordination: coordination.Config{Logger: log}},
//		workers.ClusterSingleton("cache-warmer", warm),
//		workers.GlobalSingleton("outbox", publish),
//	)
//	g.Go(func() error { return h.Run(ctx) })
//
// # Guarantees
//
// A singleton's function runs only while this process holds the worker's
// lease (see package coordination): at most one process per lease trusts
// it at any moment, by the database clock, and the function's context is
// cancelled Margin before anyone else could take the lease over. The
// lease's epoch is a fencing token: check it with lease.Fence(tx) inside
// each transaction that commits work, and call lease.Valid() before each
// unit of work, so that a process resumed after a long pause does nothing
// under a stale term. The host checks Valid itself before every call of
// the function.
//
// A lease is released only after the function has returned, never while
// it still runs, so the next holder's function starts after this one's
// returned.
//
// A partitioned worker's function gets an Assignment: Index of Count in a
// pool generation. Within a generation the indexes are distinct and cover
// 0..Count-1, and Count is the number of members in it. A new generation
// starts only after every member has stopped the previous one (see
// coordination.Pool), so no index is worked on by two processes at
// overlapping times; members that stay keep their relative order.
// a.Fence(tx) makes a transaction commit only while its generation is
// current and this process holds its membership. Host.Status reports each
// pool as the database sees it. All memberships and leases of a host are
// renewed by one statement per tick, however many workers it runs.
//
// A sticky worker's function gets a coordination.Partition, one call per
// partition this process owns; it runs until the partition moves to
// another process, and a partition starts on its new owner only after the
// old owner's call returned (or its membership expired by the database
// clock). pt.Fence(tx) makes a transaction commit only while the
// partition is still this process's. EventPartitionStarted and
// EventPartitionStopped report each partition, and Host.Status lists the
// partitions the process works on (PoolStatus.Partitions).
//
// # Scheduled workers
//
// A scheduled worker (Scheduled) is a global election, "schedule/<name>"
// (lease ScheduleLease(name); no GlobalSingleton should take that name),
// whose holder runs the slots of its ScheduleConfig: a cron expression
// (github.com/robfig/cron/v3, UTC unless CRON_TZ= names a zone) or an
// interval (the multiples of Every since the Unix epoch). The job's
// progress, a ScheduleState, lives in the data of that lease row: the
// latest slot that is over, the next slot, the run in progress, and the
// latest HistoryLimit runs (slot, holder, epoch, attempt, start, end,
// outcome). Only the current term writes it (coordination.Lease.SetData
// and SetDataIn), so a paused or partitioned ex-holder can never record
// anything once another term began.
//
// Slots are computed against the database clock: the holder reads it with
// the row when its term starts and again when a wait for a slot ends, and
// measures the time between on its monotonic clock, so copies whose
// clocks disagree still agree on the slots. At a slot the holder claims
// it (records it as running, under the term), calls the function with a
// Slot, and records the outcome. A function that returns nil completes the
// slot; one that returns an error or panics fails it; either way the slot
// is over. Slot.Complete(tx) records the completion inside the function's
// own transaction, fenced by the term: the side effects and the completion
// commit together or not at all.
//
// When the holder's term ends mid-run (it died, was paused past its term,
// lost the database, or shut down), the next holder finds the claim and
// applies InterruptPolicy: InterruptRetry runs the slot again (at least
// once; a completion committed with Slot.Complete is never run again),
// InterruptAbandon records it as abandoned. Slots missed altogether (every
// copy down, a long pause) follow MisfirePolicy: run the latest once, skip
// them, or run up to CatchUpLimit of them in order. A slot that starts
// within MisfireGrace of its time is on time and always runs.
//
// Execution is at least once with InterruptRetry: make a slot's side
// effects idempotent by keying them on Slot.Time (the same for every
// attempt), or commit them with Slot.Complete in one transaction, or
// fence them with Slot.Fence and Slot.Epoch. Host.Status, the status page
// and the leasehold command show each job's next slot and history.
//
// # Restarts, backoff and panics
//
// The host never dies of a worker: a panic in a worker function is
// recovered, logged with its stack and treated as an error. Workers run on
// the term loops of package coordination (Election.Run and Pool.Run, with
// Config's backoff as their coordination.RunOptions), so elections, pools
// and workers share one policy.
//
//   - The function returns an error or panics while its term is valid: the
//     error is logged and reported as EventWorkerError, and the function is
//     called again under the same term after RestartBackoff. The wait
//     doubles with each consecutive failure up to MaxRestartBackoff, and
//     starts over after a run that lasted longer than MaxRestartBackoff.
//   - The function returns nil while its term is valid: its work for this
//     term is done. The lease is released and the worker campaigns again
//     after RestartBackoff, so this or another process picks the job up.
//   - The term ends (trust deadline passed, lease lost, host shutting
//     down): the function's context is cancelled; once it has returned the
//     lease is released, EventStoppedLeading says why, and the worker
//     campaigns again unless the host is stopping.
//
// # Shutdown
//
// Cancelling the context of Host.Run:
//
//  1. stops campaigning and cancels every worker function's context;
//  2. waits for the functions to return, while the coordinator keeps
//     renewing the leases still held; each lease is released right after
//     its function returned;
//  3. waits for the coordinator to stop, which it does once every lease
//     is released;
//  4. returns nil.
//
// Steps 2 and 3 are bounded by Config.Coordination.ShutdownTimeout. A
// function still running then is logged as an error naming the worker and
// reported as EventShutdownOverrun, and Run returns an error wrapping
// ErrShutdownOverrun. Its goroutine is left running and its lease is not
// released, because the function may still be acting: the lease expires
// after TTL. Should the function return later, its lease is then released.
//
// # Notifications
//
// Host.Subscribe delivers Event values without ever blocking a worker: in
// order per subscriber, dropping new events while a subscriber's buffer is
// full and counting them in the next delivered event's Dropped field. The
// one stream carries the coordinator's events too (EventCoordination),
// each tagged with the worker whose election or pool it concerns.
// Channels close when Run returns. Host.Status reports the terms held and
// the assignments in effect now.
//
// # Errors
//
// Errors wrap the sentinels in errors.go; compare them with errors.Is. A
// panic becomes a *PanicError carrying the value and the stack.
package workers
