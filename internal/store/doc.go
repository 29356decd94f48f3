// Package store is leasehold's access to the coordination tables: the
// sessions, the lease operations (acquire, release, read, fence) and the
// schema migrations, for every supported dialect.
//
// Every difference between the databases lives in the file of its
// database: its facts (plain values), its runtime type implementing the
// database interface, and its schema type implementing the schema's small
// interfaces (dialect.go, sql_schema.go):
//
//   - postgres.go: PostgreSQL's clock, names as one text[] parameter,
//     releases joined with arrays, row locks, DDL, advisory migration
//     lock, failover incarnation (system identifier and timeline), and
//     its LISTEN/NOTIFY wake-up statements;
//   - mysql.go: MySQL's and MariaDB's clock, the acquire that locks then
//     updates, the renewal's notice as the last insert id, row locks,
//     DDL guarded by prepared statements, GET_LOCK, and MariaDB's failover
//     incarnation (the server_id);
//   - sqlite.go: SQLite's clock, its single writer, DDL, the table
//     rebuilds of its DDL script, BEGIN IMMEDIATE, and the database file
//     its wake-up sockets sit next to;
//   - sqlserver.go: SQL Server's clock, OUTPUT, lock hints, DDL guarded
//     by IF, sp_getapplock, and its failover incarnation (the instance).
//
// The statements are built once for every database, which they ask for
// the fragments that differ, by one small builder type for each kind of
// statement: sql_sessions.go (the session table, and the liveness rule),
// sql_leases.go (the lease rows elections take), sql_pools.go (the rows of
// pools), sql_schema.go (the DDL, the version table and the migration
// lock), incarnation.go (failovers of the database) and schema.go (the
// migration steps and the DDL for DBAs), with the helpers of sql.go.
//
// The Store sequences the statements of the lease and pool rows (store.go,
// leases.go, pools.go), and is made of owners that each run their own:
//
//   - the connection gate (conn.go): the connection slots every statement
//     takes, which bound how many connections the store uses, the
//     transactions of decisions, and, on PostgreSQL, the connection lent
//     to a wake-up transport (wake.go);
//   - Sessions (sessions.go): the session rows, reached by
//     Store.Sessions;
//   - Schema (migrate.go): the schema's version, its check and the
//     migrations, reached by Store.Schema;
//   - Failover (failover.go): the database's incarnation, and whether the
//     statements name it, reached by Store.Failover.
//
// wake.go is the store's side of the wake-ups (package internal/wake).
package store
