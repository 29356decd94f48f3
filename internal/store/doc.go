// Package store is leasehold's access to the coordination tables: the
// sessions, the lease operations (acquire, release, read, fence), the rows
// of pools and keyed locks, and the schema migrations, on every supported
// database.
//
// What differs between the databases lives in the file of each
// (postgres.go, mysql.go, galera.go, sqlite.go, sqlserver.go), put
// together as a dialect (dialect.go). The statements are built once for
// every database, by the builders of sql_*.go, incarnation.go and
// schema.go. The Store sequences them, the same on every database
// (leases.go, pools.go), with its owners: the connection gate (conn.go),
// Sessions (sessions.go), Schema (migrate.go), Failover and the start-up
// probe (failover.go, pooler.go) and LockRows (floored.go). wake.go is the
// store's side of the wake-ups (package internal/wake).
package store
