// Package testdb gives tests real databases to run against: private
// PostgreSQL and MariaDB servers started from the binaries installed on the
// machine, and SQLite files for both SQLite drivers.
//
// Servers are private to the test binary. Each one runs in a fresh
// directory under os.TempDir, listens only on 127.0.0.1 on a free port, and
// is stopped and removed when the tests end. The shared system servers on
// the default ports are never used.
//
// A package that uses the shared servers calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { testdb.Main(m) }
//
// and runs its tests once per target:
//
//	for _, tg := range testdb.Targets() {
//		t.Run(tg.Name, func(t *testing.T) {
//			db := tg.Open(t) // a fresh, empty database
//			...
//		})
//	}
//
// The shared PostgreSQL and MariaDB servers start on first use, once per
// test binary, so a package that only uses SQLite starts no server at all.
//
// When a server's binaries are not installed, tests that need it are
// skipped with a loud message, unless the REQUIRE_DIALECTS environment
// variable names the dialect (for example REQUIRE_DIALECTS=postgres,mysql,sqlite),
// in which case they fail. CI sets it so that a missing database can never
// turn into a green run that tested nothing.
//
// Fault tests get the Server behind a target with Target.Server and may stop
// and restart it. Such tests must not run in parallel with other tests of
// the same package that use the same kind of server.
//
// Failover tests get a replicated PostgreSQL pair with PostgresPair (or
// StartPostgresPair): a primary and a streaming standby, synchronous or
// asynchronous, behind one multi-host DSN that follows the primary.
package testdb
