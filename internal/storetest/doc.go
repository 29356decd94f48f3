// Package storetest is the store conformance suite: one set of cases on
// the statements the coordinator relies on (sessions, acquires, releases,
// resign requests and preferred holders, pool rows, reads by name and by
// prefix), run against every implementation of the store, so that they
// all keep the same rules.
//
// The SQL store (internal/store) is the reference: its test runs the
// suite on every database of testdb.Targets. The in-process store
// (internal/memstore) runs the same cases inside testing/synctest
// bubbles, where its clock is fake time and the waits for an expiry take
// no wall time.
//
// The cases wait for expiries by reading the store's own clock (the
// database clock for SQL), polling with short sleeps and a generous
// bound, so they pass on a busy machine: sessions meant to expire live
// ShortTTL, every other one LongTTL.
package storetest
