package chaos

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/internal/history"
	"github.com/leasehold/leasehold/internal/testdb"
)

// Timing of the Galera node faults.
const (
	// GaleraEvictAfter is how long the nodes of a Galera cluster take to
	// give up on a node that stopped answering (killed, or isolated):
	// evs.suspect_timeout (5 s by default) and one evs.inactive_check_period
	// (1 s). Until then the whole cluster holds its commits, so every
	// process's renewals wait, whatever its node.
	GaleraEvictAfter = 6 * time.Second
	// GaleraDownFor is how long a killed node stays down, and an isolated
	// node cut off: until the others have evicted it and every term held
	// when the cluster stopped committing has expired, so that the
	// processes on the other nodes have taken over before it comes back.
	GaleraDownFor = GaleraEvictAfter + TTL
	// GaleraRejoinAllowance is the time allowed for a node to come back
	// once let back or started again: to start (a killed node's state is
	// sent again in full, by rsync), to catch up, and for every node to be
	// synced.
	GaleraRejoinAllowance = 30 * time.Second
	// galeraWorkerParams end the DSN of a worker, which talks to one
	// node.
	galeraWorkerParams = "?parseTime=true&loc=UTC&timeout=2s"
	// galeraCheckParams end the DSNs with which a worker finds out
	// whether a commit that failed happened: their reads wait until
	// their node has applied every commit the cluster had ordered.
	galeraCheckParams = galeraWorkerParams + "&wsrep_sync_wait=1"
)

// GaleraBound is the recovery bound of both Galera node faults, measured
// from the heal, when every node is synced again: by then the processes
// on the other nodes have led and worked for TTL (GaleraDownFor), and
// those of the faulted node have lost their terms, as after a cut; they
// join the pool again, which takes a retry and one barrier, as after any
// heal: rejoin in Bounds, the trust window TTL - Margin, stepJitter (the
// retry of a step failed during the fault), and slack.
const GaleraBound = TTL - Margin + stepJitter + slack

// isGaleraFault reports whether k is a fault of a Galera node.
func isGaleraFault(k history.FaultKind) bool {
	return k == history.FaultGaleraNodeKill || k == history.FaultGaleraPartition
}

// galeraNodes is the Galera dialect's cluster, and the runner's own way to
// it: a dialer that connects to the first node not faulted.
type galeraNodes struct {
	cluster *testdb.Cluster
	// faulted is the node under a fault, which the runner's connections
	// avoid, or -1.
	faulted atomic.Int32
	// network is the name under which the dialer is registered with the
	// MySQL driver.
	network string
}

// galeraNetworks numbers the dialers registered, one per run: the
// driver's registry is global.
var galeraNetworks atomic.Int32

// startGalera starts a private three-node cluster and creates the chaos
// database on it.
func startGalera(ctx context.Context) (*galeraNodes, error) {
	c, err := testdb.StartGaleraCluster(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.CreateDatabase(ctx, "chaos"); err != nil {
		_ = c.Close()
		return nil, err
	}
	g := &galeraNodes{cluster: c, network: "chaos-galera-" + strconv.Itoa(int(galeraNetworks.Add(1)))}
	g.faulted.Store(-1)
	mysql.RegisterDialContext(g.network, g.dial)
	return g, nil
}

// addr is node i's client address.
func (g *galeraNodes) addr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(g.cluster.Node(i).Port()))
}

// dial connects to the first node that answers, leaving out the faulted
// one.
func (g *galeraNodes) dial(ctx context.Context, _ string) (net.Conn, error) {
	var d net.Dialer
	var errs []error
	for i := range testdb.GaleraNodes {
		if int32(i) == g.faulted.Load() {
			continue
		}
		c, err := d.DialContext(ctx, "tcp", g.addr(i))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no Galera node answers: %v", errs)
}

// runnerDSN is the DSN of the runner's own handle: through the dialer, its
// reads waiting until their node has applied every commit the cluster
// had ordered, so that its checks see every worker's commits.
func (g *galeraNodes) runnerDSN() string {
	return "root@" + g.network + "(nodes)/chaos" + galeraCheckParams
}

// checkDSNs are the DSNs with which a worker on node i finds out whether
// a failed commit happened: of the other nodes, whose reads wait for
// every commit ordered (a fault of one node leaves the others).
func (g *galeraNodes) checkDSNs(i int) []string {
	var dsns []string
	for j := range testdb.GaleraNodes {
		if j != i {
			dsns = append(dsns, "root@tcp("+g.addr(j)+")/chaos"+galeraCheckParams)
		}
	}
	return dsns
}

// injectGalera injects a fault of one Galera node, the node of target (a
// process, the leader when there is one) or of a process at random, and
// returns the time of the heal, when every node is synced again.
//
// galera-node-kill SIGKILLs the node's mariadbd, keeps it down for
// GaleraDownFor and starts it again: it joins the others with a full
// state transfer. galera-partition isolates the node from the two others
// (gmcast.isolate) for GaleraDownFor: it goes on answering reads at first,
// and refuses every statement once it knows itself alone; then it is let
// back and catches up. The processes on the node meet errors until their
// trust deadline passes and they lose their terms; they keep trying, and
// join again once the node is back.
func (i *injector) injectGalera(k history.FaultKind, ps []*proc, target *proc) (time.Time, error) {
	g := i.database.galera
	if g == nil {
		return time.Time{}, fmt.Errorf("fault %s needs the %s dialect", k, Galera)
	}
	role := "the leader's"
	if target == nil || i.rng.IntN(2) == 0 {
		target, role = ps[i.rng.IntN(len(ps))], "a random process's"
	}
	node := target.galeraNode
	var on []string
	for _, p := range ps {
		if p.galeraNode == node {
			on = append(on, p.node)
		}
	}
	slices.Sort(on)
	srv := g.cluster.Node(node)
	ctx, cancel := context.WithTimeout(context.Background(), GaleraRejoinAllowance+readyTimeout)
	defer cancel()
	what := fmt.Sprintf("node %d (port %d, %s node, processes %v)", node, srv.Port(), role, on)
	g.faulted.Store(int32(node))
	defer g.faulted.Store(-1)
	ev := history.Event{FaultKind: k, Target: fmt.Sprintf("%s/node%d", Galera, node)}
	if k == history.FaultGaleraNodeKill {
		i.logf("fault %s: SIGKILL %s for %v", k, what, GaleraDownFor)
		ev.Phase = history.PhaseStart
		i.verdict.fault(ev)
		if err := srv.Kill(); err != nil {
			return time.Now(), err
		}
	} else {
		i.logf("fault %s: cutting %s off the other nodes for %v", k, what, GaleraDownFor)
		ev.Phase = history.PhaseStart
		i.verdict.fault(ev)
		if err := g.cluster.Isolate(ctx, node, true); err != nil {
			return time.Now(), err
		}
	}
	timer := time.NewTimer(GaleraDownFor)
	<-timer.C
	began := time.Now()
	if k == history.FaultGaleraNodeKill {
		if err := srv.Start(); err != nil {
			return time.Now(), fmt.Errorf("start Galera node %d again: %w", node, err)
		}
	} else if err := g.cluster.Isolate(ctx, node, false); err != nil {
		return time.Now(), err
	}
	if err := g.cluster.WaitSynced(ctx); err != nil {
		return time.Now(), fmt.Errorf("after fault %s on node %d: %w", k, node, err)
	}
	ev.Phase = history.PhaseHeal
	i.verdict.fault(ev)
	at := time.Now()
	i.logf("node %d back and every node synced %v later", node, at.Sub(began).Round(time.Millisecond))
	if d := at.Sub(began); d > GaleraRejoinAllowance {
		i.problem("Galera node %d took %v to come back, more than the allowance %v", node, d, GaleraRejoinAllowance)
	}
	return at, nil
}
