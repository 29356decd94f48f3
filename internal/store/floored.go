package store

import (
	"context"
	"slices"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Floored rows are the lease rows of keyed locks: a row exists only while
// its key is held or about to be, yet its epochs never repeat, also across
// a delete and a re-create. Each has a floor row (Floored.Floor), never
// deleted: a delete first raises the floor to the row's epoch, a create
// starts the row at the floor's epoch, and both lock the floor row first.

// LockRows is the owner of the floored rows: their creation, release and
// pruning. No other statement deletes a lease row.
type LockRows struct {
	conns    *gate
	sql      *currentSQL
	tables   Tables
	released *releaseHook
}

// Floored names a floored row and its floor row.
type Floored struct {
	Name  string // the floored row
	Floor string // its floor row
}

// FlooredTerm is a term of a floored row, with its floor row.
type FlooredTerm struct {
	Term
	Floor string
}

// EnsureFloored creates the floored rows that do not exist yet, unheld,
// each at the epoch of its floor row (created at 0 if missing), in one
// transaction per chunk of at most WriteChunk rows.
func (s *LockRows) EnsureFloored(ctx context.Context, rows []Floored) error {
	return chunks(rows, WriteChunk, func(part []Floored) error {
		return s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
			return s.conns.decideTx(db, func(tx *gorm.DB) error {
				floors, err := s.lockFloors(tx, floorNames(part))
				if err != nil {
					return err
				}
				names := make([]string, len(part))
				for i, r := range part {
					names[i] = r.Name
				}
				have, err := scanTerms(tx, s.sql.dl().floored().sqlLockEpochs(s.tables, names))
				if err != nil {
					return err
				}
				exists := make(map[string]bool, len(have))
				for _, h := range have {
					exists[h.Name] = true
				}
				var add []Term
				var addRows []Floored
				for _, r := range part {
					if !exists[r.Name] {
						exists[r.Name] = true
						add = append(add, Term{Name: r.Name, Epoch: floors[r.Floor]})
						addRows = append(addRows, r)
					}
				}
				if len(add) == 0 {
					return nil
				}
				if _, err := exec(tx, s.sql.dl().floored().sqlCreate(s.tables, add, addRows)); err != nil {
					return err
				}
				return s.checkOpen(tx)
			})
		})
	})
}

// lockFloors locks the named floor rows (sorted, distinct) in name order
// for the rest of tx, creates those that do not exist at epoch 0, and
// returns the epoch of each.
func (s *LockRows) lockFloors(tx *gorm.DB, floors []string) (map[string]int64, error) {
	fl := s.sql.dl().floored()
	if !s.sql.dl().lockFirst() {
		if _, err := lockNames(tx, s.sql.dl().leases().sqlWriteLock(s.tables)); err != nil {
			return nil, err
		}
	}
	have, err := scanTerms(tx, fl.sqlLockEpochs(s.tables, floors))
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(floors))
	for _, h := range have {
		out[h.Name] = h.Epoch
	}
	var add []Term
	for _, f := range floors {
		if _, ok := out[f]; !ok {
			out[f] = 0
			add = append(add, Term{Name: f})
		}
	}
	if len(add) > 0 {
		if _, err := exec(tx, fl.sqlInsert(s.tables, add)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// floorNames returns the distinct floor rows of rows, sorted.
func floorNames(rows []Floored) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Floor
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// raiseFloors raises each floor row to the highest epoch of the terms
// given for it.
func (s *LockRows) raiseFloors(tx *gorm.DB, terms []FlooredTerm) error {
	top := make(map[string]int64)
	for _, t := range terms {
		top[t.Floor] = max(top[t.Floor], t.Epoch)
	}
	floors := make([]Term, 0, len(top))
	for f, e := range top {
		floors = append(floors, Term{Name: f, Epoch: e})
	}
	sort.Slice(floors, func(i, j int) bool { return floors[i].Name < floors[j].Name })
	_, err := exec(tx, s.sql.dl().floored().sqlRaiseFloors(s.tables, floors))
	return err
}

// ReleaseFloored gives up the given terms of session and deletes their
// rows, after raising their floor rows, in one transaction per chunk of at
// most WriteChunk terms. It returns how many were still held; a term not
// the session's at that epoch is left untouched. It wakes as Release does.
func (s *LockRows) ReleaseFloored(ctx context.Context, session string, terms []FlooredTerm) (int64, error) {
	var total int64
	err := chunks(terms, WriteChunk, func(part []FlooredTerm) error {
		return s.conns.run(ctx, s.conns.renewal, func(db *gorm.DB) error {
			var n int64
			err := s.conns.decideTx(db, func(tx *gorm.DB) error {
				if _, err := s.lockFloors(tx, floorNames(flooredRows(part))); err != nil {
					return err
				}
				if err := s.raiseFloors(tx, part); err != nil {
					return err
				}
				del := s.sql.dl().floored().sqlDeleteTerms(s.tables, session, part)
				var err error
				if n, err = execCounted(tx, s.sql.dl().releaseNotify(s.tables, del)); err != nil {
					return err
				}
				return s.checkOpen(tx)
			})
			if err == nil {
				total += n
			}
			return err
		})
	})
	s.released.after(total, len(terms), func(i int) string { return terms[i].Name })
	return total, err
}

// PruneFloored deletes, in one transaction, up to limit floored rows under
// prefix that nobody holds or is about to hold (dead for longer than
// grace, as PruneDead judges), after raising their floor rows (floor names
// each one's). It returns how many it deleted.
func (s *LockRows) PruneFloored(ctx context.Context, prefix string, floor func(name string) string, grace time.Duration, limit int) (int64, error) {
	lo, hi, err := prefixRange(prefix)
	if err != nil {
		return 0, err
	}
	limit = min(max(limit, 1), WriteChunk)
	var n int64
	err = s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
		return s.conns.decideTx(db, func(tx *gorm.DB) error {
			fl := s.sql.dl().floored()
			if !s.sql.dl().lockFirst() {
				if _, err := lockNames(tx, s.sql.dl().leases().sqlWriteLock(s.tables)); err != nil {
					return err
				}
			}
			dead, err := scanTerms(tx, fl.sqlReadDead(s.tables, lo, hi, grace, limit))
			if err != nil || len(dead) == 0 {
				return err
			}
			terms := make([]FlooredTerm, len(dead))
			rows := make([]Floored, len(dead))
			names := make([]string, len(dead))
			for i, d := range dead {
				terms[i] = FlooredTerm{Term: d, Floor: floor(d.Name)}
				rows[i] = Floored{Name: d.Name, Floor: terms[i].Floor}
				names[i] = d.Name
			}
			if _, err := s.lockFloors(tx, floorNames(rows)); err != nil {
				return err
			}
			if err := s.raiseFloors(tx, terms); err != nil {
				return err
			}
			if s.sql.dl().lockFirst() {
				if _, err := lockNames(tx, s.sql.dl().leases().sqlLockRows(s.tables, names)); err != nil {
					return err
				}
			}
			if n, err = exec(tx, fl.sqlDeleteDead(s.tables, terms, grace)); err != nil {
				return err
			}
			return s.checkOpen(tx)
		})
	})
	return n, err
}

// checkOpen returns ErrRolledBackUnderneath when the database rolled tx
// back under its statements (sqlInTransaction); elsewhere it sends
// nothing.
func (s *LockRows) checkOpen(tx *gorm.DB) error {
	q := s.sql.dl().sqlInTransaction()
	if q == "" {
		return nil
	}
	var open int64
	if err := scanRow(tx, stmt{q: q}, &open); err != nil {
		return err
	}
	if open != 1 {
		return ErrRolledBackUnderneath
	}
	return nil
}
