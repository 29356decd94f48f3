package membership

import (
	"testing"
	"time"
)

// TestPoolReadSchedule checks the read schedule the rebalance bounds rest
// on: reads never come later than the poll (a quarter of it while
// unsettled), and come at another member's expiry when that is sooner.
func TestPoolReadSchedule(t *testing.T) {
	poll := time.Second
	began := time.Now()
	for range 1000 {
		for _, tc := range []struct {
			settled bool
			wait    time.Duration
		}{{true, time.Second}, {false, time.Second / 4}} {
			got := nextRead(poll, began, tc.settled, time.Time{}).Sub(began)
			if got > tc.wait || got < tc.wait*9/10 {
				t.Fatalf("settled=%v: next read after %v, want within [%v, %v]", tc.settled, got, tc.wait*9/10, tc.wait)
			}
		}
		if d := jitterBelow(10 * time.Millisecond); d > 10*time.Millisecond || d < 9*time.Millisecond {
			t.Fatalf("jitterBelow(10ms) = %v", d)
		}
	}
	expiry := began.Add(300 * time.Millisecond)
	if got := nextRead(poll, began, true, expiry); !got.Equal(expiry) {
		t.Errorf("next read with a member expiring in 300ms comes at %v, want at the expiry", got.Sub(began))
	}
	if got := nextRead(poll, began, false, began.Add(time.Hour)); got.Sub(began) > time.Second/4 {
		t.Errorf("a far expiry delayed the next read to %v", got.Sub(began))
	}
	m := New(Config{Poll: poll})
	m.expiry = expiry
	if got := m.NextRead(began, true); !got.Equal(expiry) {
		t.Errorf("Member.NextRead with a member expiring in 300ms comes at %v, want at the expiry", got.Sub(began))
	}
}

// TestPoolExpiryConversion checks that a member row's expiry, converted
// from the database clock, is never before the moment the row expires.
func TestPoolExpiryConversion(t *testing.T) {
	m := &Member{cfg: Config{Poll: time.Second}, me: "me"}
	db := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	readEnd := time.Now()
	st := State{DBNow: db, Members: []Row{
		{ID: "me", Live: true, ExpiresAt: db.Add(time.Millisecond)},      // own row: ignored
		{ID: "dead", Live: false, ExpiresAt: db.Add(-time.Second)},       // expired: ignored
		{ID: "b", Live: true, ExpiresAt: db.Add(700 * time.Millisecond)}, // the first to expire
		{ID: "c", Live: true, ExpiresAt: db.Add(900 * time.Millisecond)},
	}}
	m.noteExpiry(st, readEnd)
	if want := readEnd.Add(700*time.Millisecond + ExpiryMargin); !m.expiry.Equal(want) {
		t.Errorf("expiry = readEnd + %v, want readEnd + %v", m.expiry.Sub(readEnd), want.Sub(readEnd))
	}
}
