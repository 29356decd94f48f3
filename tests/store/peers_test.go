package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/internal/wake"
)

// TestPeerAdverts: an advertising row carries its advert, and Peers
// reads the rows live or expired less than grace ago, never the sessions
// without an advert, the rows withdrawn or expired longer ago.
func TestPeerAdverts(t *testing.T) {
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			st := migrated(t, tg.Open(t))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir, ok := st.Wakeups().(wake.Directory)
			if !ok {
				t.Fatal("the store's side of the wake-ups is no wake.Directory")
			}
			advertise := func(id string, a wake.Advert, ttl time.Duration) {
				t.Helper()
				if err := dir.Advertise(ctx, id, "holder-"+id, a, ttl); err != nil {
					t.Fatalf("Advertise %s: %v", id, err)
				}
			}
			if err := st.Sessions().CreateSession(ctx, "plain", "holder", time.Hour); err != nil {
				t.Fatal(err) // a session of leases: no advert
			}
			advertise("live", wake.Advert{Addrs: "h;10.0.0.5:4000", Key: "aa"}, time.Hour)
			advertise("expired", wake.Advert{Addrs: "h;10.0.0.6:4000", Key: "bb"}, time.Millisecond)
			advertise("withdrawn", wake.Advert{Addrs: "h;10.0.0.7:4000", Key: "cc"}, time.Hour)
			if err := dir.Withdraw(ctx, "withdrawn"); err != nil {
				t.Fatalf("Withdraw: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // past its expiry, by far less than an hour
			if ok, err := dir.Readvertise(ctx, "expired", time.Hour); ok || err != nil {
				t.Fatalf("Readvertise of an expired row = %v, %v; want false", ok, err)
			}
			if ok, err := dir.Readvertise(ctx, "live", time.Hour); !ok || err != nil {
				t.Fatalf("Readvertise of a live row = %v, %v; want true", ok, err)
			}

			got, err := dir.Peers(ctx, time.Hour)
			if err != nil {
				t.Fatalf("Peers: %v", err)
			}
			slices.SortFunc(got, func(a, b wake.Advert) int { return strings.Compare(a.Key, b.Key) })
			want := []wake.Advert{{Addrs: "h;10.0.0.5:4000", Key: "aa"}, {Addrs: "h;10.0.0.6:4000", Key: "bb"}}
			if !slices.Equal(got, want) {
				t.Fatalf("Peers(grace 1h) = %+v, want %+v", got, want)
			}
			got, err = dir.Peers(ctx, 0)
			if err != nil {
				t.Fatalf("Peers: %v", err)
			}
			if want := want[:1]; !slices.Equal(got, want) {
				t.Fatalf("Peers(grace 0) = %+v, want %+v", got, want)
			}
		})
	}
}

// TestListSessions: ListSessions reads every session row, live or
// expired, by holder, with its times by the database clock and the
// addresses of an advertising row, never its key.
func TestListSessions(t *testing.T) {
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			st := migrated(t, tg.Open(t))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir := st.Wakeups().(wake.Directory)
			if err := st.Sessions().CreateSession(ctx, "s-b", "holder-b", time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := st.Sessions().CreateSession(ctx, "s-a", "holder-a", time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := dir.Advertise(ctx, "w-b", "holder-b", wake.Advert{Addrs: "h;10.0.0.5:4000", Key: "secret-key"}, time.Hour); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // past s-a's expiry, by far less than an hour

			got, err := st.Sessions().ListSessions(ctx)
			if err != nil {
				t.Fatalf("ListSessions: %v", err)
			}
			ids := make([]string, len(got))
			for i, r := range got {
				ids[i] = r.ID
				if r.Now.IsZero() || r.RenewedAt.IsZero() || r.RenewedAt.After(r.Now) || strings.Contains(r.WakeAddrs, "secret") {
					t.Errorf("row %+v: want renewed before the database clock, no key", r)
				}
			}
			if want := []string{"s-a", "s-b", "w-b"}; !slices.Equal(ids, want) {
				t.Fatalf("ListSessions ids = %v, want %v: %+v", ids, want, got)
			}
			if a, b, w := got[0], got[1], got[2]; a.Holder != "holder-a" || a.Live() || a.WakeAddrs != "" ||
				b.Holder != "holder-b" || !b.Live() || b.ExpiresAt.Sub(b.Now) < 59*time.Minute || b.WakeAddrs != "" ||
				w.Holder != "holder-b" || !w.Live() || w.WakeAddrs != "h;10.0.0.5:4000" {
				t.Errorf("ListSessions = %+v; want holder-a expired, holder-b live with an hour left, its advert with its address", got)
			}
		})
	}
}
