package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// EnsureRows creates the rows of the named leases that do not exist yet,
// in statements of at most WriteChunk names.
func (s *Store) EnsureRows(ctx context.Context, names []string) error {
	return chunks(names, WriteChunk, func(part []string) error {
		return s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
			_, err := exec(db, s.sql.dl().sqlEnsureRows(s.tables, part))
			return err
		})
	})
}

// Acquire takes, for the live session, every named lease that is free,
// expired, held by a dead session, or held by this session, and starts a
// new term of each with the next epoch, in statements of at most
// WriteChunk names. It returns the terms started; a name missing from
// them is held by someone else, or has no row (EnsureRows). When the
// session itself has expired it takes nothing.
//
// A chunk that failed contributes no terms, though it may have committed:
// a lease it took is held by session with no term running, and the next
// Acquire for the session takes it again with a new epoch.
func (s *Store) Acquire(ctx context.Context, session, holder string, names []string) ([]Term, error) {
	var out []Term
	_, err := s.AcquireEach(ctx, session, holder, names, func(got []Term) { out = append(out, got...) })
	return out, err
}

// AcquireEach is Acquire that hands the terms of each chunk to took before
// the next chunk is sent. It stops at the first chunk that fails and
// returns its names, failed (see Acquire).
func (s *Store) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]Term)) (failed []string, err error) {
	err = chunks(names, WriteChunk, func(part []string) error {
		var out []Term
		err := s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
			if err := s.failover.ensureIncarnation(db); err != nil {
				return err
			}
			var got []Term
			err := s.conns.decideTx(db, func(tx *gorm.DB) (err error) {
				if s.sql.dl().lockFirst() {
					if _, err := lockNames(tx, s.sql.dl().leases().sqlLockRows(s.tables, part)); err != nil {
						return err
					}
				}
				if err := execStep(tx, s.sql.dl().sqlMarkDeadSessions(s.tables, session, part)); err != nil {
					return err
				}
				if s.sql.dl().acquire == acquireLockThenUpdate {
					got, err = s.acquireLockThenUpdate(tx, session, holder, part)
				} else {
					got, err = scanTerms(tx, s.sql.dl().leases().sqlAcquire(s.tables, session, holder, part))
				}
				return err
			})
			if err != nil && s.sql.dl().lostRace(err) {
				// Rolled back whole: it took nothing, as if it had found
				// every lease held.
				return nil
			}
			if err != nil {
				return err // got may hold rows of a rolled-back change
			}
			out = got
			return nil
		})
		if err != nil {
			failed = part
			return err
		}
		took(out)
		return nil
	})
	return failed, err
}

func (s *Store) acquireLockThenUpdate(tx *gorm.DB, session, holder string, names []string) ([]Term, error) {
	locked, err := scanTerms(tx, s.sql.dl().leases().sqlAcquireLock(s.tables, session, holder, names))
	if err != nil || len(locked) == 0 {
		return nil, err
	}
	n, err := exec(tx, s.sql.dl().leases().sqlAcquireTerms(s.tables, session, holder, locked))
	if err != nil {
		return nil, err
	}
	if n != int64(len(locked)) {
		return nil, fmt.Errorf("leasehold: acquire updated %d of %d locked leases", n, len(locked))
	}
	if s.sql.dl().incarnation != "" {
		got, err := scanTerms(tx, s.sql.dl().leases().sqlAcquiredEpochs(s.tables, session, locked))
		if err == nil && len(got) != len(locked) {
			err = fmt.Errorf("leasehold: acquire read back %d of %d new terms", len(got), len(locked))
		}
		return got, err
	}
	out := make([]Term, len(locked))
	for i, t := range locked {
		out[i] = Term{Name: t.Name, Epoch: t.Epoch + 1}
	}
	return out, nil
}

// Release gives up the given terms of session, in statements of at most
// WriteChunk terms, and returns how many were still held. A term that is
// not the session's at that epoch any more is left untouched. It wakes the
// processes waiting for the leases, but those Options.Quiet names.
func (s *Store) Release(ctx context.Context, session string, terms []Term) (int64, error) {
	loud, quiet := terms, []Term(nil)
	if s.quiet != nil {
		loud = nil
		for _, t := range terms {
			if s.quiet(t.Name) {
				quiet = append(quiet, t)
			} else {
				loud = append(loud, t)
			}
		}
	}
	release := func(terms []Term, wake bool) (int64, error) {
		var total int64
		err := chunks(terms, WriteChunk, func(part []Term) error {
			return s.conns.run(ctx, s.conns.renewal, func(db *gorm.DB) error {
				release := counted{stmt: s.sql.dl().leases().sqlRelease(s.tables, session, part)}
				if wake {
					release = s.sql.dl().releaseNotify(s.tables, release.stmt)
				}
				n, err := execCounted(db, release)
				total += n
				return err
			})
		})
		if wake {
			s.released.after(total, len(terms), func(i int) string { return terms[i].Name })
		}
		return total, err
	}
	total, err := release(loud, true)
	if len(quiet) > 0 && err == nil {
		var n int64
		n, err = release(quiet, false)
		total += n
	}
	return total, err
}

// RequestResign records a resign request for the current term of the
// lease name, in one transaction that locks the row, reads it and hands it
// to check, which refuses by returning an error, or returns the window of
// the preference prefer (sqlRequestResign). It then bumps the notice
// counter of the holder's session. It returns the row as read; found is
// false when the lease has no row, notified false (and nothing recorded)
// when the holder's session was gone.
func (s *Store) RequestResign(ctx context.Context, name, prefer string,
	check func(Row) (window time.Duration, err error)) (row Row, found, notified bool, err error) {
	err = s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
		return s.conns.decideTx(db, func(tx *gorm.DB) error {
			lock := s.sql.dl().leases().sqlLockRows(s.tables, []string{name})
			if !s.sql.dl().lockFirst() {
				// SQLite: the write lock before the read.
				lock = s.sql.dl().leases().sqlWriteLock(s.tables)
			}
			if _, err := lockNames(tx, lock); err != nil {
				return err
			}
			rows, err := queryRows(tx, s.sql.dl().leases().sqlSelect(s.tables, []string{name}))
			if err != nil || len(rows) == 0 {
				return err
			}
			row, found = rows[0], true
			window, err := check(row)
			if err != nil {
				return err
			}
			if _, err := exec(tx, s.sql.dl().leases().sqlRequestResign(s.tables, row.Session, Term{Name: name, Epoch: row.Epoch}, prefer, window)); err != nil {
				return err
			}
			n, err := exec(tx, s.sql.dl().sessions().sqlNotifySession(s.tables, row.Session))
			if err != nil {
				return err
			}
			if notified = n == 1; !notified {
				return errNotNotified
			}
			return nil
		})
	})
	if errors.Is(err, errNotNotified) {
		err = nil
	}
	return row, found, notified, err
}

// errNotNotified rolls back a resign request whose session is gone.
var errNotNotified = errors.New("leasehold: the holder's session is gone")

// PendingResigns returns the terms, among the named leases held by
// session, for which a resign request is recorded, in statements of at
// most ReadChunk names.
func (s *Store) PendingResigns(ctx context.Context, session string, names []string) ([]Term, error) {
	var out []Term
	err := chunks(names, ReadChunk, func(part []string) error {
		return s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
			terms, err := scanTerms(db, s.sql.dl().leases().sqlPendingResigns(s.tables, session, part))
			out = append(out, terms...)
			return err
		})
	})
	return out, err
}

// Get reads the named leases with the database clock, in statements of at
// most ReadChunk names; names without a row are absent. A read that finds
// an unrecorded failover records it and reads again, so the rows show the
// hold-off.
func (s *Store) Get(ctx context.Context, names []string) ([]Row, error) {
	return s.failover.readAdopting(ctx, func() ([]Row, error) {
		var out []Row
		err := chunks(names, ReadChunk, func(part []string) error {
			return s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
				rows, err := queryRows(db, s.sql.dl().leases().sqlSelect(s.tables, part))
				out = append(out, rows...)
				return err
			})
		})
		return out, err
	})
}

// List reads every lease whose name starts with prefix ("" for all),
// ordered by name. The match is byte for byte, also on SQLite. A failover
// is recorded as Get does.
func (s *Store) List(ctx context.Context, prefix string) ([]Row, error) {
	return s.failover.readAdopting(ctx, func() ([]Row, error) {
		var lo, hi string
		if prefix != "" {
			var err error
			if lo, hi, err = prefixRange(prefix); err != nil {
				return nil, err
			}
		}
		var out []Row
		err := s.conns.run(ctx, s.conns.general, func(db *gorm.DB) (err error) {
			out, err = queryRows(db, s.sql.dl().leases().sqlList(s.tables, lo, hi))
			return err
		})
		return out, err
	})
}

// Now reads the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now int64
	err := s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
		st := s.sql.dl().leases().sqlNow()
		return scanRow(db, st, &now)
	})
	return usTime(now), err
}

// Fence reads the lease row inside the caller's transaction tx, locking it
// against a change of holder until tx ends, and returns it; found is false
// when the lease has no row. The caller compares session, epoch and
// liveness. On a Galera cluster tx and a takeover committed on another
// node cannot both commit: one fails certification.
func (s *Store) Fence(tx *gorm.DB, name string) (row Row, found bool, err error) {
	d := s.sql.dl()
	return fence(tx, d, d.sqlFenceWrite(s.tables, name), s.tables, name)
}

// FenceGeneration is Fence for a pool's generation row, which nobody
// holds and every member's fenced transaction reads. On a Galera cluster
// tx and a publish committed on another node cannot both commit, nor can
// two members' fenced transactions committed on different nodes at once:
// the one that fails is the caller's to retry.
func (s *Store) FenceGeneration(tx *gorm.DB, name string) (row Row, found bool, err error) {
	d := s.sql.dl()
	return fence(tx, d, d.sqlFenceGenerationWrite(s.tables, name), s.tables, name)
}

// fence sends the step write, then d's fencing read of name, on tx.
func fence(tx *gorm.DB, d *dialect, write stmt, t Tables, name string) (Row, bool, error) {
	if err := execStep(tx, write); err != nil {
		return Row{}, false, err
	}
	rows, err := queryRows(tx, d.leases().sqlFence(t, name))
	if err != nil || len(rows) == 0 {
		return Row{}, false, err
	}
	return rows[0], true, nil
}

func queryRows(db *gorm.DB, st stmt) ([]Row, error) {
	return queryAll(db, st, func(rs *sql.Rows, r *Row) error {
		var acquired, renewed, expires, preferUntil, now, hold int64
		if err := rs.Scan(&r.Name, &r.Holder, &r.Session, &r.Epoch, &acquired, &renewed, &expires, &r.Data,
			&r.ResignEpoch, &r.PreferredHolder, &preferUntil, &now, &hold, &r.EpochFloor); err != nil {
			return err
		}
		scanIncarnation(r, hold)
		r.AcquiredAt, r.RenewedAt, r.ExpiresAt, r.Now = usTime(acquired), usTime(renewed), usTime(expires), usTime(now)
		r.PreferredUntil = usTime(preferUntil)
		return nil
	})
}
