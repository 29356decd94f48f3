package coordination_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// recvInfo waits for the first observed value matching match and fails
// the test when the observer saw the observing process itself as holder.
func recvInfo(t testing.TB, ch <-chan coordination.LeaseInfo, observer string, what string, match func(coordination.LeaseInfo) bool) coordination.LeaseInfo {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case info, ok := <-ch:
			if !ok {
				t.Fatalf("observer channel closed while waiting for %s", what)
			}
			if info.Holder == observer {
				t.Fatalf("the observing process appears as holder: %+v", info)
			}
			if match(info) {
				return info
			}
		case <-deadline:
			t.Fatalf("observer saw no %s within %v", what, wait)
		}
	}
}

// caseObserve: a process that only observes an election sees its leader,
// the release, the next term and its expiry, read by the database clock,
// and gets EventLeaderChanged for it; it never takes the lease, though the
// lease is free for long stretches.
func caseObserve(t *testing.T, b *bundle) {
	a := start(t, b.db, "node-a", b.fastConfig())
	o := start(t, b.db, "node-o", b.fastConfig())
	events := o.Subscribe(t.Context(), 64)
	ea := election(t, a.Coordinator, coordination.GlobalScope, "watched")
	eo := election(t, o.Coordinator, coordination.GlobalScope, "watched")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := eo.Observe(ctx)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	first := recvInfo(t, ch, o.Holder(), "the first value", func(coordination.LeaseInfo) bool { return true })
	if first.Key != "global/watched" || first.Holder != "" || first.Epoch != 0 || first.Live {
		t.Fatalf("first value of a lease never acquired = %+v, want global/watched free at epoch 0", first)
	}

	l := mustCampaign(t, ea)
	info := recvInfo(t, ch, o.Holder(), "the leader", func(i coordination.LeaseInfo) bool { return i.Epoch == l.Epoch() && i.Live })
	if info.Holder != a.Holder() || info.ExpiresAt.Before(info.DatabaseTime) {
		t.Fatalf("observed %+v, want %s live at epoch %d", info, a.Holder(), l.Epoch())
	}
	ev := recvEvent(t, events, kindIs(coordination.EventLeaderChanged, l.Key()))
	for ev.Holder == "" {
		ev = recvEvent(t, events, kindIs(coordination.EventLeaderChanged, l.Key()))
	}
	if ev.Holder != a.Holder() || ev.Epoch != l.Epoch() {
		t.Fatalf("leader-changed = %+v, want holder %s epoch %d", ev, a.Holder(), l.Epoch())
	}

	release(t, l)
	recvInfo(t, ch, o.Holder(), "the release", func(i coordination.LeaseInfo) bool { return i.Holder == "" && i.Epoch == l.Epoch() && !i.Live })
	recvEvent(t, events, func(ev coordination.Event) bool {
		return ev.Kind == coordination.EventLeaderChanged && ev.Key == l.Key() && ev.Holder == ""
	})

	l2, err := tryAcquire(ea)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	recvInfo(t, ch, o.Holder(), "the second term", func(i coordination.LeaseInfo) bool { return i.Holder == a.Holder() && i.Epoch == l2.Epoch() })
	expireNow(t, b.db, l2.Key())
	recvInfo(t, ch, o.Holder(), "the expiry", func(i coordination.LeaseInfo) bool { return i.Holder == "" && i.Epoch == l2.Epoch() && !i.Live })

	// A term after the free stretches gets the next epoch: the observer
	// took none in between.
	select {
	case <-l2.Context().Done():
	case <-time.After(wait):
		t.Fatalf("the expired term was not ended within %v", wait)
	}
	release(t, l2)
	l3 := mustCampaign(t, ea)
	defer release(t, l3)
	if l3.Epoch() != l2.Epoch()+1 {
		t.Fatalf("term after the observer watched the lease free = %s, want epoch %d", l3.Token(), l2.Epoch()+1)
	}
	recvInfo(t, ch, o.Holder(), "the third term", func(i coordination.LeaseInfo) bool { return i.Holder == a.Holder() && i.Epoch == l3.Epoch() })
	if held := o.Renewal().Held; held != 0 || eo.IsLeader() {
		t.Fatalf("the observing process holds %d leases", held)
	}

	cancel()
	deadline := time.After(wait)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatalf("observer channel not closed within %v of its context's end", wait)
		}
	}
}

// caseObserveCostsNoStatementPerName: observed leases join the campaign
// loop's batched read. A process that campaigns for a held lease reads
// once per round; observing 1 or 50 more elections leaves it at one
// statement per round.
func caseObserveCostsNoStatementPerName(t *testing.T, b *bundle) {
	// A trust window no busy machine exhausts: the held lease must stay
	// held, or the campaigning process would acquire it.
	cfg := steady(b.fastConfig())
	a := start(t, b.db, "node-a", cfg)
	held := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "held"))
	defer release(t, held)

	cl := &countingLogger{}
	// Behind a transaction pooler listening fails and is retried, with
	// statements of its own: a program there sets DisableNotifications.
	cfg.DisableNotifications = b.target.Pooled
	o := start(t, b.db.Session(&gorm.Session{Logger: cl}), "node-o", cfg)
	// Listening sends its own statements once, at the start.
	if !cfg.DisableNotifications {
		waitListening(t, o)
	}
	// A round of the campaign loop reads its names in one statement per
	// thousand: each read of lease rows by name that the counting logger
	// sees is a round here, numbered among them, with the logger's count
	// as it returned.
	type round struct{ seq, names, stmts int }
	rounds := make(chan round, 1024)
	var mu sync.Mutex
	seq := 0
	watch := func(st sentStmt) {
		names, ok := campaignRead(st.sql)
		if !ok {
			return
		}
		mu.Lock()
		seq++
		r := round{seq: seq, names: names, stmts: st.n}
		mu.Unlock()
		select {
		case rounds <- r:
		default:
		}
	}
	cl.watch.Store(&watch)
	// perRound returns the statements of a round over n names that
	// directly follows another such round.
	perRound := func(n int) int {
		t.Helper()
		var prev round
		deadline := time.After(wait)
		for {
			var cur round
			select {
			case cur = <-rounds:
			case <-deadline:
				t.Fatalf("no two consecutive rounds over %d names within %v", n, wait)
			}
			if prev.names == n && cur.names == n && cur.seq == prev.seq+1 {
				if d := cur.stmts - prev.stmts; d != 1 {
					_, last := cl.snapshot()
					t.Logf("%d statements in a round over %d names; the last ones:\n%s", d, n, last)
				}
				return cur.stmts - prev.stmts
			}
			prev = cur
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	campaigned := make(chan error, 1)
	go func() {
		_, err := election(t, o.Coordinator, coordination.GlobalScope, "held").Campaign(ctx)
		campaigned <- err
	}()
	campaignOnly := perRound(1)

	observe := func(name string) {
		t.Helper()
		ch, err := election(t, o.Coordinator, coordination.GlobalScope, name).Observe(ctx)
		if err != nil {
			t.Fatalf("Observe(%s): %v", name, err)
		}
		recvInfo(t, ch, o.Holder(), "the first value of "+name, func(coordination.LeaseInfo) bool { return true })
	}
	observe("observed-first")
	one := perRound(2)
	for _, n := range names("observed", 49) {
		observe(n)
	}
	fifty := perRound(51)
	t.Logf("LOUD: %s: statements per campaign round: campaigning for 1 -> %d, and observing 1 -> %d, 50 -> %d",
		b.target.Name, campaignOnly, one, fifty)
	if campaignOnly != 1 || one != 1 || fifty != 1 {
		t.Fatalf("statements per round: campaigning for 1 -> %d, and observing 1 -> %d, 50 -> %d; want 1 each",
			campaignOnly, one, fifty)
	}
	if h := o.Renewal().Held; h != 0 {
		t.Fatalf("the observing process holds %d leases", h)
	}
	cancel()
	<-campaigned
}
