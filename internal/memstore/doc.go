// Package memstore is an in-process coordination store: the sessions, the
// lease rows and the pool rows of internal/store kept in memory, for tests
// of the coordinator that run on testing/synctest fake time.
//
// Its "database clock" is time.Now in microseconds, so inside a synctest
// bubble the whole lease protocol runs on fake time and every deadline can
// be checked exactly. It implements the same conditions as the SQL
// statements of internal/store; whether a lease can be taken it decides
// with store.Row.Takeable, the Go statement of the acquire statement's
// rule. The store conformance suite (internal/storetest) runs the same
// cases against it and against the SQL store on every database, so a test
// written with it means what it says.
//
// It has one incarnation (no failover to detect), no schema to migrate
// and no wake-ups: coordinators on it poll. Fenced transactions are not
// modelled: Fence reads the row outside any transaction, and
// RenewSessionIn renews nothing.
//
// A few fault knobs make it misbehave as a database does: SetRenewDelay
// (slow renewals), FailRenewals (failing renewals), SetAcquireDelay (slow
// acquires), GateReleases (releases that block until let through),
// SetSerialWriters (a store whose writers exclude each other, as SQLite),
// ExpireSession (a holder that stopped renewing) and RenewHolderSession (a
// renewal committed by a fenced transaction). Row and Renewals read its
// state back.
//
// A Conn (Store.Conn) is one process's connection to the store, with
// faults of its own: Cut makes its statements fail, as a lost connection,
// and Stall holds them until resumed, as a process stopped or a network
// that stopped answering. The other connections go on. Package
// leaseholdtest gives each of its processes one.
package memstore
