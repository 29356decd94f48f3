package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
)

// store is the demo's own access to the sample's database: its handle,
// with which it reads the orders, the ledger and the timeline and writes
// its own timeline rows, and an admin client that reads the leases and
// the pool.
type store struct {
	db    *gorm.DB
	admin *coordination.Admin // reads leases and pools; no identity, never migrates
}

// ordersPool is the key of the sample's partitioned worker's pool.
const ordersPool = "global/orders"

// open opens the demo's own handle on the database at dsn, and an admin
// client on its coordination tables.
func (s *store) open(dsn string) error {
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	s.db = db
	s.admin, err = coordination.NewAdmin(db, coordination.Config{})
	return err
}

// close closes the handle, if open.
func (s *store) close() {
	if s.db == nil {
		return
	}
	if sqlDB, err := s.db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	s.db = nil
}

// dbError marks errors of database reads, which waitFor retries.
type dbError struct{ err error }

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }

func isDBError(err error) bool {
	var de dbError
	return errors.As(err, &de)
}

// scan runs a query that returns one value into dest.
func (s *store) scan(ctx context.Context, dest any, query string, args ...any) error {
	if err := s.db.WithContext(ctx).Raw(query, args...).Scan(dest).Error; err != nil {
		return dbError{fmt.Errorf("%s: %w", query, err)}
	}
	return nil
}

// processed returns how many orders are processed.
func (s *store) processed(ctx context.Context) (int64, error) {
	var n int64
	err := s.scan(ctx, &n, "SELECT COUNT(*) FROM sample_orders WHERE processed_by IS NOT NULL")
	return n, err
}

// lease reads one lease row.
func (s *store) lease(ctx context.Context, name string) (coordination.LeaseInfo, error) {
	ls, err := s.admin.Leases(ctx)
	if err != nil {
		return coordination.LeaseInfo{}, dbError{err}
	}
	for _, l := range ls {
		if l.Key == name {
			return l, nil
		}
	}
	return coordination.LeaseInfo{Key: name}, nil
}

// leader returns the node holding a live lease, or notYet.
func (s *store) leader(ctx context.Context, name string) (string, coordination.LeaseInfo, error) {
	l, err := s.lease(ctx, name)
	if err != nil {
		return "", l, err
	}
	if !l.Live {
		return "", l, notYet("no live holder of %s", name)
	}
	id, err := identity.ParseHolder(l.Holder)
	if err != nil {
		return "", l, err
	}
	return id.Node, l, nil
}

// assignment is one node's share of a pool generation, from the timeline.
type assignment struct {
	Node string
	Idx  int
	Cnt  int
}

// workingGeneration checks that the pool's current generation has count
// members and that each of them reported its assignment (it is working).
func (s *store) workingGeneration(ctx context.Context, count int) (int64, []assignment, error) {
	pools, err := s.admin.Pools(ctx)
	if err != nil {
		return 0, nil, dbError{err}
	}
	var st coordination.PoolState
	for _, p := range pools {
		if p.Key == ordersPool {
			st = p
		}
	}
	if len(st.List) != count {
		return 0, nil, notYet("orders pool generation %d has %d members, want %d", st.Generation, len(st.List), count)
	}
	var as []assignment
	err = s.db.WithContext(ctx).Raw("SELECT node, idx, cnt FROM sample_timeline "+
		"WHERE kind = 'assignment-started' AND worker = 'orders' AND generation = ? ORDER BY idx", st.Generation).
		Scan(&as).Error
	if err != nil {
		return 0, nil, dbError{err}
	}
	if len(as) != count {
		return 0, nil, notYet("%d of %d members of orders generation %d are working", len(as), count, st.Generation)
	}
	return st.Generation, as, nil
}

func formatAssignments(as []assignment) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("%s %d/%d", a.Node, a.Idx, a.Cnt)
	}
	return strings.Join(parts, ", ")
}
