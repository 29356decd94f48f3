package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"
)

// The start-up check for a transaction pooler (PostgreSQL, facts.serverConn).
//
// It fails only on evidence: a client connection that keeps a prepared
// statement (pg_prepared_statements shows it) runs a transaction on
// another server connection, where that statement fails, or finds its
// server connection given to another client and no other to be had. A
// direct connection never moves, so it always passes; so does a pooler
// that carries prepared statements across server connections (PgBouncer
// 1.21 and later with max_prepared_statements) or pins a client that
// prepares to one (RDS Proxy). A quiet pooler hands a connection its last
// server connection again, so the check holds that one in a transaction
// on a second connection while the first runs its next one.

// poolerRounds bounds the rounds of the check that look for the pooler.
const poolerRounds = 3

// poolerWait bounds how long the check's connection waits for a server
// connection while its other connection holds the one it had.
const poolerWait = 5 * time.Second

// checkPooler returns an error wrapping ErrPoolerMode when the database is
// behind a transaction pooler and the driver's prepared statements do not
// survive a move to another server connection. Once it passed, it sends
// nothing more.
func (f *Failover) checkPooler(ctx context.Context) error {
	d := f.sql.dl()
	if d.keptStatements == nil || f.poolerChecked.Load() {
		return nil
	}
	g := f.conns
	if err := g.general.take(ctx); err != nil {
		return err
	}
	defer g.general.give()
	db := g.db.WithContext(ctx).Clauses(dbresolver.Write).Session(&gorm.Session{})
	two := g.maxConns > 1
	if sqlDB, err := db.DB(); err == nil && sqlDB.Stats().MaxOpenConnections == 1 {
		two = false
	}
	if two {
		if err := g.renewal.take(ctx); err != nil {
			return err
		}
		defer g.renewal.give()
	}
	p := &poolerCheck{d: d, tag: "leasehold_pooler_" + strings.ReplaceAll(uuid.NewString(), "-", "")}
	err := pinned(db, func(c1 *gorm.DB) error {
		if !two {
			return p.run(ctx, c1, nil)
		}
		return pinned(db, func(c2 *gorm.DB) error { return p.run(ctx, c1, c2) })
	})
	if err == nil {
		f.poolerChecked.Store(true)
	}
	return err
}

// poolerCheck is one run of checkPooler. Each of its statements is new to
// the driver (tag), so none can fail for a statement kept elsewhere.
type poolerCheck struct {
	d     *dialect
	tag   string
	n     int
	probe stmt  // prepared by the first connection on its server connection home
	home  int64 // that server connection
}

// next returns a new column alias.
func (p *poolerCheck) next() string {
	p.n++
	return p.tag + "_" + strconv.Itoa(p.n)
}

// serverRead is a new statement reading the server connection.
func (p *poolerCheck) serverRead() stmt {
	return stmt{q: "SELECT " + p.d.serverConn + " AS " + p.next()}
}

// run runs the check on c1, with c2 (nil for none) to hold c1's server
// connection.
func (p *poolerCheck) run(ctx context.Context, c1, c2 *gorm.DB) error {
	p.probe = p.serverRead()
	var kept int64
	err := pinnedTx(c1, "BEGIN", func(tx *gorm.DB) error {
		if err := scanRow(tx, p.probe, &p.home); err != nil {
			return err
		}
		return scanRow(tx, stmt{p.d.keptStatements(p.next()), []any{p.probe.q}}, &kept)
	})
	if err != nil {
		if scanRow(c1, p.serverRead(), new(int64)) == nil {
			return nil // the server cannot answer the check: it is skipped
		}
		return fmt.Errorf("leasehold: check for a transaction pooler: %w", err)
	}
	if kept == 0 {
		return nil // no prepared statement is kept: nothing for a pooler to lose
	}
	for range poolerRounds {
		if done, err := p.round(ctx, c1, c2); done || err != nil {
			return err
		}
	}
	return nil
}

// round runs a transaction on c1 while c2, if any, holds one open, and
// runs the probe there if c1 moved to another server connection. done
// reports a verdict, which err carries.
func (p *poolerCheck) round(ctx context.Context, c1, c2 *gorm.DB) (done bool, err error) {
	held := int64(-1)
	if c2 != nil {
		if err := c2.Exec("BEGIN").Error; err != nil {
			return false, err
		}
		defer c2.Exec("ROLLBACK")
		if err := scanRow(c2, p.serverRead(), &held); err != nil {
			return false, err
		}
	}
	wctx := ctx
	if held == p.home {
		// The pooler gave c2 the server connection c1 had: c1 gets
		// another one, or waits for it.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, poolerWait)
		defer cancel()
	}
	var at int64
	err = pinnedTx(c1.WithContext(wctx), "BEGIN", func(tx *gorm.DB) error {
		if err := scanRow(tx, p.serverRead(), &at); err != nil || at == p.home {
			return err
		}
		return scanRow(tx, p.probe, new(int64))
	})
	moved := at != 0 && at != p.home
	switch {
	case ctx.Err() != nil:
		return true, ctx.Err()
	case moved && err != nil:
		return true, fmt.Errorf("%w: a statement this connection prepared failed on another server connection (%w); %s",
			ErrPoolerMode, err, poolerFix)
	case moved:
		return true, nil // the pooler carries prepared statements across
	case held == p.home:
		return true, fmt.Errorf("%w: the pooler gave this connection's server connection to another client connection, and none other within %v (%w); %s",
			ErrPoolerMode, poolerWait, err, poolerFix)
	}
	return false, err
}

// poolerFix is what ErrPoolerMode's error asks of the caller.
const poolerFix = "put default_query_exec_mode=exec (or simple_protocol, or cache_describe) in the DSN"
