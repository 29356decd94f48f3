// Package testdb gives tests real databases to run against: private
// PostgreSQL and MariaDB servers (and a MariaDB Galera cluster) started
// from the binaries installed on the machine, and SQLite files for both
// SQLite drivers.
//
// Servers are private to the test binary. Each one runs in a fresh
// directory under os.TempDir, listens only on 127.0.0.1 on a free port, and
// is stopped and removed when the tests end. The shared system servers on
// the default ports are never used, unless a variable below names one.
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
// skipped with a loud message (it carries the "LOUD:" marker, so that the
// summary of make test shows it on a line of its own), unless the REQUIRE_DIALECTS environment
// variable names the dialect (for example REQUIRE_DIALECTS=postgres,mysql,sqlite),
// in which case they fail. CI sets it so that a missing database can never
// turn into a green run that tested nothing.
//
// Fault tests get the Server behind a target with Target.Server and may stop
// and restart it. Such tests must not run in parallel with other tests of
// the same package that use the same kind of server.
//
// The conformance suites also run on PgBouncerTarget (PoolerTargets): a
// private PgBouncer in transaction pooling mode in front of a private
// PostgreSQL server of its own, as most PostgreSQL deployments put one.
// Without the pgbouncer binary its tests are skipped (or fail) as those of
// a missing server are; it is not among Targets, so other tests do not
// run on it.
//
// The conformance suite of the coordination package runs on PairTargets
// too: a private PostgreSQL pair (streaming replication) and a private
// MariaDB pair (GTID replication), each semi-synchronous, reached through
// a DSN that follows the primary.
//
// The conformance suites run on GaleraTarget too (ClusterTargets): a
// private three-node MariaDB Galera cluster (StartGaleraCluster), node 0
// bootstrapping it and the others joining by an rsync state transfer.
// GaleraCluster and OpenGalera give a test the DSNs of, or handles on,
// a fresh database on every node, so that its processes talk to
// different nodes. Without the Galera library or rsync its tests are
// skipped (or fail, for mysql in REQUIRE_DIALECTS) as those of a missing
// server are.
//
// Failover tests get a replicated PostgreSQL pair with PostgresPair (or
// StartPostgresPair): a primary and a streaming standby, synchronous or
// asynchronous, behind one multi-host DSN that follows the primary; or a
// MariaDB pair with MariaDBPair (StartMariaDBPair): a primary and a GTID
// replica, semi-synchronous or asynchronous, behind a forwarding port of
// the pair's that follows the primary.
//
// LEASEHOLD_TEST_POSTGRES_DSN and LEASEHOLD_TEST_MYSQL_DSN point the tests of
// their dialect at a server of the user's own instead of the private one,
// and LEASEHOLD_TEST_SQLSERVER_DSN adds the target "sqlserver", which has no
// private server. Each test still gets a fresh database, created and dropped
// through the DSN, so its user must be allowed to create and drop databases.
// On such a target Target.Server, and SkipExternal, skip the test: it cannot
// stop someone else's server.
//
// Nothing a test makes outlives it on any server, the user's included: a
// PostgreSQL test that connects as a role with fewer rights gets one from
// Target.Role, made before its database and dropped after it.
package testdb
