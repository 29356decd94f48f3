// Package chaos is the fault-injection suite: it runs copies of a small
// worker binary (./chaos/worker of the tools module) as separate OS
// processes against a real database, injects faults (SIGKILL,
// SIGSTOP/SIGCONT, a database restart, a network cut or latency through
// each worker's own TCP proxy, a worker exhausting its own connection
// pool, a worker's wall clock set hours off, a failover of a replicated
// PostgreSQL pair; see Kinds), and checks the histories the processes
// recorded with package internal/history.
package chaos

import (
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/workers"
)

// Timing of the worker processes. They are short so that a failover takes
// seconds.
const (
	TTL           = 2 * time.Second
	RenewInterval = 500 * time.Millisecond
	RetryInterval = 200 * time.Millisecond
	Margin        = 400 * time.Millisecond
	// PollInterval is the partitioned worker's pool poll interval.
	PollInterval = RetryInterval
	// ShutdownTimeout bounds a worker's graceful stop.
	ShutdownTimeout = 3 * time.Second
	// LedgerEvery is the period of the ledger's fenced appends.
	LedgerEvery = 50 * time.Millisecond
	// ItemEvery is the period at which a pool member processes one item.
	ItemEvery = 30 * time.Millisecond
)

// Names of the workers, their leases and the written resources.
const (
	LedgerWorker = "ledger"
	ItemsWorker  = "items"
	LedgerLease  = "global/" + LedgerWorker
	ItemsPool    = "global/" + ItemsWorker
	// Cluster is the cluster name of every worker process.
	Cluster = "chaos"
)

// The keyed locks, the semaphore, the scheduled job and the sticky pool
// every worker also runs. They are light: on SQLite every fenced write
// takes the file's one write lock, beside the ledger's and the items'.
const (
	// LocksName is the namespace of the keyed locks: each worker holds
	// one of LockKeys keys at a time, picked at random, for LockHold with
	// one fenced write, then waits LockPause.
	LocksName = "chaos-locks"
	LockKeys  = 4
	LockHold  = 150 * time.Millisecond
	LockPause = 100 * time.Millisecond
	// SemaphoreWorker is the workers.Limited worker of limit
	// SemaphoreLimit: a worker holding one of its slots makes a fenced
	// write every SemaphoreEvery and gives the slot back after
	// SemaphoreHold.
	SemaphoreWorker = "chaos-sem"
	SemaphoreKey    = "global/" + SemaphoreWorker
	SemaphoreLimit  = 2
	SemaphoreEvery  = 250 * time.Millisecond
	SemaphoreHold   = time.Second
	// ScheduleWorker is the scheduled job: a slot every ScheduleEvery,
	// missed slots all run, late (workers.MisfireRunAll: a runner
	// stalled past the misfire grace by the machine's load catches up
	// rather than skipping them), each completed with a fenced insert of
	// its SlotRow.
	ScheduleWorker = "chaos-tick"
	ScheduleEvery  = time.Second
	// StickyPool is the sticky pool of StickyPartitions partitions: the
	// owner of a partition makes a fenced write every StickyEvery.
	StickyPool       = "chaos-sticky"
	StickyPartitions = 16
	StickyEvery      = time.Second
)

// ScheduleLease is the lease of the scheduled job.
var ScheduleLease = workers.ScheduleLease(ScheduleWorker)

// GrantRow is one fenced write under a keyed lock's key, a semaphore's
// slot or a sticky partition: Resource names which, Epoch is the grant's
// epoch (a sticky partition's Since generation).
type GrantRow struct {
	ID       int64  `gorm:"primaryKey"`
	Resource string `gorm:"size:200;not null"`
	Epoch    int64  `gorm:"not null"`
	Holder   string `gorm:"size:200;not null"`
}

// TableName is chaos_grants.
func (GrantRow) TableName() string { return "chaos_grants" }

// SlotRow is the completion of one slot of the scheduled job, inserted
// in the transaction that completes it. Slot is the slot's time by the
// database clock, in Unix nanoseconds. There is no unique key on Slot:
// a slot completed twice shows as two rows, and the checker reports it.
type SlotRow struct {
	ID     int64  `gorm:"primaryKey"`
	Slot   int64  `gorm:"not null"`
	Epoch  int64  `gorm:"not null"`
	Holder string `gorm:"size:200;not null"`
}

// TableName is chaos_slots.
func (SlotRow) TableName() string { return "chaos_slots" }

// CoordinationConfig is the coordination configuration of every worker.
func CoordinationConfig() coordination.Config {
	return coordination.Config{
		TTL:             TTL,
		RenewInterval:   RenewInterval,
		RetryInterval:   RetryInterval,
		Margin:          Margin,
		ShutdownTimeout: ShutdownTimeout,
	}
}

// Item is one row of the seeded work of the partitioned worker. Member
// Index of Count processes the items with ID % Count == Index, one per
// fenced transaction.
type Item struct {
	ID          int64  `gorm:"primaryKey;autoIncrement:false"`
	ProcessedBy string `gorm:"size:200;not null;default:''"`
	Generation  int64  `gorm:"not null;default:0"`
}

// TableName is chaos_items.
func (Item) TableName() string { return "chaos_items" }

// LedgerRow is one append of the global singleton, made under a fenced
// transaction.
type LedgerRow struct {
	ID     int64  `gorm:"primaryKey"`
	Epoch  int64  `gorm:"not null"`
	Holder string `gorm:"size:200;not null"`
}

// TableName is chaos_ledger.
func (LedgerRow) TableName() string { return "chaos_ledger" }
