// Package migrations creates and upgrades leasehold's coordination schema.
//
// # Tables
//
// With the default prefix "leasehold_" the schema has four tables:
//
//   - leasehold_schema_migrations: one row per applied schema version.
//   - leasehold_leases: one row per lease name, with its holder, the
//     session it rides on, its fencing epoch, the times it was acquired,
//     last renewed and expires, and a pending resign request with its
//     preferred next holder (version 6). Times are BIGINT microseconds
//     since the Unix epoch, written only by the database clock (see the
//     coordination package).
//   - leasehold_sessions: one row per running process that holds leases,
//     renewed by one statement per tick, with a counter of the resign
//     requests made to it (version 7), the database incarnation it was
//     last checked in (version 9), and where its process receives peer
//     wake-ups with the key they are authenticated with (version 10):
//     whoever can read this table can wake the processes, so grant it
//     as the lease table.
//   - leasehold_incarnation (version 8): one row, the incarnation of the
//     database server the lease rows were last known to live in, so that
//     a failover that lost writes is noticed and no epoch is issued twice
//     (docs/design.md, "Failover of the database").
//
// # When it runs
//
// A coordination.Coordinator migrates on start unless
// coordination.Config.DisableAutoMigrate is set. Operators who change
// schemas at deploy time call Migrate from a deploy job instead, or apply
// the SQL that DDL renders by hand and disable auto-migration. With
// Options.From, DDL renders the statements that upgrade a schema from
// that version, which Version reports; every statement it renders is
// guarded, so applying them twice is harmless. It gives them as a list
// (SQL.Statements) and as one script for the database's command-line
// client (SQL.Script), which the leasehold command (cmd/leasehold) prints:
// leasehold ddl -dialect D -from N.
//
// # Concurrency
//
// Migrate is idempotent and can run from many processes at once: a
// dialect-specific lock lets one process migrate while the others wait,
// then find nothing to do. Every released step is frozen; changes arrive as
// new numbered steps, so a database is always at one well-defined version.
//
// # Table prefix
//
// Options.TablePrefix lets several independent leasehold deployments share
// one database. It is validated (ASCII letters, digits and '_', at most 40
// bytes) before it is used in any statement.
package migrations
