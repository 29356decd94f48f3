package broadcast

import "testing"

type ev struct{ v, dropped int }

func TestDropsWhenFullAndCounts(t *testing.T) {
	b := Broadcaster[ev]{Stamp: func(e ev, n int) ev { e.dropped = n; return e }}
	ch, unsub := b.Subscribe(2)
	for i := range 5 {
		b.Send(ev{v: i})
	}
	if d := <-ch; d.v != 0 || d.dropped != 0 {
		t.Fatalf("first = %+v", d)
	}
	if d := <-ch; d.v != 1 {
		t.Fatalf("second = %+v", d)
	}
	b.Send(ev{v: 9})
	if d := <-ch; d.v != 9 || d.dropped != 3 {
		t.Fatalf("after drops = %+v, want 9 with 3 dropped", d)
	}
	unsub()
	unsub()
	if _, ok := <-ch; ok {
		t.Fatalf("open after unsubscribe")
	}
	b.Close()
	ch2, _ := b.Subscribe(1)
	if _, ok := <-ch2; ok {
		t.Fatalf("subscription after Close is open")
	}
}
