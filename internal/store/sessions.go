package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Sessions runs the statements of the session rows: a process's one row,
// which one renewal keeps alive however many leases ride on it. Those of
// the session's own row run on the renewal's connection slot.
type Sessions struct {
	conns  *gate
	sql    *currentSQL
	tables Tables
}

// CreateSession starts session id of holder, live for ttl by the database
// clock. The id must be new: sessions are never reused.
func (s *Sessions) CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error {
	return s.conns.run(ctx, s.conns.renewal, func(db *gorm.DB) error {
		_, err := exec(db, s.sql.dl().sessions().sqlCreateSession(s.tables, id, holder, ttl))
		return err
	})
}

// RenewSession extends session id to the database's now plus ttl, if it
// has not expired. It reports false when the session has expired or is
// gone: then every lease it held is free, and it never comes back. It is
// the one statement of a renewal tick, however many leases the session
// holds, and it also returns the session's notice counter, which goes up
// with every resign request made to the session's leases (0 when the
// session was not renewed).
func (s *Sessions) RenewSession(ctx context.Context, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	err = s.conns.run(ctx, s.conns.renewal, func(db *gorm.DB) (err error) {
		ok, notice, err = s.renew(db, id, ttl)
		return err
	})
	return ok, notice, err
}

// RenewSessionIn renews session id inside the caller's transaction tx,
// with the same statement as RenewSession, and returns the same notice
// counter. It takes effect only if tx commits. It reports whether the
// session was live to renew.
func (s *Sessions) RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	return s.renew(tx, id, ttl)
}

// renew sends the renewal statement on db and reads back the notice.
func (s *Sessions) renew(db *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	st := s.sql.dl().sessions().sqlRenewSession(s.tables, id, ttl)
	if s.sql.dl().renewReturnsRows {
		got, err := queryAll(db, st, func(rs *sql.Rows, v *int64) error { return rs.Scan(v) })
		if err != nil || len(got) != 1 {
			return false, 0, err
		}
		return true, got[0], nil
	}
	// MySQL: the notice is the statement's last insert id.
	res := gorm.WithResult()
	tx := db.Clauses(res).Exec(st.q, st.args...)
	if tx.Error != nil {
		return false, 0, tx.Error
	}
	if tx.RowsAffected != 1 {
		return false, 0, nil
	}
	if res.Result != nil {
		if notice, err = res.Result.LastInsertId(); err != nil {
			return false, 0, fmt.Errorf("leasehold: read the session's notice: %w", err)
		}
	}
	return true, notice, nil
}

// ReadSession reads session id; ok is false when it is gone. It runs on
// the general slots, beside a renewal waiting for a writer
// (SerializesWriters).
func (s *Sessions) ReadSession(ctx context.Context, id string) (sess Session, ok bool, err error) {
	err = s.conns.run(ctx, s.conns.general, func(db *gorm.DB) error {
		st := s.sql.dl().sessions().sqlReadSession(s.tables, id)
		var renewed, expires, now int64
		switch err := scanRow(db, st, &renewed, &expires, &now); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		sess, ok = Session{RenewedAt: usTime(renewed), ExpiresAt: usTime(expires), Now: usTime(now)}, true
		return nil
	})
	return sess, ok, err
}

// ListSessions reads every row of the session table, by the database
// clock, in one statement on the general slots: the sessions leases ride
// on and the rows advertising peer wake-ups, never a wake-up key.
func (s *Sessions) ListSessions(ctx context.Context) ([]SessionRow, error) {
	var out []SessionRow
	err := s.conns.run(ctx, s.conns.general, func(db *gorm.DB) (err error) {
		out, err = queryAll(db, s.sql.dl().sessions().sqlListSessions(s.tables), func(rs *sql.Rows, r *SessionRow) error {
			var renewed, expires, now int64
			if err := rs.Scan(&r.ID, &r.Holder, &renewed, &expires, &r.WakeAddrs, &now); err != nil {
				return err
			}
			r.RenewedAt, r.ExpiresAt, r.Now = usTime(renewed), usTime(expires), usTime(now)
			return nil
		})
		return err
	})
	return out, err
}

// EndSession deletes session id: every lease it still holds is free at
// once. Sessions expired long ago are pruned on the way.
func (s *Sessions) EndSession(ctx context.Context, id string, pruneAfter time.Duration) error {
	return s.conns.run(ctx, s.conns.renewal, func(db *gorm.DB) error {
		if _, err := exec(db, s.sql.dl().sessions().sqlEndSession(s.tables, id)); err != nil {
			return err
		}
		_, err := exec(db, s.sql.dl().sessions().sqlPruneSessions(s.tables, pruneAfter))
		return err
	})
}
