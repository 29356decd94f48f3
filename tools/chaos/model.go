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
