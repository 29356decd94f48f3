package leaseholdtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/leaseholdtest"
	"github.com/leasehold/leasehold/workers"
)

// Every test here runs in a synctest bubble: its waits are on fake time,
// so none of them takes more than milliseconds of wall time.

var cfg = coordination.Config{} // the defaults: TTL 15s

// leader starts a process on d and waits until it leads "ledger".
func leader(t *testing.T, d *leaseholdtest.DB, node string) (*leaseholdtest.Process, *coordination.Lease) {
	t.Helper()
	p := d.Start(d.Identity(node, "eu"), cfg)
	l := campaign(t, p)
	return p, l
}

func election(t *testing.T, p *leaseholdtest.Process) *coordination.Election {
	t.Helper()
	e, err := p.Coordinator().Election(coordination.GlobalScope, "ledger")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func campaign(t *testing.T, p *leaseholdtest.Process) *coordination.Lease {
	t.Helper()
	l, err := election(t, p).Campaign(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// follower starts a process that campaigns for "ledger" in the
// background; its lease arrives on the channel.
func follower(t *testing.T, d *leaseholdtest.DB, node string) (*leaseholdtest.Process, <-chan *coordination.Lease) {
	t.Helper()
	p := d.Start(d.Identity(node, "eu"), cfg)
	e := election(t, p)
	ch := make(chan *coordination.Lease, 1)
	go func() {
		l, err := e.Campaign(t.Context())
		if err == nil {
			ch <- l
		}
	}()
	return p, ch
}

func TestExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		_, a := leader(t, d, "node-a")
		_, next := follower(t, d, "node-b")
		synctest.Wait()
		start := time.Now()
		d.Expire(a.Key())
		if took := time.Since(start); took > defaultTTL+time.Millisecond {
			t.Errorf("Expire took %v of fake time, more than TTL", took)
		}
		select {
		case <-a.Context().Done():
		default:
			t.Fatal("the holder still trusts a lease Expire returned for")
		}
		if a.Valid() || !errors.Is(a.Check(), coordination.ErrLeaseLost) {
			t.Errorf("after Expire: Valid %v, Check %v; want false and ErrLeaseLost", a.Valid(), a.Check())
		}
		b := <-next
		if b.Epoch() <= a.Epoch() {
			t.Errorf("the new holder's epoch %d is not above the old one's %d", b.Epoch(), a.Epoch())
		}
	})
}

func TestPauseBeyondTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		pa, a := leader(t, d, "node-a")
		_, next := follower(t, d, "node-b")
		pa.Pause(2 * defaultTTL)
		b := <-next
		if a.Valid() {
			t.Error("the paused holder still trusts its lease after another took it")
		}
		if b.Epoch() <= a.Epoch() {
			t.Errorf("epochs %d then %d", a.Epoch(), b.Epoch())
		}
	})
}

func TestCutAndRestore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		pa, a := leader(t, d, "node-a")
		d.Cut()
		<-a.Context().Done() // at the trust deadline
		if !errors.Is(context.Cause(a.Context()), coordination.ErrLeaseLost) {
			t.Errorf("cause %v, want ErrLeaseLost", context.Cause(a.Context()))
		}
		_ = a.Release(t.Context()) // a holder through Campaign ends its term itself
		d.Restore()
		if l := campaign(t, pa); l.Epoch() <= a.Epoch() {
			t.Errorf("epochs %d then %d", a.Epoch(), l.Epoch())
		}
	})
}

func TestProcessCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		pa, a := leader(t, d, "node-a")
		_, next := follower(t, d, "node-b")
		pa.Cut()
		<-a.Context().Done()
		<-next // node-b was not cut
		pa.Restore()
		if election(t, pa).IsLeader() {
			t.Error("node-a leads again while node-b holds the lease")
		}
	})
}

func TestCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		pa, a := leader(t, d, "node-a")
		_, next := follower(t, d, "node-b")
		crashed := time.Now()
		pa.Crash()
		b := <-next
		// Nothing was released: node-b waited for the expiry.
		if waited := time.Since(crashed); waited < defaultTTL/2 {
			t.Errorf("node-b took over %v after the crash, before the lease could expire", waited)
		}
		if b.Epoch() <= a.Epoch() {
			t.Errorf("epochs %d then %d", a.Epoch(), b.Epoch())
		}
	})
}

func TestStopReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		pa, a := leader(t, d, "node-a")
		go func() { // the holder's work: it releases the lease once its term ends
			<-a.Context().Done()
			_ = a.Release(context.Background())
		}()
		_, next := follower(t, d, "node-b")
		synctest.Wait()
		stopped := time.Now()
		if err := pa.Stop(); err != nil {
			t.Fatal(err)
		}
		<-next
		if waited := time.Since(stopped); waited > defaultRetryInterval*2 {
			t.Errorf("node-b took over %v after a graceful stop, more than a retry interval", waited)
		}
	})
}

// The TTL and RetryInterval of a zero coordination.Config.
const (
	defaultTTL           = 15 * time.Second
	defaultRetryInterval = 2 * time.Second
)

func TestResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		_, a := leader(t, d, "node-a")
		_, next := follower(t, d, "node-b")
		if _, err := d.Resign(t.Context(), a.Key(), ""); err != nil {
			t.Fatal(err)
		}
		<-a.Context().Done()
		if !errors.Is(context.Cause(a.Context()), coordination.ErrResigned) {
			t.Errorf("cause %v, want ErrResigned", context.Cause(a.Context()))
		}
		_ = a.Release(t.Context())
		<-next
	})
}

// generations records, per member, the generations its function was
// called with.
type generations struct {
	mu  sync.Mutex
	got map[string][]coordination.Assignment
}

func (g *generations) fn(member string) coordination.AssignmentFunc {
	return func(ctx context.Context, a coordination.Assignment) error {
		g.mu.Lock()
		g.got[member] = append(g.got[member], a)
		g.mu.Unlock()
		<-ctx.Done()
		return nil
	}
}

func (g *generations) last(member string) coordination.Assignment {
	g.mu.Lock()
	defer g.mu.Unlock()
	as := g.got[member]
	if len(as) == 0 {
		return coordination.Assignment{}
	}
	return as[len(as)-1]
}

func TestRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		g := &generations{got: map[string][]coordination.Assignment{}}
		var key string
		for _, node := range []string{"node-a", "node-b"} {
			p := d.Start(d.Identity(node, "eu"), cfg)
			pool, err := p.Coordinator().Pool(coordination.GlobalScope, "orders", coordination.PoolConfig{})
			if err != nil {
				t.Fatal(err)
			}
			key = pool.Key()
			go func() { _ = pool.Run(t.Context(), g.fn(node), nil) }()
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		before := g.last("node-a").Generation
		if g.last("node-a").Count != 2 || g.last("node-b").Generation != before {
			t.Fatalf("not settled on two members: %+v, %+v", g.last("node-a"), g.last("node-b"))
		}
		gen := d.Rebalance(key)
		if gen != before+1 {
			t.Errorf("Rebalance published generation %d, want %d", gen, before+1)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, node := range []string{"node-a", "node-b"} {
			if a := g.last(node); a.Generation != gen || a.Count != 2 {
				t.Errorf("%s works on %+v, want generation %d of 2 members", node, a, gen)
			}
		}
	})
}

func TestStartHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		led := make(chan int64, 2)
		w := workers.GlobalSingleton("ledger", func(ctx context.Context, l *coordination.Lease) error {
			led <- l.Epoch()
			<-ctx.Done()
			return nil
		})
		p := d.StartHost(d.Identity("node-a", "eu"), coordination.Config{}, workers.Config{}, w)
		if p.Host() == nil {
			t.Fatal("no host")
		}
		first := <-led
		d.Expire("global/ledger")
		if again := <-led; again <= first {
			t.Errorf("epochs %d then %d", first, again)
		}
	})
}

// TestCutCoversLateProcesses: a process started while the database is cut
// is cut too, Process.Restore does not end a DB.Cut, and DB.Restore does.
func TestCutCoversLateProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := leaseholdtest.New(t)
		d.Cut()
		p, next := follower(t, d, "node-a")
		p.Restore() // does not end the DB's cut
		time.Sleep(defaultTTL)
		synctest.Wait()
		select {
		case <-next:
			t.Fatal("a process started during a cut took a lease")
		default:
		}
		d.Restore()
		<-next
	})
}
