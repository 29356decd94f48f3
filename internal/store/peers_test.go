package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/internal/wake"
)

// TestPeerAdverts: a session row created with an advert carries it, and
// Peers reads the rows live or expired less than grace ago, never the
// ones without an advert or expired longer ago.
func TestPeerAdverts(t *testing.T) {
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			st, err := store.New(tg.Open(t), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := st.Schema().Migrate(ctx, 30*time.Second); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			dir, ok := st.Wakeups().(wake.Directory)
			if !ok {
				t.Fatal("the store's side of the wake-ups is no wake.Directory")
			}
			create := func(id string, ttl time.Duration) {
				t.Helper()
				if err := st.Sessions().CreateSession(ctx, id, "holder-"+id, ttl); err != nil {
					t.Fatalf("CreateSession %s: %v", id, err)
				}
			}
			create("plain", time.Hour) // before any advert: none
			next := wake.Advert{}
			dir.OnSession(func() wake.Advert { return next })
			create("unbound", time.Hour) // a transport that could not bind: no key
			next = wake.Advert{Addrs: "h;10.0.0.5:4000", Key: "aa"}
			create("live", time.Hour)
			next = wake.Advert{Addrs: "h;10.0.0.6:4000", Key: "bb"}
			create("expired", time.Millisecond)
			time.Sleep(50 * time.Millisecond) // past its expiry, by far less than an hour

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
