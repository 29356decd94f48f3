package coordination_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
)

// TestScale runs the cost model of sessions on every database: many
// leases on one process, many processes joining one pool at once, and the
// bound on connections.
func TestScale(t *testing.T) {
	runCases(t, []conformanceCase{
		{"TenThousandLeases", caseTenThousandLeases},
		{"PoolMembersJoiningAtOnce", casePoolMembersJoiningAtOnce},
		{"RowsOfEarlierBuildsHonoured", caseRowsOfEarlierBuilds},
	})
}

// connSampler counts, from the database's side where there is one, the
// connections of the database under test other than its own, every few
// milliseconds, and keeps the largest count. On SQLite, which has no
// server, it reads the pool's own count instead.
type connSampler struct {
	t         testing.TB
	max       atomic.Int64
	described atomic.Bool
	stop      chan struct{}
	done      chan struct{}
	errors    atomic.Int64
}

func sampleConnections(t *testing.T, b *bundle) *connSampler {
	t.Helper()
	sqlDB, err := b.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	s := &connSampler{t: t, stop: make(chan struct{}), done: make(chan struct{})}
	var count func(ctx context.Context) (int64, error)
	switch b.target.Dialect {
	case "postgres", "mysql":
		// A connection of its own, taken out of the pool before anything
		// else runs, counts the others on the server.
		conn, err := sqlDB.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Only client backends are connections: autovacuum and parallel
		// query workers also show under the database's name.
		q := "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
		if b.target.Dialect == "mysql" {
			q = "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()"
		}
		defer func() {
			go func() { <-s.done; _ = conn.Close() }()
		}()
		detail := "SELECT pid, backend_type, COALESCE(state, ''), LEFT(query, 80) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
		if b.target.Dialect == "mysql" {
			detail = "SELECT id, command, COALESCE(state, ''), LEFT(COALESCE(info, ''), 80) FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()"
		}
		count = func(ctx context.Context) (n int64, err error) {
			err = conn.QueryRowContext(ctx, q).Scan(&n)
			if err == nil && n > store.DefaultMaxConnections {
				s.describe(ctx, conn, detail, n)
			}
			return n, err
		}
	default:
		count = func(context.Context) (int64, error) { return int64(sqlDB.Stats().OpenConnections), nil }
	}
	go func() {
		defer close(s.done)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			n, err := count(ctx)
			cancel()
			if err != nil {
				s.errors.Add(1)
			} else if n > s.max.Load() {
				s.max.Store(n)
			}
			select {
			case <-s.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return s
}

// describe logs the connections a sample found over the bound, once, so
// that a failure says what they were doing.
func (s *connSampler) describe(ctx context.Context, conn *sql.Conn, q string, n int64) {
	if !s.described.CompareAndSwap(false, true) {
		return
	}
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		s.t.Logf("%d connections sampled; listing them: %v", n, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var kind, state, query string
		if err := rows.Scan(&id, &kind, &state, &query); err != nil {
			s.t.Logf("%d connections sampled; listing them: %v", n, err)
			return
		}
		s.t.Logf("%d connections sampled: %d %s %q %q", n, id, kind, state, query)
	}
}

// finish stops sampling and returns the largest count seen.
func (s *connSampler) finish() int64 {
	close(s.stop)
	<-s.done
	return s.max.Load()
}

// caseTenThousandLeases holds 10,000 leases on one process: they are
// acquired in a bounded number of statements, renewed by one statement per
// tick, released together at shutdown, and at no moment does the library
// use more than its two connections.
func caseTenThousandLeases(t *testing.T, b *bundle) {
	const n = 10000
	sampler := sampleConnections(t, b)
	cl := &countingLogger{}
	db := b.db.Session(&gorm.Session{Logger: cl})
	// Ticks of a second, and a trust window and statement timeouts (a
	// campaign round's scale with RenewInterval) that no busy machine
	// exhausts: the case asserts that nothing fails.
	cfg := b.fastConfig()
	cfg.TTL, cfg.Margin, cfg.RenewInterval, cfg.RetryInterval = time.Minute, 10*time.Second, time.Second, time.Second
	// The drain ends as soon as every lease is released: 20 statements,
	// which the pure-Go SQLite driver under the race detector on a loaded
	// machine was seen to need more than 20s for.
	cfg.ShutdownTimeout = 3 * wait
	r := start(t, db, "node-a", cfg)
	waitListening(t, r) // listening sends its own statements once, at the start
	events := r.Subscribe(t.Context(), 64)
	var bad atomic.Int64
	go func() {
		for ev := range events {
			if ev.Kind == coordination.EventError || ev.Kind == coordination.EventLost {
				if bad.Add(1) == 1 {
					t.Logf("first error or loss event: %v %s: %v", ev.Kind, ev.Key, ev.Err)
				}
			}
		}
	}()
	ticks := tickSignal(cl)

	began := time.Now()
	before, _ := cl.snapshot()
	held := make(chan *coordination.Lease, n)
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	var work sync.WaitGroup
	campaignErrs := make(chan error, n)
	for i := range n {
		e := election(t, r.Coordinator, coordination.GlobalScope, fmt.Sprintf("scale-%05d", i))
		work.Go(func() {
			l, err := e.Campaign(ctx)
			if err != nil {
				campaignErrs <- fmt.Errorf("Campaign(%s): %w", e.Key(), err)
				return
			}
			held <- l
			// As Election.Run does: release once the term ends.
			<-l.Context().Done()
			_ = l.Release(context.Background())
		})
	}
	for i := range n {
		select {
		case <-held:
		case err := <-campaignErrs:
			t.Fatalf("%d of %d leases held: %v", i, n, err)
		case <-ctx.Done():
			t.Fatalf("%d of %d leases held after %v", i, n, 3*wait)
		}
	}
	acquired, _ := cl.snapshot()
	t.Logf("LOUD: %s: %d leases acquired in %v with %d statements", b.target.Name, n, time.Since(began).Round(time.Millisecond), acquired-before)
	if got := acquired - before; got > 500 {
		t.Errorf("acquiring %d leases took %d statements, want a bounded number (at most 500)", n, got)
	}

	first, second := twoTicks(t, r, cl, ticks, n)
	if got := second.renewal - first.renewal; got != 1 {
		t.Errorf("renew statements per tick with %d leases = %d, want 1", n, got)
	}
	if got := second.stmts - first.stmts; got != 1 {
		t.Errorf("statements per tick with %d leases = %d, want 1", n, got)
	}

	// Shutdown: every term's work returns, and the releases go out
	// together.
	stopping, _ := cl.snapshot()
	stopped := time.Now()
	r.cancel()
	select {
	case <-r.Done():
	case <-time.After(cfg.ShutdownTimeout + wait):
		t.Fatalf("coordinator did not stop within %v", cfg.ShutdownTimeout+wait)
	}
	work.Wait()
	ended, _ := cl.snapshot()
	t.Logf("LOUD: %s: shutdown with %d leases took %v and %d statements", b.target.Name, n, time.Since(stopped).Round(time.Millisecond), ended-stopping)
	if got := ended - stopping; got > 2*n/500+20 {
		t.Errorf("shutdown with %d leases took %d statements, want them released in batches (at most %d)", n, got, 2*n/500+20)
	}
	maxConns := sampler.finish()
	t.Logf("LOUD: %s: at most %d connections of the library at any sample (%d samples failed)", b.target.Name, maxConns, sampler.errors.Load())
	if maxConns > store.DefaultMaxConnections {
		t.Errorf("the library used %d connections at once, want at most %d", maxConns, store.DefaultMaxConnections)
	}
	rows, err := rawStore(t, b.db).List(context.Background(), "global/scale-")
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, row := range rows {
		if row.Live() {
			live++
		}
	}
	if len(rows) != n || live != 0 {
		t.Errorf("after shutdown: %d rows, %d live; want %d rows, none live", len(rows), live, n)
	}
	if got := bad.Load(); got != 0 {
		t.Errorf("%d error or loss events while nothing failed", got)
	}
}

// casePoolMembersJoiningAtOnce starts twenty members of one pool at the
// same moment: none of their joins fails, whatever the others publish and
// prune meanwhile, and all of them are assigned.
func casePoolMembersJoiningAtOnce(t *testing.T, b *bundle) {
	const members = 20
	cfg := steady(b.fastConfig())
	cfg.RenewInterval = time.Second
	rec := newRecorder()
	// A statement that times out on a loaded machine is retried at the
	// next step; a join refused because pruning deleted the row it was
	// about to take is the failure this case is about. A refusal wraps
	// ErrNotAcquired, or the session's loss (ErrLeaseLost) when the session lost trust while
	// the row was taken; both count.
	var failures atomic.Int64
	var runs []*running
	for i := range members {
		r := start(t, b.db, fmt.Sprintf("node-%02d", i), cfg)
		events := r.Subscribe(t.Context(), 64)
		go func() {
			for ev := range events {
				if ev.Kind == coordination.EventError && (errors.Is(ev.Err, coordination.ErrNotAcquired) || isSessionLost(ev.Err)) {
					failures.Add(1)
					t.Logf("%s: %v", r.Holder(), ev.Err)
				}
			}
		}()
		runs = append(runs, r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var pools sync.WaitGroup
	gate := make(chan struct{})
	for _, r := range runs {
		p, err := r.Pool(coordination.GlobalScope, "joiners", coordination.PoolConfig{PollInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		pools.Go(func() {
			<-gate
			_ = p.Run(ctx, rec.fn(r.Identity().Instance), nil)
		})
	}
	close(gate)
	rec.waitSettled(t, members, 3*wait)
	cancel()
	pools.Wait()
	if got := failures.Load(); got != 0 {
		t.Errorf("%d joins refused while %d members joined at once, want none", got, members)
	}
	rec.check(t)
}

// caseRowsOfEarlierBuilds: a lease held by a build before sessions (its
// row carries its own expiry and no session) is not taken over until that
// expiry, and a lease held by a session looks held, until it is released,
// to such a build, which reads only its own expiry column.
func caseRowsOfEarlierBuilds(t *testing.T, b *bundle) {
	ctx := context.Background()
	s := rawStore(t, b.db)
	if _, err := s.Migrate(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	tables := s.Tables()
	const old, current = "global/held-by-old-build", "global/held-by-session"
	if err := s.EnsureRows(ctx, []string{old}); err != nil {
		t.Fatal(err)
	}
	// What the build before sessions writes when it acquires: holder,
	// epoch and its own expiry, a minute from now by the database clock.
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.db.Exec("UPDATE "+tables.Leases+" SET holder = ?, epoch = 4, expires_at_us = ? WHERE name = ?",
		"old-build", now.Add(time.Minute).UnixMicro(), old).Error; err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, s, "new-build")
	if _, ok, err := acquireOne(ctx, s, sess, "new-build", old); err != nil || ok {
		t.Fatalf("a lease live by its own expiry was taken: ok=%v err=%v", ok, err)
	}
	if r := row(t, b.db, old); !r.Live() || r.Holder != "old-build" {
		t.Fatalf("row of the earlier build reads %+v, want live", r)
	}
	expireNow(t, b.db, old)
	if epoch, ok, err := acquireOne(ctx, s, sess, "new-build", old); err != nil || !ok || epoch != 5 {
		t.Fatalf("acquire after the earlier build's expiry = %d, %v, %v; want epoch 5", epoch, ok, err)
	}

	// The earlier build's rule: live while expires_at_us >= now.
	if _, ok, err := acquireOne(ctx, s, sess, "new-build", current); err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	liveForOldBuild := func(name string) bool {
		var n int64
		if err := b.db.Raw("SELECT COUNT(*) FROM "+tables.Leases+" WHERE name = ? AND holder <> '' AND expires_at_us >= ?",
			name, now.UnixMicro()).Row().Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if !liveForOldBuild(current) {
		t.Fatalf("a lease held by a session looks free to a build before sessions")
	}
	if n, err := s.Release(ctx, sess, []store.Term{{Name: current, Epoch: 1}}); err != nil || n != 1 {
		t.Fatalf("release: %d, %v", n, err)
	}
	if liveForOldBuild(current) {
		t.Fatalf("a released lease still looks held to a build before sessions")
	}
}
