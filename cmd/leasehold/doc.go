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
// Every subcommand but ddl needs -dsn (or LEASEHOLD_DSN): there is no
// default database, so that no command reads, migrates or creates one the
// operator did not name. For the sample's database that is
// -dsn ./leasehold-sample.db. Each names the database it used, by driver
// and DSN: status and watch in their first line, status -json on stderr,
// migrate in the line it prints (-dry-run in the comment that heads the
// script) and resign in its success line.
//
// A SQLite DSN without "file:" and without parameters is taken as a path.
// migrate opens it with the busy timeout and WAL mode the services use,
// and creates the file if there is none. status, watch and
// migrate -dry-run open an existing file with query_only, which refuses
// every write, and resign opens an existing one: all with mode=rw, which
// never creates the file. A file that does not exist is an error naming
// its path, and none of them creates a file or a table, nor leaves the
// -wal and -shm files of a WAL database behind (a mode=ro connection
// would). A "file:" URI keeps its own parameters, and gets mode=rw unless
// it names a mode, and query_only for the reads unless it sets that. A
// server's DSN given to a SQLite driver (a postgres://,
// mysql:// or sqlserver:// URL, host=... dbname=... settings, a MySQL
// user:password@tcp(host)/db) is a usage error that says which -driver to
// set: the SQLite driver would take it for a file name.
//
// A DSN's password is never printed: every message, the drivers' errors
// included, has it replaced, and the DSN itself appears only in redacted
// form. The password is found by the DSN's shape, whichever driver it is
// given to.
//
// # Subcommands
//
// status lists the elections (name, holder, epoch, whether the lease is
// live, the time it has left by the database clock, when its term began
// and when its holder's session was last renewed) and the pools (the
// generation, then each member in index order with its holder, whether it
// is live, dead or left, and acknowledged generation), then each namespace
// of keyed locks and each semaphore (its slots) with the keys held, the
// processes (holder, whether the session is live and its time left, its
// last renewal, where it receives peer wake-ups), and each scheduled
// worker (workers.Scheduled) with its next slot, the run in progress if
// any, and its recent runs (slot, outcome, holder, epoch, attempt, start,
// end). -json prints the same as one JSON object, a status.Snapshot, alone
// on stdout; the line naming the database goes to stderr.
//
//	leasehold -dsn /tmp/leasehold-demo-1234/demo.db status
//
// watch prints the same, then every -interval (2s, at least 100ms) the
// changes alone, a line per lease or pool: new, holder, epoch, live,
// expired, generation, members or gone, with the old and new values; a
// refresh without changes prints nothing. -full prints every refresh
// whole, with a CHANGE column. It stops on SIGINT or
// SIGTERM, or after -count refreshes. A database that cannot be reached
// at start is an error; once watching, a read that fails or takes longer
// than -timeout (10s) is reported on stderr and tried again, the wait
// doubling from -interval up to 30s, and watch says so when a read
// succeeds again. Failed reads do not count towards -count.
//
//	leasehold -dsn ./leasehold-sample.db watch -interval 1s
//
// migrate brings the schema to the latest version, as migrations.Migrate
// does; with -dry-run it prints the SQL that would do it for the
// database's dialect and current version, and applies nothing. On a
// SQLite file that does not exist yet, -dry-run says so and prints the
// SQL from version 0, creating nothing.
//
//	leasehold -driver mysql -dsn "$DSN" migrate -dry-run
//
// ddl prints the SQL that takes a schema from version -from (0: nothing)
// to the latest, for -dialect (default: that of -driver), every statement
// safe to apply twice; see migrations.DDL. It needs no database.
//
//	leasehold ddl -dialect sqlserver -from 5 > upgrade.sql
//
// resign NAME asks the current holder of the lease NAME (as status prints
// it: cluster/<cluster>/<name> or global/<name>) to hand it over; -prefer
// names the process that should take it next, by holder, node or instance
// id. See coordination.Admin.Resign. No other process takes the
// lease for twice the holder's TTL but the preferred one, so a -prefer
// that no live process answers to (none holds a live lease or pool
// membership under that holder string, node or instance id) is refused,
// with the live holders listed; -force records it anyway, for a process
// that holds nothing yet.
//
//	leasehold -driver postgres -dsn "$DSN" resign global/billing -prefer node-b
//
// The command reads and asks through a coordination.Admin: it has no
// identity, holds nothing and writes nothing but resign requests.
//
// # Exit status
//
// 0 on success; 1 when the database cannot be reached or a statement
// fails, a SQLite file is missing, the schema is missing or older than
// this build, or resign names an unknown or free lease; 2 for a usage
// error (an unknown subcommand or flag, a bad value, no -dsn, a server's
// DSN given to a SQLite driver, a -prefer no live process answers to),
// with the usage printed once after the error. -h prints the usage of the
// command or a subcommand.
package main
