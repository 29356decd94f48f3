// Package leaseholdtest runs leasehold on an in-process database, so that
// tests of your own leader and pool code run on testing/synctest fake
// time, in milliseconds, whatever the TTLs. Time is deterministic there;
// the order in which the processes' goroutines run is not.
//
// # Use
//
// Create a DB with New inside the function given to synctest.Test, and
// start processes on it: Start for a coordination.Coordinator, StartHost
// for a workers.Host with your workers. Each process gets a fresh
// coordinator, as coordination.New and workers.NewHost build it, checked
// the same way, and runs until Stop, Crash or the end of the test:
//
//	func TestLedger(t *testing.T) {
//		synctest.Test(t, func(t *testing.T) {
//			kit := leaseholdtest.New(t)
//			a := kit.StartHost(kit.Identity("node-a", "eu"), workers.Config{},
//				workers.GlobalSingleton("ledger", runLedger))
//			time.Sleep(5 * time.Second) // fake time: returns at once
//			a.Pause(time.Minute)        // beyond the TTL
//			...
//		})
//	}
//
// Inside the bubble every wait of leasehold (renewals every TTL/3,
// expiries, polls every RetryInterval, rebalances) is on fake time, so the
// default configuration (TTL 15s) costs no wall time. time.Sleep in the
// test moves the clock; synctest.Wait lets every process settle.
//
// # The race detector
//
// Under go test -race, Go (seen on 1.26.8) can crash a test binary with
// SIGSEGV in ThreadSanitizer when two threads run timers of the same
// synctest bubble at once; any bubble with two busy goroutines, such as
// two processes of this kit, can meet it. Until Go fixes it, run such
// tests with one P under -race: GOMAXPROCS=1 go test -race, or
// runtime.GOMAXPROCS(1) in the package's TestMain, as this package's own
// tests do. The race detector still checks every goroutine.
//
// # Faults
//
//   - DB.Expire ends a lease now as far as its holder can keep it.
//   - Process.Pause holds a process's statements beyond its TTL, as a
//     process stopped by SIGSTOP.
//   - DB.Cut and DB.Restore take the database away from every process
//     and bring it back; Process.Cut and Process.Restore do it for one.
//   - Process.Crash ends a process without releasing anything, as SIGKILL.
//   - DB.Resign asks a lease's holder to step down, as `leasehold resign`.
//   - DB.Rebalance forces a pool through a rebalance with its members.
//
// # What the in-process database is
//
// It keeps the rows leasehold keeps in its tables (internal/memstore), and
// decides every statement under the same conditions as the SQL statements
// of each supported database; the store conformance suite runs the same
// cases on it and on PostgreSQL, MySQL/MariaDB and SQLite, so what a test
// sees here is what a database would give. Its clock is time.Now. It
// carries no wake-ups: its processes find a released lease or a pool's
// change at their next poll (every RetryInterval, a pool's PollInterval),
// as with DisableNotifications on a database. It has no failovers.
//
// Fencing (Lease.Fence, Assignment.Fence, Coordinator.CheckFence) needs,
// as on a database, the handle of a transaction: that of the test's own
// database, such as SQLite in memory, where your code writes. The check
// itself is made against the in-process database at the moment of the
// call, and locks nothing: on a database the check locks the lease row
// until the transaction ends, so no takeover can happen between the check
// and the commit; here one could, if the test let fake time pass inside
// the transaction. Fence's renewal inside the transaction on SQLite is
// not modelled either. A Fence that returns nil still means that the term
// was current at the check.
package leaseholdtest
