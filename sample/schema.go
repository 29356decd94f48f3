package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// order is one row of sample_orders: a unit of work of the partitioned
// "orders" worker. ProcessedBy is NULL until a member processes it.
type order struct {
	ID                  int64   `gorm:"column:id;primaryKey;autoIncrement:false"`
	ProcessedBy         *string `gorm:"column:processed_by;size:255"`
	ProcessedEpoch      int64   `gorm:"column:processed_epoch;not null;default:0"`
	ProcessedGeneration int64   `gorm:"column:processed_generation;not null;default:0"`
}

func (order) TableName() string { return "sample_orders" }

// processing is one row of sample_processing, the audit log of the orders
// worker: one row per order actually updated. An order with two rows would
// have been processed twice.
type processing struct {
	ID         int64  `gorm:"column:id;primaryKey;autoIncrement"`
	OrderID    int64  `gorm:"column:order_id;not null;index:idx_sample_processing_order"`
	Member     string `gorm:"column:member;size:255;not null"`
	Generation int64  `gorm:"column:generation;not null"`
}

func (processing) TableName() string { return "sample_processing" }

// ledgerRow is one row of sample_ledger, appended by the global "ledger"
// singleton under a fenced transaction.
type ledgerRow struct {
	ID     int64  `gorm:"column:id;primaryKey;autoIncrement"`
	Epoch  int64  `gorm:"column:epoch;not null"`
	Holder string `gorm:"column:holder;size:255;not null"`
	AtUS   int64  `gorm:"column:at_us;not null"`
}

func (ledgerRow) TableName() string { return "sample_ledger" }

// timelineRow is one row of sample_timeline: something a person can follow,
// from the host's events, the cluster reports, and the demo.
type timelineRow struct {
	ID         int64  `gorm:"column:id;primaryKey;autoIncrement"`
	AtUS       int64  `gorm:"column:at_us;not null;index:idx_sample_timeline_at"`
	Node       string `gorm:"column:node;size:128;not null"`
	Cluster    string `gorm:"column:cluster;size:63;not null"`
	Holder     string `gorm:"column:holder;size:255;not null"`
	Kind       string `gorm:"column:kind;size:64;not null"`
	Worker     string `gorm:"column:worker;size:128;not null"`
	Epoch      int64  `gorm:"column:epoch;not null"`
	Generation int64  `gorm:"column:generation;not null"`
	Idx        int    `gorm:"column:idx;not null"`
	Cnt        int    `gorm:"column:cnt;not null"`
	Detail     string `gorm:"column:detail;size:1024;not null"`
}

func (timelineRow) TableName() string { return "sample_timeline" }

// maxDetail is the longest detail stored in the timeline.
const maxDetail = 1000

// Timeline kinds written by the sample itself, besides the host's event
// kinds (started-leading, stopped-leading, assignment-started, …).
const (
	kindProcessStart = "process-start"
	kindProcessStop  = "process-stop"
	kindReport       = "report"
)

// setupTables creates the sample's tables and seeds the orders, retrying
// every retry until it succeeds or ctx ends: the database may be down at
// start, or another copy may be migrating at the same moment.
func setupTables(ctx context.Context, db *gorm.DB, orders int, retry time.Duration, log *zap.Logger) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		seeded, err := migrateAndSeed(ctx, db, orders)
		if err == nil {
			if seeded > 0 {
				log.Info("seeded orders", zap.Int("orders", seeded))
			}
			return nil
		}
		log.Warn("setting up the sample tables failed; retrying", zap.Int("attempt", attempt),
			zap.Duration("retry_in", retry), zap.Error(err))
		t.Reset(retry)
	}
}

// migrateAndSeed creates the tables and inserts orders 1..n when
// sample_orders is empty. It reports how many orders it inserted. Copies
// that seed at once insert the same ids, and ON CONFLICT DO NOTHING makes
// that harmless.
func migrateAndSeed(ctx context.Context, db *gorm.DB, n int) (int, error) {
	db = db.WithContext(ctx)
	migrate := func(tx *gorm.DB) error { return tx.AutoMigrate(&order{}, &processing{}, &ledgerRow{}, &timelineRow{}) }
	var err error
	if db.Name() == "sqlite" {
		// In one transaction, which takes the write lock when it begins
		// (_txlock=immediate): gorm's checks for a table or an index
		// count a failed read as "missing", and another copy's DDL
		// (leasehold's migration, say) cannot run beside them then.
		err = db.Transaction(migrate)
	} else {
		err = migrate(db)
	}
	if err != nil {
		return 0, fmt.Errorf("create the sample tables: %w", err)
	}
	var count int64
	if err := db.Model(&order{}).Count(&count).Error; err != nil {
		return 0, fmt.Errorf("count sample_orders: %w", err)
	}
	if count > 0 || n == 0 {
		return 0, nil
	}
	const batch = 500
	rows := make([]order, 0, batch)
	inserted := 0
	err = db.Transaction(func(tx *gorm.DB) error {
		inserted = 0
		for id := 1; id <= n; id++ {
			rows = append(rows, order{ID: int64(id)})
			if len(rows) == batch || id == n {
				res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows)
				if res.Error != nil {
					return res.Error
				}
				inserted += int(res.RowsAffected)
				rows = rows[:0]
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("seed %d orders: %w", n, err)
	}
	return inserted, nil
}
