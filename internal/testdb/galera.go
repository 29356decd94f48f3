package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
)

// GaleraNodes is how many nodes a private Galera cluster has: three, the
// least that keeps a primary component when one node goes.
const GaleraNodes = 3

// galeraProvider is the Galera library (package galera-4). It is a
// variable so that a test can point it at a missing file.
var galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// galeraParams end the DSNs of the galera target, as those of the mysql
// target end.
const galeraParams = "?parseTime=true&loc=UTC"

// Cluster is a private MariaDB Galera cluster: GaleraNodes mariadbd nodes
// on 127.0.0.1, each a Server with its own temporary directory and client
// port, replicating to each other with wsrep (multi-primary, virtually
// synchronous). Node 0 bootstrapped the cluster; the others joined it with
// a state transfer by rsync.
//
// Galera certifies write-write conflicts at commit only; row locks
// (SELECT ... FOR UPDATE) are local to a node, and a node's reads may lag
// the others' commits (wsrep_sync_wait is 0). Clients that connect to
// different nodes meet those differences, which is what the cluster is
// for.
type Cluster struct {
	nodes [GaleraNodes]*Server
}

// galeraPorts are the ports of one node besides its client port, all on
// 127.0.0.1: group communication, incremental state transfer and the
// rsync state transfer.
type galeraPorts struct{ gcomm, ist, sst int }

// StartGaleraCluster starts a private three-node Galera cluster and
// returns once every node is synced and accepts connections. Node 0 is
// created by mariadb-install-db and bootstraps the cluster
// (--wsrep-new-cluster); nodes 1 and 2 start with empty data directories
// and join it with a state transfer by rsync. The nodes run as StartMariaDB
// runs its server (no grant tables, relaxed durability), with small
// InnoDB and Galera caches. The caller must Close the cluster.
//
// It returns an error wrapping ErrBinariesMissing when MariaDB, the
// Galera library or rsync is not installed.
func StartGaleraCluster(ctx context.Context) (*Cluster, error) {
	mariadbd, installDB, err := findMariaDB()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(galeraProvider); err != nil {
		return nil, fmt.Errorf("%w: the Galera library %s is missing (package galera-4)", ErrBinariesMissing, galeraProvider)
	}
	for _, bin := range []string{"rsync", "wsrep_sst_rsync"} {
		if _, err := findBinary(bin); err != nil {
			return nil, err
		}
	}
	cred, err := serviceUser("mysql")
	if err != nil {
		return nil, err
	}
	var ports [GaleraNodes]galeraPorts
	for i := range ports {
		for _, p := range []*int{&ports[i].gcomm, &ports[i].ist, &ports[i].sst} {
			if *p, err = freePort(); err != nil {
				return nil, err
			}
		}
	}
	c := &Cluster{}
	for i := range c.nodes {
		eng := galeraEngine(ports, i)
		if c.nodes[i], err = newServer(eng, mariadbd, cred); err != nil {
			_ = c.Close()
			return nil, err
		}
		if i > 0 {
			// A joiner starts on an empty data directory, which the
			// state transfer fills.
			if err := c.nodes[i].makeDataDir(); err != nil {
				_ = c.Close()
				return nil, err
			}
		}
	}
	first := c.nodes[0]
	err = first.runSetup(ctx, installDB,
		"--no-defaults",
		"--datadir="+first.dir.dataDir,
		"--tmpdir="+first.dir.tmpDir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		innodbLogFileSize,
	)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := first.startFirst(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("testdb: Galera node 0 (bootstrap): %w", err)
	}
	// The joiners start one after the other. A donor serves one state
	// transfer at a time: started together, the second joiner waits for
	// the first one's transfer inside its own start budget, which a busy
	// machine can use up.
	for i := 1; i < GaleraNodes; i++ {
		if err := c.nodes[i].startFirst(ctx); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("testdb: Galera node %d (joiner): %w", i, err)
		}
	}
	for i := range c.nodes {
		if err := c.waitSynced(ctx, i); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

// galeraEngine is the engine of node i of a cluster whose nodes have the
// given ports: mariadbEngine's, with wsrep on. Only the first start of
// node 0 bootstraps the cluster; a restarted node 0 joins the others.
func galeraEngine(ports [GaleraNodes]galeraPorts, i int) *engine {
	eng := *mariadbEngine
	var members []string
	for _, p := range ports {
		members = append(members, "127.0.0.1:"+strconv.Itoa(p.gcomm))
	}
	bootstrap := i == 0
	var mu sync.Mutex
	eng.args = func(s *Server) []string {
		p := ports[i]
		// The state transfer's receive ports are the node's own, announced
		// with its request for a transfer: each start takes fresh ones, so
		// that a port another process took since the last choice fails
		// one start (errPortInUse, tried again), not every one.
		for _, port := range []*int{&p.ist, &p.sst} {
			if free, err := freePort(); err == nil {
				*port = free
			}
		}
		args := append(mariadbArgs(s),
			// Galera needs row events and interleaved auto-increment locks.
			"--binlog-format=ROW",
			"--innodb-autoinc-lock-mode=2",
			"--default-storage-engine=InnoDB",
			"--wsrep-on=ON",
			"--wsrep-provider="+galeraProvider,
			"--wsrep-cluster-name=leasehold-test",
			"--wsrep-cluster-address=gcomm://"+strings.Join(members, ","),
			"--wsrep-node-name=node"+strconv.Itoa(i),
			"--wsrep-node-address=127.0.0.1:"+strconv.Itoa(p.gcomm),
			"--wsrep-node-incoming-address=127.0.0.1:"+strconv.Itoa(s.port),
			"--wsrep-sst-method=rsync",
			"--wsrep-sst-receive-address=127.0.0.1:"+strconv.Itoa(p.sst),
			"--wsrep-provider-options="+strings.Join([]string{
				"gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(p.gcomm),
				"ist.recv_addr=127.0.0.1:" + strconv.Itoa(p.ist),
				"gcache.size=16M",
				"gcache.page_size=16M",
				// A test server need not survive a crash of the machine.
				"pc.recovery=false",
			}, ";"),
		)
		mu.Lock()
		defer mu.Unlock()
		if bootstrap {
			args = append(args, "--wsrep-new-cluster")
			bootstrap = false
		}
		return args
	}
	return &eng
}

// WaitSynced waits until every node reports itself synced with a cluster
// that has every node: after a node was restarted (Node(i).Kill, then
// Start, which returns once the node accepts connections, before it has
// caught up) or isolated and let back (Isolate).
func (c *Cluster) WaitSynced(ctx context.Context) error {
	for i := range c.nodes {
		if err := c.waitSynced(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// Isolate cuts node i off the other nodes (on) or lets it back (off),
// through the Galera option gmcast.isolate, which closes the node's group
// connections and refuses new ones. The two others keep a primary
// component. The isolated node notices it is alone only once it has given
// up on the others (evs.suspect_timeout, 5 s by default): until then it
// still answers reads and holds its writes, and the others hold theirs
// too; then it refuses every statement (error 1047, WSREP has not yet
// prepared node for application use) until it has rejoined. After
// letting it back, WaitSynced waits for it to catch up.
func (c *Cluster) Isolate(ctx context.Context, i int, on bool) error {
	v := 0
	if on {
		v = 1
	}
	s := c.nodes[i]
	if err := s.exec(ctx, fmt.Sprintf("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=%d'", v)); err != nil {
		return fmt.Errorf("testdb: Galera node %d on port %d: set gmcast.isolate=%d: %w", i, s.port, v, err)
	}
	return nil
}

// waitSynced waits until node i reports itself synced with the cluster
// and the cluster has every node.
func (c *Cluster) waitSynced(ctx context.Context, i int) error {
	s := c.nodes[i]
	what := fmt.Sprintf("Galera node %d on port %d to be synced in a cluster of %d", i, s.port, GaleraNodes)
	return poll(ctx, what, func(ctx context.Context) (bool, error) {
		db, err := s.adminPool()
		if err != nil {
			return false, err
		}
		var name, state, size string
		if err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state); err != nil {
			return false, err
		}
		if err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_cluster_size'").Scan(&name, &size); err != nil {
			return false, err
		}
		if state != "Synced" || size != strconv.Itoa(GaleraNodes) {
			return false, fmt.Errorf("state %s, cluster size %s", state, size)
		}
		return true, nil
	})
}

// Node returns node i (0, 1 or 2).
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// DSN returns a DSN of node i for the named database, as Server.DSN does.
func (c *Cluster) DSN(i int, database string) string { return c.nodes[i].DSN(database) }

// CreateDatabase creates an empty database on node 0 and returns once
// every node has it. DDL runs in total order on every node, but a node
// applies it in its own time.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	if err := c.nodes[0].CreateDatabase(ctx, name); err != nil {
		return err
	}
	for i, s := range c.nodes {
		what := fmt.Sprintf("Galera node %d on port %d to have database %s", i, s.port, name)
		err := poll(ctx, what, func(ctx context.Context) (bool, error) {
			db, err := s.adminPool()
			if err != nil {
				return false, err
			}
			var n int
			err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n)
			return n == 1, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// DropDatabase drops the named database, on every node.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	return c.nodes[0].DropDatabase(ctx, name)
}

// Close stops every node and removes their directories, joiners first. It
// may be called more than once.
func (c *Cluster) Close() error {
	var errs []error
	for i := len(c.nodes) - 1; i >= 0; i-- {
		if c.nodes[i] != nil {
			errs = append(errs, c.nodes[i].Close())
		}
	}
	return errors.Join(errs...)
}

// GaleraTarget is the target "galera": a private three-node MariaDB Galera
// cluster (StartGaleraCluster) of its own. Open gives a handle on node 0;
// GaleraCluster gives a test every node. It is not among Targets: the
// suites that run on it say so (ClusterTargets).
var GaleraTarget = Target{Name: "galera", Dialect: "mysql", Replicated: true}

// ClusterTargets returns PoolerTargets and GaleraTarget: the targets of
// the conformance suites, which must hold on a multi-primary cluster too.
func ClusterTargets() []Target {
	return append(PoolerTargets(), GaleraTarget)
}

// galeraTarget is the backend of GaleraTarget. Its cluster starts once, on
// first use.
type galeraTarget struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

func (*galeraTarget) needsPrivateServer() {}

// start starts the cluster, once, or skips or fails t when it cannot.
func (g *galeraTarget) start(t testing.TB, tg Target) *Cluster {
	t.Helper()
	g.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		g.cluster, g.err = StartGaleraCluster(ctx)
	})
	if g.err != nil {
		if errors.Is(g.err, ErrBinariesMissing) {
			unavailable(t, tg.Dialect, fmt.Errorf("the %s target: %w", tg.Name, g.err))
		}
		t.Fatalf("testdb: shared %s cluster: %v", tg.Name, g.err)
	}
	return g.cluster
}

// server returns node 0 of the cluster.
func (g *galeraTarget) server(t testing.TB, tg Target) *Server {
	t.Helper()
	return g.start(t, tg).nodes[0]
}

func (g *galeraTarget) openDSN(t testing.TB, tg Target) (driver, dsn string) {
	t.Helper()
	dsns := g.openDSNs(t, tg)
	return dbopen.MySQL, dsns[0]
}

// openDSNs creates a fresh database on the cluster and returns a DSN of
// it on every node.
func (g *galeraTarget) openDSNs(t testing.TB, tg Target) []string {
	t.Helper()
	c := g.start(t, tg)
	name := uniqueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateDatabase(ctx, name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil {
			t.Logf("testdb: %v", err)
		}
	})
	dsns := make([]string, GaleraNodes)
	for i := range dsns {
		dsns[i] = c.DSN(i, name) + galeraParams
	}
	return dsns
}

// GaleraCluster gives the test a fresh, empty database on the shared
// private Galera cluster (GaleraTarget), which starts on first use, and
// returns the cluster and a DSN of the database on each node, for
// dbopen.Open with dbopen.MySQL. The database is dropped when the test
// ends. It skips the test, loudly, when MariaDB, the Galera library or
// rsync is missing, or fails it when REQUIRE_DIALECTS names mysql.
func GaleraCluster(t testing.TB) (*Cluster, []string) {
	t.Helper()
	skipPrivateOnly(t, GaleraTarget)
	g := backends[GaleraTarget.Name].(*galeraTarget)
	dsns := g.openDSNs(t, GaleraTarget)
	return g.cluster, dsns
}

// makeDataDir creates the server's empty data directory, owned by the
// user it runs as.
func (s *Server) makeDataDir() error {
	if err := os.Mkdir(s.dir.dataDir, 0o700); err != nil {
		return fmt.Errorf("testdb: make %s data directory: %w", s.eng.kind, err)
	}
	if s.dir.cred != nil {
		if err := os.Chown(s.dir.dataDir, int(s.dir.cred.Uid), int(s.dir.cred.Gid)); err != nil {
			return fmt.Errorf("testdb: hand %s data directory to uid %d: %w", s.eng.kind, s.dir.cred.Uid, err)
		}
	}
	return nil
}

// OpenGalera gives the test a fresh, empty database on the shared private
// Galera cluster and gorm handles to it, closed when the test ends: one on
// each node (nodes), as processes connected to different nodes have them,
// and synced, on node 0, whose statements first wait until the node has
// applied every change the cluster had committed (wsrep_sync_wait=15:
// reads, updates, deletes, inserts and SHOW), for a test's own checks and
// changes. Handles are opened as Open opens them. It skips or fails the
// test as GaleraCluster does.
func OpenGalera(t testing.TB) (synced *gorm.DB, nodes []*gorm.DB) {
	t.Helper()
	_, dsns := GaleraCluster(t)
	open := func(dsn string) *gorm.DB {
		db, err := dbopen.Open(dbopen.MySQL, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
		if err != nil {
			t.Fatalf("testdb: open galera database: %v", err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			t.Fatalf("testdb: open galera database: get its *sql.DB: %v", err)
		}
		t.Cleanup(func() {
			if err := sqlDB.Close(); err != nil {
				t.Errorf("testdb: close galera database: %v", err)
			}
		})
		return db
	}
	for _, dsn := range dsns {
		nodes = append(nodes, open(dsn))
	}
	return open(dsns[0] + "&wsrep_sync_wait=15"), nodes
}
