package store_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/internal/wake"
)

// wakeSequence runs, on st, the writes whose wake-ups
// TestWakesOfReleasesAndAcknowledgements checks, in this order: a write
// that does not match its term and so wakes nobody, a release of a member
// row (which st's Options.Quiet names), an acknowledgement that wakes the
// member ackWake, and a release of the lease "global/x". It returns the names the wake-ups
// should carry, in order.
func wakeSequence(t *testing.T, st *store.Store, ackWake string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	member, lease := "pool|global/p|member|a", "global/x"
	if err := st.EnsureRows(ctx, []string{member, lease}); err != nil {
		t.Fatal(err)
	}
	if err := st.Sessions().CreateSession(ctx, "s", "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	terms, err := st.Acquire(ctx, "s", "A", []string{member, lease})
	if err != nil || len(terms) != 2 {
		t.Fatalf("acquire = %v, %v; want two terms", terms, err)
	}
	byName := map[string]store.Term{}
	for _, tm := range terms {
		byName[tm.Name] = tm
	}
	stale := byName[lease]
	stale.Epoch++
	if ok, err := st.SetData(ctx, "s", stale, "1", ackWake); err != nil || ok {
		t.Fatalf("SetData of a term that is not held = %v, %v; want false", ok, err)
	}
	if n, err := st.Release(ctx, "s", []store.Term{byName[member]}); err != nil || n != 1 {
		t.Fatalf("Release of the member row = %d, %v; want 1", n, err)
	}
	if ok, err := st.SetData(ctx, "s", byName[lease], "1", ackWake); err != nil || !ok {
		t.Fatalf("SetData = %v, %v; want true", ok, err)
	}
	rows, err := st.Get(ctx, []string{lease})
	if err != nil || len(rows) != 1 || rows[0].Data != "1" {
		t.Fatalf("after SetData the row is %+v, %v; want data 1", rows, err)
	}
	if n, err := st.Release(ctx, "s", []store.Term{byName[lease]}); err != nil || n != 1 {
		t.Fatalf("Release = %d, %v; want 1", n, err)
	}
	return []string{ackWake, lease}
}

// TestWakesOfReleasesAndAcknowledgements: the release of a lease that
// Options.Quiet names (a pool member's row, whose member announces its
// leaving itself) wakes nobody; an acknowledgement written by SetData with
// a wake-up wakes the name it is given, once it wrote; any other release
// wakes the processes for its leases. Through
// the database on PostgreSQL (NOTIFY, at commit: a listener gets the
// wake-ups in the order of the writes), and through the transport the
// store reports to elsewhere (OnRelease).
func TestWakesOfReleasesAndAcknowledgements(t *testing.T) {
	const ackWake = "pool|global/p|wake|b"
	for _, tg := range testdb.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			db := tg.Open(t)
			st := migratedWith(t, db, store.Options{Quiet: func(name string) bool { return strings.Contains(name, "|member|") }})
			if st.Wakeups().Means() != wake.Through {
				var mu sync.Mutex
				var got []string
				st.Wakeups().OnRelease(func(names []string) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, names...)
				})
				want := wakeSequence(t, st, ackWake)
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(got, want) {
					t.Fatalf("the transport was told of %q, want %q", got, want)
				}
				return
			}
			if tg.Pooled {
				t.Skip("LISTEN does not work behind a transaction pooler")
			}
			got := listenFor(t, db, st, 2, func() []string { return wakeSequence(t, st, ackWake) })
			if want := []string{ackWake, "global/x"}; !slices.Equal(got, want) {
				t.Fatalf("the listener was woken for %q, want %q", got, want)
			}
		})
	}
}

// listenFor listens to the notifications of st's tables on a connection
// of db's own, runs fn, and returns the names of the first n
// notifications, in the order they arrived.
func listenFor(t *testing.T, db *gorm.DB, st *store.Store, n int, fn func() []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := testdb.Conn(ctx, t, db)
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `LISTEN "`+st.Wakeups().Channel()+`"`); err != nil {
		t.Fatal(err)
	}
	fn()
	var got []string
	err := conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		for len(got) < n {
			note, err := pc.WaitForNotification(ctx)
			if err != nil {
				return err
			}
			got = append(got, wake.Names(note.Payload)...)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("wait for %d notifications (got %q): %v", n, got, err)
	}
	return got
}
