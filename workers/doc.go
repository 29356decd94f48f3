// Package workers runs the work of a service that must not run everywhere
// at once: a Host runs any number of workers in one process, on a
// coordination.Coordinator over the SQL database the service already has.
//
// # Which worker for which job
//
//   - ClusterSingleton: one process per cluster at a time, for work that
//     belongs to a region or cluster: a cache warmer, local cleanup.
//   - GlobalSingleton: one process across every cluster that shares the
//     database, for work that must happen once: an outbox publisher.
//   - Limited: at most a limit of processes at once, for work that may run
//     in parallel but not everywhere: calls to a rate-limited partner.
//   - ClusterPartitioned and GlobalPartitioned: every live process of a
//     pool, each with a distinct index of its count, for work that can be
//     split by id % count == index; with coordination.PoolConfig.Partitions,
//     a fixed number of partitions, the function called once per partition
//     owned, and a join or leave moves only what balance requires.
//   - Scheduled: a function run at each slot of a cron expression or an
//     interval, each slot once across every process: a nightly report.
//
// The caller runs the coordinator beside the host:
//
//	coord, err := coordination.New(db, id, coordination.Config{Logger: log})
//	h, err := workers.NewHost(coord, workers.Config{},
//		workers.ClusterSingleton("cache-warmer", warm),
//		workers.GlobalSingleton("outbox", publish),
//	)
//	g.Go(func() error { return coord.Run(ctx) })
//	g.Go(func() error { return h.Run(ctx) })
//
// # Guarantees
//
// A singleton's or limited worker's function is called only while this
// process holds the worker's lease and trusts it. Its context is cancelled
// Margin before anyone else could take the lease, and the lease is
// released only after it has returned. Fence each transaction that
// commits work with lease.Fence(tx), so that a process resumed after a
// long pause commits nothing under a stale term. A partitioned worker's
// function gets a coordination.Assignment: no index or partition is worked
// on by two processes at overlapping times, and a.Fence(tx) commits only
// while the assignment is current.
//
// # Scheduled workers
//
// A scheduled worker holds the global election "schedule/<name>" (lease
// ScheduleLease(name)) and runs the slots of its ScheduleConfig, computed
// against the database clock. The job's progress and history, a
// ScheduleState, live in that lease row, written only under the current
// term. At a slot the holder claims it, calls the function with a Slot and
// records the outcome: nil completes the slot, an error or a panic fails
// it, and either way it is over; Slot.Complete(tx) commits the completion
// with the function's own transaction. A slot whose term ended mid-run is
// run again by the next holder (InterruptRetry: at least once) or recorded
// as abandoned (InterruptAbandon); slots missed altogether follow
// MisfirePolicy. Key side effects on Slot.Time, commit them with
// Slot.Complete, or fence them with Slot.Lease().Fence(tx).
//
// # Restarts and panics
//
// A worker never stops the host. On the term loops of package coordination,
// with Config's backoff:
//
//   - an error or a panic (recovered, with its stack) while the term is
//     valid is reported as EventWorkerError, and the function is called
//     again under the same term after RestartBackoff, doubling up to
//     MaxRestartBackoff;
//   - a nil return while the term is valid ends its work for the term: the
//     lease is released and the worker campaigns again after
//     RestartBackoff (a partitioned worker's assignment idles until the
//     next generation);
//   - when the term ends, the function's context is cancelled; once it has
//     returned, the lease is released and EventStoppedLeading says why.
//
// # Shutdown
//
// Cancelling the context of Host.Run cancels every worker function's
// context and waits, at most the coordinator's ShutdownTimeout, for them to
// return; each lease is released once its function returned. A function
// still running then is reported as EventShutdownOverrun, and Run returns
// an error wrapping ErrShutdownOverrun: its lease expires after TTL.
//
// # Events and errors
//
// Host.Subscribe delivers the workers' events without ever blocking a
// worker; Host.Status reports the terms held and the assignments now.
// Errors wrap ErrShutdownOverrun or a sentinel of package coordination; a
// panic becomes a *coordination.PanicError.
package workers
