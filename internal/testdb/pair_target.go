package testdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// PostgresPairTarget and MariaDBPairTarget are the targets "postgres-pair"
// and "mariadb-pair": a private replicated pair of their own in Sync mode
// (StartPostgresPair, StartMariaDBPair), started once on first use. Open
// gives a handle through the pair's DSN, which reaches whichever server is
// the primary, as an application configured for failover connects. They
// are not among Targets: the suites that run on them say so (PairTargets).
var (
	PostgresPairTarget = Target{Name: "postgres-pair", Dialect: "postgres", Replicated: true}
	MariaDBPairTarget  = Target{Name: "mariadb-pair", Dialect: "mysql", Replicated: true}
)

// PairTargets returns PostgresPairTarget and MariaDBPairTarget.
func PairTargets() []Target {
	return []Target{PostgresPairTarget, MariaDBPairTarget}
}

// pairTarget is the backend of a pair's target.
type pairTarget struct {
	start func(context.Context, ReplicationMode) (*Pair, error)

	once sync.Once
	pair *Pair
	err  error
}

func (*pairTarget) needsPrivateServer() {}

// started starts the pair, once, or skips or fails t when it cannot.
func (p *pairTarget) started(t testing.TB, tg Target) *Pair {
	t.Helper()
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		p.pair, p.err = p.start(ctx, Sync)
		if p.err == nil {
			pairsMu.Lock()
			pairs = append(pairs, p.pair)
			pairsMu.Unlock()
		}
	})
	if p.err != nil {
		if errors.Is(p.err, ErrBinariesMissing) {
			unavailable(t, tg.Dialect, fmt.Errorf("the %s target: %w", tg.Name, p.err))
		}
		t.Fatalf("testdb: shared %s: %v", tg.Name, p.err)
	}
	return p.pair
}

// server returns the pair's primary at the time of the call.
func (p *pairTarget) server(t testing.TB, tg Target) *Server {
	t.Helper()
	return p.started(t, tg).Primary()
}

// openDSN creates a fresh database on the pair, replayed on the standby,
// and returns the pair's DSN of it.
func (p *pairTarget) openDSN(t testing.TB, tg Target) (driver, dsn string) {
	t.Helper()
	pair := p.started(t, tg)
	name := uniqueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pair.CreateDatabase(ctx, name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pair.Primary().DropDatabase(ctx, name); err != nil {
			t.Logf("testdb: %v", err)
		}
	})
	return pair.Driver(), pair.DSN(name)
}

var (
	// pairsMu guards pairs, the pairs the pair targets started, which
	// Run closes.
	pairsMu sync.Mutex
	pairs   []*Pair
)

// closePairs closes the pairs the pair targets started: their servers,
// and the forwarder in front of a MariaDB pair.
func closePairs() error {
	pairsMu.Lock()
	defer pairsMu.Unlock()
	var errs []error
	for _, p := range pairs {
		errs = append(errs, p.Close())
	}
	pairs = nil
	return errors.Join(errs...)
}
