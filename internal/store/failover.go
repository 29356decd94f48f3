package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// Failover detects failovers of the database (incarnation.go), and runs
// the start-up probe that decides which SQL the store's statements use.
type Failover struct {
	conns  *gate
	sql    *currentSQL
	tables Tables

	hold           time.Duration // Options.FailoverHold
	incarnationRow atomic.Bool   // the row is known to exist
	probed         atomic.Bool   // ProbeFailover asked the database
	poolerChecked  atomic.Bool   // checkPooler passed
}

// DetectsFailover reports whether the store tells one incarnation of the
// database server from the next.
func (f *Failover) DetectsFailover() bool { return f.sql.dl().incarnation != "" }

// ProbeFailover is the store's start-up probe; call it before the store's
// other statements run. It returns an error wrapping ErrPoolerMode when
// the driver's prepared statements do not survive a transaction pooler in
// front of the database (pooler.go). It moves the store to Galera's
// statements on a Galera node. It reads the server's incarnation: a server
// that cannot say it (MySQL, a role refused the functions) runs without
// failover detection, and unsupported says why. err is set when the
// database could not be asked; the caller tries again.
func (f *Failover) ProbeFailover(ctx context.Context) (unsupported, err error) {
	if err := f.checkPooler(ctx); err != nil {
		return nil, err
	}
	if err := f.probeCluster(ctx); err != nil {
		return nil, err
	}
	d := f.sql.dl()
	if d.incarnation == "" {
		return nil, nil
	}
	defer func() {
		if err == nil {
			f.probed.Store(true)
		}
	}()
	err = f.conns.run(ctx, f.conns.general, func(db *gorm.DB) error {
		var inc string
		probe := scanRow(db, stmt{q: "SELECT " + d.incarnation}, &inc)
		if probe == nil {
			return nil
		}
		// A plain query answers: the expression is what failed.
		var one int
		if err := scanRow(db, stmt{q: "SELECT 1"}, &one); err != nil {
			return probe
		}
		unsupported = probe
		return nil
	})
	if err != nil || unsupported == nil {
		return nil, err
	}
	off := *d
	off.incarnation = ""
	f.sql.d.Store(&off)
	return unsupported, nil
}

// probeCluster moves the store to a cluster's dialect when the probe finds
// the server is a node of one.
func (f *Failover) probeCluster(ctx context.Context) error {
	d := f.sql.dl()
	if d.cluster == nil {
		return nil
	}
	var name, value string
	err := f.conns.run(ctx, f.conns.general, func(db *gorm.DB) error {
		return scanRow(db, stmt{q: d.cluster.sql}, &name, &value)
	})
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if c := d.cluster.dialect(value); c != nil {
		f.sql.d.Store(c)
	}
	return nil
}

// ensureIncarnation creates the incarnation row, once per store, before
// the first acquire.
func (f *Failover) ensureIncarnation(db *gorm.DB) error {
	if f.sql.dl().incarnation == "" || f.incarnationRow.Load() {
		return nil
	}
	if _, err := exec(db, f.sql.dl().incarnations().sqlEnsureIncarnation(f.tables)); err != nil {
		return err
	}
	f.incarnationRow.Store(true)
	return nil
}

// adopt records the incarnation answering, if the row names another one
// or is missing (see sqlAdopt).
func (f *Failover) adopt(db *gorm.DB) error {
	if err := f.ensureIncarnation(db); err != nil {
		return err
	}
	_, err := exec(db, f.sql.dl().incarnations().sqlAdopt(f.tables, f.hold))
	return err
}

// Rebind is what a holder does when its session's renewal failed: if the
// session is live but was last checked in another incarnation of the
// database, the store adopts the incarnation answering (starting the
// hold-off if nobody has), moves the session to it, and returns the terms
// the lease rows show the session holding there, ok true. The caller must
// drop every term of its own that is not among them before it trusts the
// session again, and may release those it does not know. ok is false
// when the session has expired or is gone, or where failovers are not
// detected.
func (f *Failover) Rebind(ctx context.Context, id string) (terms []Term, ok bool, err error) {
	if f.sql.dl().incarnation == "" {
		return nil, false, nil
	}
	err = f.conns.run(ctx, f.conns.renewal, func(db *gorm.DB) error {
		if err := f.adopt(db); err != nil {
			return err
		}
		n, err := exec(db, f.sql.dl().incarnations().sqlRebind(f.tables, id))
		if err != nil || n == 0 {
			return err
		}
		ok = true
		terms, err = scanTerms(db, f.sql.dl().incarnations().sqlSessionTerms(f.tables, id))
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return terms, ok, nil
}

// adoptIfStale adopts the incarnation answering when a read shows the
// incarnation row missing or naming another (hold_until_us -1), and
// reports whether it did anything, so that the caller reads again.
func (f *Failover) adoptIfStale(ctx context.Context, rows []Row) (bool, error) {
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.incarnationStale }) {
		return false, nil
	}
	err := f.conns.run(ctx, f.conns.general, f.adopt)
	return err == nil, err
}

// readAdopting runs read, and once more if its rows show a failover that
// nobody had recorded, once this call has recorded it.
func (f *Failover) readAdopting(ctx context.Context, read func() ([]Row, error)) ([]Row, error) {
	rows, err := read()
	if err != nil && !f.probed.Load() {
		// A read before the coordinator's start-up probe (an operator's
		// status command) may have failed on the incarnation alone.
		if unsupported, perr := f.ProbeFailover(ctx); perr == nil && unsupported != nil {
			rows, err = read()
		}
	}
	if err != nil {
		return nil, err
	}
	if again, err := f.adoptIfStale(ctx, rows); err != nil || !again {
		return rows, err
	}
	return read()
}
