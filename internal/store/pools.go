package store

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/wake"
)

// The rows of partitioned pools: generations and memberships.

// SetData writes data into a row this session holds at this epoch, while
// the session is live; it reports false when the term is over. Unless
// wakeName is "", the write wakes the processes for that name (on
// PostgreSQL in the same statement, at commit; through OnRelease after
// it).
func (s *Store) SetData(ctx context.Context, session string, t Term, data, wakeName string) (bool, error) {
	set := s.sql.dl().pools().sqlSetData(s.tables, session, t, data)
	var n int64
	write := counted{stmt: set}
	if wakeName != "" {
		write = s.sql.dl().writeNotify(s.tables, set, wake.Payload([]string{wakeName}))
	}
	err := s.conns.run(ctx, s.conns.general, func(db *gorm.DB) (err error) {
		n, err = execCounted(db, write)
		return err
	})
	ok := n == 1
	if err == nil && !ok {
		// MySQL without clientFoundRows counts an unchanged row as 0: read
		// back.
		var rows []Row
		if rows, err = s.Get(ctx, []string{t.Name}); err != nil {
			return false, err
		}
		ok = len(rows) == 1 && rows[0].Session == session && rows[0].Epoch == t.Epoch && rows[0].Live() && rows[0].Data == data
	}
	if ok && wakeName != "" {
		s.released.after(1, 1, func(int) string { return wakeName })
	}
	return ok, err
}

// SetDataIn writes data into a row this session holds at this epoch, while
// the session is live, inside the caller's transaction tx: the statement
// of SetData on tx, after a fencing read (Fence) locked the row. It
// reports false when the term is over. MySQL without clientFoundRows
// counts an unchanged row as 0; the row is then read back in tx.
func (s *Store) SetDataIn(tx *gorm.DB, session string, t Term, data string) (bool, error) {
	n, err := exec(tx, s.sql.dl().pools().sqlSetData(s.tables, session, t, data))
	if err != nil || n == 1 {
		return n == 1, err
	}
	rows, err := queryRows(tx, s.sql.dl().leases().sqlFence(s.tables, t.Name))
	if err != nil {
		return false, err
	}
	ok := len(rows) == 1 && rows[0].Session == session && rows[0].Epoch == t.Epoch && rows[0].Live() && rows[0].Data == data
	return ok, nil
}

// Publish moves an unheld row (a pool's generation row) from epoch from to
// from+1 (or above the incarnation's floor, incarnation.go) with new data,
// only if it is still at from: a compare-and-set. After a failover of the
// database it publishes nothing until the hold-off has passed.
func (s *Store) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	var n int64
	err := s.conns.run(ctx, s.conns.general, func(db *gorm.DB) (err error) {
		if err := s.failover.ensureIncarnation(db); err != nil {
			return err
		}
		n, err = exec(db, s.sql.dl().pools().sqlPublish(s.tables, name, from, data))
		return err
	})
	return n == 1, err
}

// PruneDead deletes the rows whose name starts with prefix (byte for byte)
// that nobody holds or is about to hold: unheld for longer than grace, or
// held by a session expired (or gone) for longer than grace. It returns how
// many it deleted. Pools use it for the member rows of processes that left
// or died, whose names (by instance id) are never used again.
func (s *Store) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	lo, hi, err := prefixRange(prefix)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
		if !s.sql.dl().lockFirst() {
			n, err = exec(db, s.sql.dl().pools().sqlPruneDead(s.tables, lo, hi, grace))
			return err
		}
		// Lock the rows that look dead, then delete those still dead on a
		// snapshot taken after the locks (dialect.lockFirst).
		return s.conns.decideTx(db, func(tx *gorm.DB) (err error) {
			dead, err := lockNames(tx, s.sql.dl().pools().sqlLockDead(s.tables, lo, hi, grace))
			if err != nil || len(dead) == 0 {
				return err
			}
			n, err = exec(tx, s.sql.dl().pools().sqlPruneNames(s.tables, dead, grace))
			return err
		})
	})
	return n, err
}
