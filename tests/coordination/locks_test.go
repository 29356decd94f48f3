package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestLocksConformance runs the keyed lock cases on every database
// target, the Galera cluster included. Subtest names are <target>/<Case>.
func TestLocksConformance(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCasesOn(t, append(testdb.Targets(), testdb.GaleraTarget), lockCases)
}

var lockCases = []conformanceCase{
	{"LocksMutualExclusion", caseLocksMutualExclusion},
	{"LocksTryLock", caseLocksTryLock},
	{"LocksFreeKeyTakenByTheCaller", caseLocksFreeKeyTakenByTheCaller},
	{"LocksReleaseDeletesRow", caseLocksReleaseDeletesRow},
	{"LocksEpochRisesAcrossDeleteAndPrune", caseLocksEpochRisesAcrossDelete},
	{"LocksDoCancelledAtTrustDeadline", caseLocksDoCancelledAtTrustDeadline},
	{"LocksReleaseWakesWaiter", caseLocksReleaseWakesWaiter},
	{"LocksOneRenewalStatementPerTick", caseLocksOneRenewalPerTick},
	{"LocksRowsBounded", caseLocksRowsBounded},
}

func locks(t testing.TB, c *coordination.Coordinator, scope coordination.Scope, name string) *coordination.Locks {
	t.Helper()
	l, err := c.Locks(scope, name)
	if err != nil {
		t.Fatalf("Locks(%v, %q): %v", scope, name, err)
	}
	return l
}

func mustLock(t testing.TB, l *coordination.Locks, key string) *coordination.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	lease, err := l.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock(%q): %v", key, err)
	}
	return lease
}

// lockRows lists the rows of a namespace's lock keys, without the floor
// rows.
func lockRows(t testing.TB, db *gorm.DB, l *coordination.Locks) []string {
	t.Helper()
	rows, err := rawStore(t, db).List(context.Background(), lockRowsPrefix(l.Key()))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

// Three processes with four goroutines each contend for one key: never
// two holders at once, and each grant's epoch is above the one before.
// Grants pass by release, so the trust window is steady's: a grant lost
// to a slow renewal on a busy machine is not what this case is about.
func caseLocksMutualExclusion(t *testing.T, b *bundle) {
	cfg := steady(b.fastConfig())
	var nss []*coordination.Locks
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		nss = append(nss, locks(t, start(t, b.db, node, cfg).Coordinator, coordination.GlobalScope, "accounts"))
	}
	const grants = 36
	var inside atomic.Int32
	var mu sync.Mutex
	var epochs []int64
	var wg sync.WaitGroup
	errs := make(chan error, grants)
	for i := range 12 {
		ns := nss[i%3]
		wg.Go(func() {
			for range grants / 12 {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				err := ns.Do(ctx, "acct-42", func(ctx context.Context, lease *coordination.Lease) error {
					if n := inside.Add(1); n != 1 {
						return fmt.Errorf("%d holders at once", n)
					}
					defer inside.Add(-1)
					mu.Lock()
					epochs = append(epochs, lease.Epoch())
					mu.Unlock()
					time.Sleep(time.Millisecond)
					return lease.Check()
				})
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(epochs) != grants {
		t.Fatalf("%d grants, want %d", len(epochs), grants)
	}
	for i := 1; i < len(epochs); i++ {
		if epochs[i] <= epochs[i-1] {
			t.Fatalf("grant %d has epoch %d, not above the one before (%d): %v", i, epochs[i], epochs[i-1], epochs)
		}
	}
	if rows := lockRows(t, b.db, nss[0]); len(rows) != 0 {
		t.Fatalf("lock rows after every release: %v; want none", rows)
	}
}

// TryLock takes a free key, and refuses one another process or another
// goroutine of this process holds, naming why; bad keys are refused with
// the key named.
func caseLocksTryLock(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	a := locks(t, start(t, b.db, "node-a", cfg).Coordinator, coordination.ClusterScope, "files")
	c := locks(t, start(t, b.db, "node-c", cfg).Coordinator, coordination.ClusterScope, "files")
	ctx := context.Background()
	l, err := a.TryLock(ctx, "report.csv")
	if err != nil {
		t.Fatalf("TryLock of a free key: %v", err)
	}
	if _, err := a.TryLock(ctx, "report.csv"); !errors.Is(err, coordination.ErrNotAcquired) || !strings.Contains(err.Error(), "this process") {
		t.Fatalf("TryLock of a key this process holds = %v; want ErrNotAcquired naming this process", err)
	}
	settle(t, b.db) // C's read on its node sees A's key
	if _, err := c.TryLock(ctx, "report.csv"); !errors.Is(err, coordination.ErrNotAcquired) || !strings.Contains(err.Error(), "node-a") {
		t.Fatalf("TryLock of a key another process holds = %v; want ErrNotAcquired naming node-a", err)
	}
	release(t, l)
	settle(t, b.db) // C's read on its node sees the release
	l2, err := c.TryLock(ctx, "report.csv")
	if err != nil || l2.Epoch() <= l.Epoch() {
		t.Fatalf("TryLock after the release = %v; want the key at an epoch above %d", err, l.Epoch())
	}
	release(t, l2)
	for _, key := range []string{"", strings.Repeat("k", maxKeyLen+1), "tab\there", "caf\xc3\xa9"} {
		if _, err := a.TryLock(ctx, key); !isInvalidName(err) || !strings.Contains(err.Error(), "lock key") {
			t.Fatalf("TryLock(%q) = %v; want ErrInvalidConfig naming the lock key", key, err)
		}
	}
	if _, err := a.Lock(ctx, ""); !isInvalidName(err) {
		t.Fatalf("Lock(\"\") = %v; want ErrInvalidConfig", err)
	}
}

// Lock of a free key is one attempt by the caller: one acquire
// statement, no read of the key's row and no campaign round. The loop's
// poll is a minute apart here, and rounds that read nothing are not
// counted.
func caseLocksFreeKeyTakenByTheCaller(t *testing.T, b *bundle) {
	cl := &countingLogger{}
	cfg := b.fastConfig()
	cfg.TTL, cfg.Margin, cfg.RenewInterval, cfg.RetryInterval = time.Minute, 10*time.Second, 20*time.Second, time.Minute
	r := start(t, b.db.Session(&gorm.Session{Logger: cl}), "node-a", cfg)
	ns := locks(t, r.Coordinator, coordination.GlobalScope, "accounts")
	release(t, mustLock(t, ns, "warm-up")) // starts the session
	// A campaign round that reads names sends a read of lease rows by
	// name (rounds that read nothing send nothing): count them from here.
	var rounds atomic.Int32
	watch := func(st sentStmt) {
		if strings.HasPrefix(st.sql, "SELECT l.name, l.holder") && strings.Contains(st.sql, " WHERE ") {
			rounds.Add(1)
		}
	}
	cl.watch.Store(&watch)
	before, _ := cl.snapshot()
	l := mustLock(t, ns, "acct-7")
	after, last := cl.snapshot()
	if n := after - before; n > 50 {
		t.Fatalf("%d statements for one Lock of a free key", n)
	}
	lines := strings.Split(last, "\n")
	var acquires, reads int
	for _, q := range lines[len(lines)-(after-before):] {
		switch {
		case strings.Contains(q, "SET holder = ") && strings.Contains(q, "acquired_at_us = "):
			acquires++
		case strings.HasPrefix(q, "SELECT l.name, l.holder"):
			reads++
		}
	}
	if acquires != 1 || reads != 0 || rounds.Load() != 0 {
		t.Fatalf("Lock of a free key: %d acquire statements, %d reads of lease rows, %d campaign rounds; want 1, 0, 0. Statements:\n%s",
			acquires, reads, rounds.Load(), strings.Join(lines[len(lines)-(after-before):], "\n"))
	}
	if got := row(t, b.db, l.Key()); got.Holder != r.Holder() || got.Epoch != l.Epoch() || !got.Live() {
		t.Fatalf("row of the key taken: %+v; want it live, held by %s at epoch %d", got, r.Holder(), l.Epoch())
	}
	release(t, l)
}

// A release deletes the key's row; the key's lease, held, has the row
// and the process's session.
func caseLocksReleaseDeletesRow(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", b.fastConfig())
	ns := locks(t, r.Coordinator, coordination.GlobalScope, "jobs")
	l := mustLock(t, ns, "a|b c") // '|' and spaces are allowed in keys
	if got := row(t, b.db, l.Key()); got.Holder != r.Holder() || got.Epoch != l.Epoch() || !got.Live() {
		t.Fatalf("row of the held key: %+v", got)
	}
	if l.Key() != "lock|global/jobs|a|b c" {
		t.Fatalf("Key = %q", l.Key())
	}
	release(t, l)
	if rows := lockRows(t, b.db, ns); len(rows) != 0 {
		t.Fatalf("lock rows after the release: %v; want none", rows)
	}
}

// The epochs of a key never go back, although its row is deleted and
// created again: by a release, and by the prune of a dead holder's row.
func caseLocksEpochRisesAcrossDelete(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	a, fa := startFaulty(t, b.db, "node-a", cfg)
	c := start(t, b.db, "node-c", cfg)
	na, nc := locks(t, a.Coordinator, coordination.GlobalScope, "acct"), locks(t, c.Coordinator, coordination.GlobalScope, "acct")
	var last int64
	for i := range 3 {
		l := mustLock(t, nc, "k")
		if l.Epoch() <= last {
			t.Fatalf("round %d: epoch %d, not above %d", i, l.Epoch(), last)
		}
		last = l.Epoch()
		release(t, l)
	}
	// node-a takes the key and dies without releasing it: the row stays,
	// held by a dead session, until node-c's prune removes it.
	dead := mustLock(t, na, "k")
	if dead.Epoch() <= last {
		t.Fatalf("epoch %d of node-a, not above %d", dead.Epoch(), last)
	}
	last = dead.Epoch()
	fa.failAll.Store(true)
	<-dead.Context().Done()
	deadline := time.Now().Add(wait)
	for {
		// Each release of another key prunes when a TTL has passed.
		other := mustLock(t, nc, fmt.Sprintf("other-%d", time.Now().UnixNano()))
		release(t, other)
		if rows := lockRows(t, b.db, nc); len(rows) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead holder's row was never pruned: %v", lockRows(t, b.db, nc))
		}
		time.Sleep(cfg.TTL / 4)
	}
	l := mustLock(t, nc, "k")
	if l.Epoch() <= last {
		t.Fatalf("epoch after the prune %d, not above the dead holder's %d", l.Epoch(), last)
	}
	release(t, l)
	fa.failAll.Store(false)
	_ = dead.Release(context.Background())
}

// Do's context is cancelled at the trust deadline once renewals stop,
// before another process takes the key.
func caseLocksDoCancelledAtTrustDeadline(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	a, fa := startFaulty(t, b.db, "node-a", cfg)
	c := start(t, b.db, "node-c", cfg)
	na, nc := locks(t, a.Coordinator, coordination.GlobalScope, "acct"), locks(t, c.Coordinator, coordination.GlobalScope, "acct")
	holding := make(chan *coordination.Lease, 1)
	stopped := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		done <- na.Do(context.Background(), "k", func(ctx context.Context, lease *coordination.Lease) error {
			holding <- lease
			<-ctx.Done()
			stopped <- time.Now()
			return context.Cause(ctx)
		})
	}()
	var held *coordination.Lease
	select {
	case held = <-holding:
	case <-time.After(wait):
		t.Fatal("Do never ran its function")
	}
	deadline := held.TrustDeadline()
	fa.failAll.Store(true) // node-a can no longer renew
	l2 := mustLock(t, nc, "k")
	takenAt := time.Now()
	var stoppedAt time.Time
	select {
	case stoppedAt = <-stopped:
	case <-time.After(wait):
		t.Fatal("Do's context was never cancelled")
	}
	if !stoppedAt.Before(takenAt) {
		t.Fatalf("Do's work stopped at %v, after node-c took the key at %v", stoppedAt, takenAt)
	}
	if stoppedAt.Before(deadline.Add(-cfg.RenewInterval)) {
		t.Logf("work stopped %v before the trust deadline read at the start", deadline.Sub(stoppedAt))
	}
	if l2.Epoch() <= held.Epoch() {
		t.Fatalf("successor epoch %d, not above %d", l2.Epoch(), held.Epoch())
	}
	release(t, l2)
	fa.failAll.Store(false)
	select {
	case err := <-done:
		if !errors.Is(err, coordination.ErrLeaseLost) {
			t.Fatalf("Do = %v; want ErrLeaseLost", err)
		}
	case <-time.After(wait):
		t.Fatal("Do did not return")
	}
}

// Where wake-ups exist, a release hands the key to a waiting process at
// once, long before its next poll (RetryInterval is a minute here).
func caseLocksReleaseWakesWaiter(t *testing.T, b *bundle) {
	cfg := b.fastConfig()
	cfg.TTL, cfg.Margin, cfg.RetryInterval = time.Minute, 10*time.Second, time.Minute
	a, c := start(t, b.db, "node-a", cfg), start(t, b.db, "node-c", cfg)
	waitListening(t, a, c)
	na, nc := locks(t, a.Coordinator, coordination.GlobalScope, "acct"), locks(t, c.Coordinator, coordination.GlobalScope, "acct")
	l := mustLock(t, na, "k")
	got := make(chan *coordination.Lease, 1)
	// node-c's campaign round that reads the key held says so with an
	// EventLeaderChanged naming a's holder.
	events := c.Subscribe(t.Context(), 64)
	rounds := make(chan int, 16)
	go func() {
		for ev := range events {
			if ev.Kind == coordination.EventLeaderChanged && ev.Key == l.Key() && ev.Holder == a.Holder() {
				select {
				case rounds <- 1:
				default:
				}
			}
		}
	}()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		l2, err := nc.Lock(ctx, "k")
		if err != nil {
			t.Error(err)
		}
		got <- l2
	}()
	recvInt(t, rounds) // node-c read the key held
	release(t, l)
	select {
	case l2 := <-got:
		if l2 == nil {
			return
		}
		if l2.Epoch() <= l.Epoch() {
			t.Fatalf("waiter's epoch %d, not above %d", l2.Epoch(), l.Epoch())
		}
		release(t, l2)
	case <-time.After(wait):
		t.Fatalf("the waiter did not get the key within %v of its release (RetryInterval %v)", wait, cfg.RetryInterval)
	}
}

// Hundreds of held keys ride the session: one renewal statement per tick.
func caseLocksOneRenewalPerTick(t *testing.T, b *bundle) {
	cl := &countingLogger{}
	db := b.db.Session(&gorm.Session{Logger: cl})
	cfg := steady(b.fastConfig())
	r := start(t, db, "node-a", cfg)
	ticks := tickSignal(cl)
	ns := locks(t, r.Coordinator, coordination.GlobalScope, "many")
	const held = 300
	// The waits join the campaign loop's rounds, which take the keys in
	// batches.
	leases := make([]*coordination.Lease, held)
	var wg sync.WaitGroup
	for i := range held {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			l, err := ns.Lock(ctx, fmt.Sprintf("key-%d", i))
			if err != nil {
				t.Error(err)
				return
			}
			leases[i] = l
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	first, second := twoTicks(t, r, cl, ticks, held)
	if got := second.renewal - first.renewal; got != 1 {
		t.Fatalf("renewal statements per tick with %d held keys = %d, want 1", held, got)
	}
	t.Logf("LOUD: %s: renew statements per tick: %d held keys -> 1", b.target.Name, held)
	for _, l := range leases {
		release(t, l)
	}
}

// Many distinct keys used one after another leave no rows behind but the
// namespace's floor rows.
func caseLocksRowsBounded(t *testing.T, b *bundle) {
	r := start(t, b.db, "node-a", b.fastConfig())
	ns := locks(t, r.Coordinator, coordination.GlobalScope, "files")
	const keys = 300
	for i := range keys {
		key := fmt.Sprintf("file-%d", i)
		deadline := time.Now().Add(wait)
		l, err := ns.TryLock(context.Background(), key)
		// One attempt is bounded by a campaign round's timeout (600ms
		// here), which a busy machine can exceed: that is an error of the
		// attempt, not a refusal, and the key is tried again.
		for err != nil && !errors.Is(err, coordination.ErrNotAcquired) && time.Now().Before(deadline) {
			t.Logf("TryLock(%s): %v; trying again", key, err)
			l, err = ns.TryLock(context.Background(), key)
		}
		if err != nil {
			t.Fatal(err)
		}
		release(t, l)
	}
	all, err := rawStore(t, b.db).List(context.Background(), "")
	check(t, err)
	if len(all) > lockFloors {
		t.Fatalf("%d rows after %d distinct keys were used and released; want at most the %d floor rows", len(all), keys, lockFloors)
	}
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
