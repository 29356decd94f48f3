package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// Timing of the workers.
const (
	// reportEvery is the cluster report's period.
	reportEvery = time.Second
	// ledgerEvery is the period of the ledger's appends.
	ledgerEvery = 200 * time.Millisecond
	// batchSize is the most orders one fenced transaction processes.
	batchSize = 25
	// idlePoll is how often a member with nothing left to do looks for
	// new orders of its index.
	idlePoll = 500 * time.Millisecond
	// fencedWait bounds the wait for the host to end an assignment whose
	// fencing check failed, before the failure is returned as an error.
	fencedWait = 10 * time.Second
)

// service holds what the three worker functions share.
type service struct {
	db        *gorm.DB
	id        identity.Identity
	holder    string
	log       *zap.Logger
	workDelay time.Duration
}

// clusterReport is the cluster singleton "cluster-report": while this
// process leads its cluster, it logs a short report every second and
// writes it to the timeline in a fenced transaction.
func (s *service) clusterReport(ctx context.Context, lease *coordination.Lease) error {
	log := s.log.With(zap.String("worker", "cluster-report"), zap.Int64("epoch", lease.Epoch()))
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		if !lease.Valid() {
			return nil // the term is over; ctx ends at once
		}
		var total, done, ledger, ledgerEpoch int64
		db := s.db.WithContext(ctx)
		err := errors.Join(
			db.Model(&order{}).Count(&total).Error,
			db.Model(&order{}).Where("processed_by IS NOT NULL").Count(&done).Error,
			db.Model(&ledgerRow{}).Count(&ledger).Error,
			db.Model(&ledgerRow{}).Select("COALESCE(MAX(epoch), 0)").Scan(&ledgerEpoch).Error,
		)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cluster report: %w", err)
		}
		detail := fmt.Sprintf("orders %d/%d processed, ledger %d rows (epoch %d)", done, total, ledger, ledgerEpoch)
		log.Info("cluster report: " + detail)
		row := s.row(kindReport, "cluster-report", detail)
		row.Epoch = lease.Epoch()
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := lease.Fence(tx); err != nil {
				return err
			}
			return tx.Create(&row).Error
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cluster report: %w", err)
		}
	}
}

// ledger is the global singleton "ledger": while this process leads, it
// appends a row every 200 ms, each in a transaction that first checks the
// lease with Fence, so a stale leader can never append.
func (s *service) ledger(ctx context.Context, lease *coordination.Lease) error {
	t := time.NewTicker(ledgerEvery)
	defer t.Stop()
	for {
		if !lease.Valid() {
			return nil // the term is over; ctx ends at once
		}
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := lease.Fence(tx); err != nil {
				return err
			}
			return tx.Create(&ledgerRow{Epoch: lease.Epoch(), Holder: s.holder, AtUS: time.Now().UnixMicro()}).Error
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ledger append at epoch %d: %w", lease.Epoch(), err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// orders is the partitioned worker "orders": each member processes the
// unprocessed orders with id % Count = Index, in batches of up to 25, each
// batch in one transaction that first checks the assignment with Fence.
func (s *service) orders(ctx context.Context, a coordination.Assignment) error {
	log := s.log.With(zap.String("worker", "orders"), zap.Int64("generation", a.Generation),
		zap.Int("index", a.Index), zap.Int("count", a.Count))
	var work *time.Timer // the simulated work per order
	if s.workDelay > 0 {
		work = time.NewTimer(s.workDelay)
		defer work.Stop()
	}
	var idle *time.Ticker // created when the index runs dry
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	processed, wasIdle := 0, false
	for {
		if ctx.Err() != nil {
			return nil
		}
		if !a.Valid() {
			// Membership is no longer trusted: the host ends ctx now.
			<-ctx.Done()
			return nil
		}
		var ids []int64
		err := s.db.WithContext(ctx).Model(&order{}).
			Where("processed_by IS NULL AND id % ? = ?", a.Count, a.Index).
			Order("id").Limit(batchSize).Pluck("id", &ids).Error
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("orders: select a batch for index %d of %d: %w", a.Index, a.Count, err)
		}
		if len(ids) == 0 {
			if !wasIdle {
				log.Info("no unprocessed orders left for this index; waiting for new ones", zap.Int("processed", processed))
				wasIdle = true
			}
			if idle == nil {
				idle = time.NewTicker(idlePoll)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-idle.C:
			}
			continue
		}
		wasIdle = false
		for range ids {
			if work == nil {
				break
			}
			work.Reset(s.workDelay)
			select {
			case <-ctx.Done():
				return nil // nothing of this batch was committed
			case <-work.C:
			}
		}
		n, err := s.commitBatch(ctx, a, ids)
		switch {
		case err == nil:
			processed += n
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, coordination.ErrFenced):
			// A newer generation was published (or membership ended): the
			// host ends this assignment within a poll interval.
			log.Info("batch fenced off; waiting for the new assignment", zap.Error(err))
			if waitDone(ctx, fencedWait) {
				return nil
			}
			return fmt.Errorf("orders: still assigned %v after a failed fencing check: %w", fencedWait, err)
		default:
			return fmt.Errorf("orders: process a batch of %d for index %d of %d: %w", len(ids), a.Index, a.Count, err)
		}
	}
}

// commitBatch marks the orders ids as processed by this member in one
// fenced transaction and logs one audit row per order it actually
// updated. It reports how many that was.
func (s *service) commitBatch(ctx context.Context, a coordination.Assignment, ids []int64) (int, error) {
	n := 0
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		n = 0
		if err := a.Fence(tx); err != nil {
			return err
		}
		for _, id := range ids {
			res := tx.Exec("UPDATE sample_orders SET processed_by = ?, processed_epoch = ?, processed_generation = ? "+
				"WHERE id = ? AND processed_by IS NULL", s.holder, a.Epoch, a.Generation, id)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				continue
			}
			if err := tx.Create(&processing{OrderID: id, Member: s.holder, Generation: a.Generation}).Error; err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// waitDone waits until ctx ends or d passes; it reports whether ctx ended.
func waitDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

// row returns a timeline row about this process, stamped now.
func (s *service) row(kind, worker, detail string) timelineRow {
	if len(detail) > maxDetail {
		detail = detail[:maxDetail]
	}
	return timelineRow{
		AtUS: time.Now().UnixMicro(), Node: s.id.Node, Cluster: s.id.Cluster, Holder: s.holder,
		Kind: kind, Worker: worker, Detail: detail,
	}
}
