// Command leasehold inspects and administers the coordination tables of
// a database that leasehold services share: who holds which lease, the
// pools and their members, schema migrations, and hand-overs.
//
// Usage:
//
//	leasehold [db flags] <subcommand> [flags] [db flags]
//
//	go run github.com/leasehold/leasehold/cmd/leasehold -driver postgres -dsn "$DSN" status
//
// # Database flags
//
// They may come before or after the subcommand; each falls back to an
// environment variable, named as the sample names them:
//
//	-driver        sqlite-pure (default), sqlite, postgres, mysql, sqlserver   LEASEHOLD_DRIVER
//	-dsn           data source name; for SQLite a file path is enough          LEASEHOLD_DSN
//	-table-prefix  the services' coordination.Config.TablePrefix               LEASEHOLD_TABLE_PREFIX
//
// With a SQLite driver and no DSN, the command opens leasehold-sample.db in
// the working directory, the sample's default database, so that it runs
// next to the sample without flags. A SQLite DSN without "file:" and
// without parameters is taken as a path and opened with the busy timeout
// and WAL mode the services use. The reading subcommands refuse a SQLite
// file that does not exist rather than create an empty one.
//
// A DSN's password is never printed: every message replaces it, and the
// DSN itself appears only in redacted form.
//
// # Subcommands
//
// status lists the elections (name, holder, epoch, whether the lease is
// live, the time it has left by the database clock, when its term began
// and when its holder's session was last renewed) and the pools (the
// generation, then each member in index order with its holder, liveness
// and acknowledged generation). -json prints the same as one JSON object.
//
//	leasehold -dsn /tmp/leasehold-demo-1234/demo.db status
//
// watch prints the same every -interval (2s), with a CHANGE column that
// marks what changed since the last refresh: new, holder, epoch, live,
// expired; gone leases are listed as gone, and a pool's line notes a new
// generation or membership. It stops on SIGINT or SIGTERM, or after
// -count refreshes.
//
//	leasehold watch -interval 1s
//
// migrate brings the schema to the latest version, as migrations.Migrate
// does; with -dry-run it prints the SQL that would do it for the
// database's dialect and current version, and applies nothing.
//
//	leasehold -driver mysql -dsn "$DSN" migrate -dry-run
//
// ddl prints the SQL that takes a schema from version -from (0: nothing)
// to the latest, for -dialect (default: that of -driver), every statement
// safe to apply twice; see migrations.ScriptFrom. It needs no database.
//
//	leasehold ddl -dialect sqlserver -from 5 > upgrade.sql
//
// resign NAME asks the current holder of the lease NAME (as status prints
// it: cluster/<cluster>/<name> or global/<name>) to hand it over; -prefer
// names the process that should take it next, by holder, node or instance
// id. See coordination.Coordinator.Resign.
//
//	leasehold resign global/billing -prefer node-b
//
// The command reads through a coordination.Coordinator that it never
// runs, under the identity <hostname>/cli/<random instance>.
//
// # Exit status
//
// 0 on success; 1 when the database cannot be reached or a statement
// fails, the schema is missing or older than this build, or resign names
// an unknown or free lease; 2 for a usage error (an unknown subcommand or
// flag, a bad value), with the usage printed. -h prints the usage of the
// command or a subcommand.
package main
