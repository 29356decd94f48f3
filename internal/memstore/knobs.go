package memstore

import (
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// The fault knobs: each makes the store misbehave as a database does, and
// takes effect for the calls that begin after it.

// SetRenewDelay makes every RenewSession wait d before it executes, as a
// slow network or a statement waiting for a lock: the renewal takes effect
// at the end of the wait, or not at all when its context ends first. 0
// turns it off.
func (m Faults) SetRenewDelay(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.renewDelay = d
}

// FailRenewals makes every RenewSession return err (after the renew delay,
// if any) without renewing. nil makes renewals succeed again.
func (m Faults) FailRenewals(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.renewErr = err
}

// Renewals returns how many RenewSession calls began, failed ones
// included.
func (m Faults) Renewals() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renews
}

// SetAcquireDelay makes every Acquire (each chunk of AcquireEach) wait d
// before it executes, as a large batch on a loaded database. 0 turns it
// off.
func (m Faults) SetAcquireDelay(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acquireDelay = d
}

// GateReleases makes every Release that begins from now on block until
// open is called; then they, and later ones, go through. open may be
// called more than once.
func (m Faults) GateReleases() (open func()) {
	gate := make(chan struct{})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseGate = gate
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// SetSerialWriters sets what SerializesWriters reports: true for a store
// whose writers exclude each other, as SQLite's.
func (m Faults) SetSerialWriters(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.serialWriters = on
}

// ExpireSession makes the session holding the lease name expired now, as
// if its holder stopped renewing. The lease must be held by a session.
func (m Faults) ExpireSession(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[m.rows[name].session].expires = nowUS() - 1
}

// RenewHolderSession renews the session holding the lease name to now
// plus ttl, as a fenced transaction's check commits a renewal
// (store.Sessions.RenewSessionIn). The lease must be held by a session.
func (m Faults) RenewHolderSession(name string, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[m.rows[name].session]
	now := nowUS()
	s.renewed, s.expires = now, now+ttl.Microseconds()
}

// Row reads the lease name as Get does; ok is false when it has no row.
func (m Faults) Row(name string) (r store.Row, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lr := m.rows[name]
	if lr == nil {
		return store.Row{}, false
	}
	return m.rowLocked(lr, nowUS()), true
}
