package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// The holders of the cases' sessions, in the form coordinators write
// ("node/cluster/instance"), so that preferences may name any part.
const (
	holderA = "node-a/test/inst-a"
	holderB = "node-b/test/inst-b"
	holderC = "node-c/test/inst-c"
)

var bg = context.Background()

func check(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// open starts session id of holder, live for ttl.
func open(t *testing.T, s Store, id, holder string, ttl time.Duration) {
	t.Helper()
	check(t, "CreateSession "+id, s.CreateSession(bg, id, holder, ttl))
}

// ensure creates the rows of names.
func ensure(t *testing.T, s Store, names ...string) {
	t.Helper()
	check(t, "EnsureRows", s.EnsureRows(bg, names))
}

// acquire runs Acquire and returns the terms it started, by name.
func acquire(t *testing.T, s Store, session, holder string, names ...string) []store.Term {
	t.Helper()
	terms, err := s.Acquire(bg, session, holder, names)
	check(t, "Acquire", err)
	slices.SortFunc(terms, func(a, b store.Term) int { return strings.Compare(a.Name, b.Name) })
	return terms
}

// acquireOne acquires name for session and fails the test unless it starts
// a term with epoch want.
func acquireOne(t *testing.T, s Store, session, holder, name string, want int64) store.Term {
	t.Helper()
	got := acquire(t, s, session, holder, name)
	if len(got) != 1 || got[0] != (store.Term{Name: name, Epoch: want}) {
		t.Fatalf("Acquire(%s, %s) by %s = %v, want the term at epoch %d", name, session, holder, got, want)
	}
	return got[0]
}

// acquireNone fails the test unless acquiring names for session takes
// nothing.
func acquireNone(t *testing.T, s Store, session, holder string, names ...string) {
	t.Helper()
	if got := acquire(t, s, session, holder, names...); len(got) != 0 {
		t.Fatalf("Acquire(%v) by session %s (%s) = %v, want nothing", names, session, holder, got)
	}
}

// row reads name, which must have a row.
func row(t *testing.T, s Store, name string) store.Row {
	t.Helper()
	rows, err := s.Get(bg, []string{name})
	check(t, "Get "+name, err)
	if len(rows) != 1 || rows[0].Name != name {
		t.Fatalf("Get(%s) = %+v, want its row", name, rows)
	}
	return rows[0]
}

// release gives up term of session and returns how many were held.
func release(t *testing.T, s Store, session string, terms ...store.Term) int64 {
	t.Helper()
	n, err := s.Release(bg, session, terms)
	check(t, "Release", err)
	return n
}

// names returns the names of rows, in their order.
func names(rows []store.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Name
	}
	return out
}

// waitFor polls cond, which reads the store, until it holds; it fails the
// test after waitBound. The sleeps are on the bubble's fake time for the
// in-process store.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", waitBound, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExpired waits until session id has expired by the store's clock.
func waitExpired(t *testing.T, s Store, id string) {
	t.Helper()
	waitFor(t, "session "+id+" to expire", func() bool {
		sess, ok, err := s.ReadSession(bg, id)
		check(t, "ReadSession", err)
		return !ok || !sess.Live()
	})
}

// errRefused is what the cases' resign checks refuse with.
var errRefused = errors.New("refused")

// noWindow is a resign check that accepts, with no preference window.
func noWindow(store.Row) (time.Duration, error) { return 0, nil }

// window returns a resign check that accepts with window d.
func window(d time.Duration) func(store.Row) (time.Duration, error) {
	return func(store.Row) (time.Duration, error) { return d, nil }
}
