package leaseholdtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/memstore"
	"github.com/leasehold/leasehold/workers"
)

// DB is an in-process database shared by the processes of one test: the
// lease, session and pool rows leasehold keeps in its tables, in memory,
// with time.Now as the database clock. Create it with New inside the
// function given to synctest.Test. It is safe for concurrent use.
type DB struct {
	t     testing.TB
	store *memstore.Store
	admin *memstore.Conn // the helpers' own connection

	mu    sync.Mutex
	cut   bool
	procs []*Process
}

// New returns an empty database for the test t. Call it inside the
// bubble of synctest.Test, so that every lease, renewal and poll runs on
// fake time. Every process started on it is stopped when t ends.
func New(t testing.TB) *DB {
	st := memstore.New()
	return &DB{t: t, store: st, admin: st.Conn()}
}

// Identity returns a process identity with the given node and cluster and
// a fresh instance id; it fails the test when either is invalid (see
// identity.New).
func (d *DB) Identity(node, cluster string) identity.Identity {
	d.t.Helper()
	id, err := identity.New(node, cluster)
	if err != nil {
		d.t.Fatalf("leaseholdtest: %v", err)
	}
	return id
}

// Process is one process of the test: a coordinator (and, from
// StartHost, the host over it) running on its own connection to the DB,
// whose faults concern it alone.
type Process struct {
	d      *DB
	conn   *memstore.Conn
	coord  *coordination.Coordinator
	host   *workers.Host
	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once

	mu      sync.Mutex
	err     error // what Run returned
	crashed bool
}

// Start runs a coordinator for id with cfg on the DB, as
// coordination.New and Coordinator.Run would on a database, until Stop,
// Crash or the end of the test. It fails the test when id or cfg is
// invalid. Use Coordinator() for its elections and pools.
func (d *DB) Start(id identity.Identity, cfg coordination.Config) *Process {
	d.t.Helper()
	p := d.newProcess(id, cfg)
	p.run(p.coord.Run)
	return p
}

// StartHost runs a coordinator for id with cfg and a workers.Host over it
// with hcfg and the workers ws on the DB, as coordination.New,
// workers.NewHost and their Runs would on a database, until Stop, Crash or
// the end of the test. It fails the test when id, a config or a worker is
// invalid.
func (d *DB) StartHost(id identity.Identity, cfg coordination.Config, hcfg workers.Config, ws ...workers.Worker) *Process {
	d.t.Helper()
	p := d.newProcess(id, cfg)
	h, err := workers.NewHost(p.coord, hcfg, ws...)
	if err != nil {
		d.t.Fatalf("leaseholdtest: host %s: %v", id, err)
	}
	p.host = h
	p.run(func(ctx context.Context) error {
		hostErr := make(chan error, 1)
		go func() { hostErr <- h.Run(ctx) }()
		err := p.coord.Run(ctx)
		return errors.Join(err, <-hostErr)
	})
	return p
}

func (d *DB) newProcess(id identity.Identity, cfg coordination.Config) *Process {
	d.t.Helper()
	conn := d.store.Conn()
	db, err := conn.Open()
	if err != nil {
		d.t.Fatalf("leaseholdtest: %v", err)
	}
	c, err := coordination.New(db, id, cfg)
	if err != nil {
		d.t.Fatalf("leaseholdtest: coordinator %s: %v", id, err)
	}
	p := &Process{d: d, conn: conn, coord: c, done: make(chan struct{})}
	d.mu.Lock()
	if d.cut {
		conn.Cut()
	}
	d.procs = append(d.procs, p)
	d.mu.Unlock()
	return p
}

// run runs fn in its own goroutine until Stop, and stops it when the
// test ends.
func (p *Process) run(fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		err := fn(ctx)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
	}()
	p.d.t.Cleanup(func() { _ = p.Stop() })
}

// Coordinator returns the process's coordinator. Do not call its Run: the
// process runs it (through the host, for StartHost).
func (p *Process) Coordinator() *coordination.Coordinator { return p.coord }

// Host returns the process's host, or nil for a process from Start.
func (p *Process) Host() *workers.Host { return p.host }

// Stop shuts the process down gracefully, as cancelling the context of
// Coordinator.Run (Host.Run) does: its work is cancelled, and its leases
// are released once the work has returned. It returns when Run has
// returned, and reports what Run returned. Stopping again does nothing
// and reports the same.
func (p *Process) Stop() error {
	p.stop.Do(func() {
		p.cancel()
		<-p.done
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Crash ends the process as a SIGKILL would, as far as the database can
// tell: its connection is cut for good first, so it releases nothing and
// its leases and pool memberships stay until they expire (one TTL). Its
// work is cancelled and Run returns. It returns when Run has returned.
func (p *Process) Crash() {
	p.mu.Lock()
	p.crashed = true
	p.mu.Unlock()
	p.conn.Cut()
	_ = p.Stop()
}

// Cut cuts the process off the database: every statement it sends fails
// as on a lost connection, until Restore. It keeps running: it rides out
// the failures until its trust deadline, then steps down (its work's
// context is cancelled), and takes part again once restored.
func (p *Process) Cut() { p.conn.Cut() }

// Restore ends a Cut of this process (not of a crashed one, and not a
// DB.Cut, which DB.Restore ends).
func (p *Process) Restore() {
	p.mu.Lock()
	crashed := p.crashed
	p.mu.Unlock()
	p.d.mu.Lock()
	cut := p.d.cut
	p.d.mu.Unlock()
	if !crashed && !cut {
		p.conn.Restore()
	}
}

// Pause holds every statement of the process for d, as the database sees
// a process stopped (SIGSTOP) for d, and returns when d has passed. With
// d beyond the TTL, another process takes over its leases meanwhile, and
// its held renewal, sent late, finds them lost. Its goroutines are not
// stopped: the coordinator cancels the work at its trust deadline, as it
// does on waking from a real pause, and Lease.Fence and Assignment.Fence
// refuse work that goes on after it.
func (p *Process) Pause(d time.Duration) {
	resume := p.conn.Stall()
	defer resume()
	time.Sleep(d)
}
