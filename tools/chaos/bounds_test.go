package chaos

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/history"
	"github.com/leasehold/leasehold/internal/memstore"
)

// TestKillBound checks that the kill bound covers both recoveries it
// waits for, each by the library's own formula, and that the workers'
// poll interval is valid.
func TestKillBound(t *testing.T) {
	kill := Bounds()[history.FaultKill]
	join := rebalanceBound(PollInterval)
	if pool := crashRebalanceBound(TTL, PollInterval); kill < pool+join+slack {
		t.Errorf("kill bound %v is below the pool's crash rebalance %v plus a join %v and slack %v", kill, pool, join, slack)
	}
	if lease := TTL + RetryInterval*3/2; kill < lease+join+slack {
		t.Errorf("kill bound %v is below the lease takeover %v plus a join %v and slack %v", kill, lease, join, slack)
	}
	// The library checks a PoolConfig when a pool is made: on an
	// in-process store, with no I/O.
	db, err := memstore.New().Conn().Open()
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.New("bounds", Cluster)
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordination.New(db, id, CoordinationConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pool(coordination.GlobalScope, ItemsWorker, coordination.PoolConfig{PollInterval: PollInterval}); err != nil {
		t.Errorf("PollInterval: %v", err)
	}
}

// TestFailoverBound checks the failover bound against its derivation, by
// the library's own rebalance formula, and that CHAOS_KINDS parsing names
// an unknown kind and lists the valid ones.
func TestFailoverBound(t *testing.T) {
	want := RenewInterval + TTL + RetryInterval*3/2 + 2*rebalanceBound(PollInterval) + PollInterval/2 + slack
	for _, k := range []history.FaultKind{history.FaultFailoverSync, history.FaultFailoverAsync} {
		if b := Bounds()[k]; b != want {
			t.Errorf("%s bound %v, want %v", k, b, want)
		}
	}
	kinds, err := ParseKinds(" failover-sync,failover-async,failover-sync ")
	if err != nil || !slices.Equal(kinds, []history.FaultKind{history.FaultFailoverSync, history.FaultFailoverAsync}) {
		t.Errorf("ParseKinds = %v, %v", kinds, err)
	}
	if kinds, err := ParseKinds(""); kinds != nil || err != nil {
		t.Errorf("ParseKinds(\"\") = %v, %v; want every kind (nil)", kinds, err)
	}
	_, err = ParseKinds("kill,failover")
	if err == nil || !strings.Contains(err.Error(), `"failover"`) || !strings.Contains(err.Error(), "failover-async") || !strings.Contains(err.Error(), "db-restart") {
		t.Errorf("ParseKinds(kill,failover) error %v, want it to name failover and list the valid kinds", err)
	}
}

// TestPlanShares checks that the faults are shared in proportion to the
// kinds of each dialect, and that CHAOS_KINDS leaves out the dialects
// that inject none of the kinds.
func TestPlanShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := plan(Options{Faults: 40, Dialects: Dialects, Extended: true}, true, rng)
	n, kinds := 0, 0
	for _, d := range Dialects {
		kinds += len(Kinds(d, true, true))
	}
	for _, d := range Dialects {
		want := 40 * len(Kinds(d, true, true)) / kinds
		if len(p[d]) < want || len(p[d]) > want+1 {
			t.Errorf("%s: %d faults, want about %d", d, len(p[d]), want)
		}
		n += len(p[d])
	}
	if n != 40 {
		t.Errorf("%d faults planned, want 40", n)
	}
	p = plan(Options{Faults: 7, Dialects: Dialects, Extended: true, Kinds: []history.FaultKind{history.FaultFailoverSync}}, true, rng)
	if len(p) != 2 || len(p[PostgresPair])+len(p[MariaDBPair]) != 7 || len(p[PostgresPair]) < 3 || len(p[MariaDBPair]) < 3 {
		t.Errorf("plan with only failover-sync: %v, want 7 faults shared by the two pairs", p)
	}
	for _, k := range append(p[PostgresPair], p[MariaDBPair]...) {
		if k != history.FaultFailoverSync {
			t.Errorf("planned %s, want only failover-sync", k)
		}
	}
}

// TestGaleraKinds checks that the Galera node faults run on Galera only,
// in place of the database restart, that their bound is the rejoin after
// a heal, and that the short round leaves Galera out.
func TestGaleraKinds(t *testing.T) {
	for _, d := range Dialects {
		ks := Kinds(d, true, true)
		galera := slices.Contains(ks, history.FaultGaleraNodeKill) && slices.Contains(ks, history.FaultGaleraPartition)
		if galera != (d == Galera) {
			t.Errorf("%s: kinds %v; want the Galera node faults on %s only", d, ks, Galera)
		}
		if d == Galera && slices.Contains(ks, history.FaultDBRestart) {
			t.Errorf("%s: kinds %v; want no db-restart (no one server to restart)", d, ks)
		}
	}
	rejoin := Bounds()[history.FaultCut]
	for _, k := range []history.FaultKind{history.FaultGaleraNodeKill, history.FaultGaleraPartition} {
		if b := Bounds()[k]; b != rejoin {
			t.Errorf("%s bound %v, want the rejoin bound %v", k, b, rejoin)
		}
	}
	if GaleraDownFor < GaleraEvictAfter+TTL {
		t.Errorf("GaleraDownFor %v is shorter than the eviction %v and a TTL %v", GaleraDownFor, GaleraEvictAfter, TTL)
	}
	if slices.Contains(ShortDialects, Galera) {
		t.Errorf("ShortDialects %v include %s", ShortDialects, Galera)
	}
	kinds, err := ParseKinds("galera-node-kill,galera-partition")
	if err != nil || len(kinds) != 2 {
		t.Errorf("ParseKinds(galera-node-kill,galera-partition) = %v, %v", kinds, err)
	}
}
