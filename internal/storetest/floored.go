package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// floorOf is the floor row of the cases' floored rows: two floors, so
// that rows share them and some do not.
func floorOf(name string) string {
	if strings.HasSuffix(name, "odd") {
		return "floor|b"
	}
	return "floor|a"
}

func floored(names ...string) []store.Floored {
	out := make([]store.Floored, len(names))
	for i, n := range names {
		out[i] = store.Floored{Name: n, Floor: floorOf(n)}
	}
	return out
}

func flooredTerms(terms ...store.Term) []store.FlooredTerm {
	out := make([]store.FlooredTerm, len(terms))
	for i, t := range terms {
		out[i] = store.FlooredTerm{Term: t, Floor: floorOf(t.Name)}
	}
	return out
}

func ensureFloored(t *testing.T, s Store, names ...string) {
	t.Helper()
	check(t, "EnsureFloored", s.EnsureFloored(bg, floored(names...)))
}

func releaseFloored(t *testing.T, s Store, session string, terms ...store.Term) int64 {
	t.Helper()
	n, err := s.ReleaseFloored(bg, session, flooredTerms(terms...))
	check(t, "ReleaseFloored", err)
	return n
}

// A floored row is created unheld, taken like any lease, and deleted by
// its release; its floor row stays.
func caseFlooredReleaseDeletes(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	ensureFloored(t, s, "k/1", "k/1odd")
	ensureFloored(t, s, "k/1") // exists: nothing changes
	a := acquireOne(t, s, "s1", holderA, "k/1", 1)
	b := acquireOne(t, s, "s1", holderA, "k/1odd", 1)
	if n := releaseFloored(t, s, "s1", a, b); n != 2 {
		t.Fatalf("ReleaseFloored = %d, want 2", n)
	}
	got, err := s.List(bg, "")
	check(t, "List", err)
	if !slices.Equal(names(got), []string{"floor|a", "floor|b"}) {
		t.Fatalf("rows after the release = %v; want only the floor rows", names(got))
	}
}

// Epochs of a floored row never repeat and never go back, across any
// number of deletes and re-creates, whether the delete was a release or
// a prune of a dead holder's row, and whatever other rows share its floor.
func caseFlooredEpochsNeverGoBack(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	last := make(map[string]int64)
	next := func(name string) store.Term {
		t.Helper()
		ensureFloored(t, s, name)
		got := acquire(t, s, "s1", holderA, name)
		if len(got) != 1 || got[0].Epoch <= last[name] {
			t.Fatalf("acquire of %s after a re-create = %v; want one term above epoch %d", name, got, last[name])
		}
		last[name] = got[0].Epoch
		return got[0]
	}
	for i := range 5 {
		x := next("k/x")
		// Another row on the same floor climbs higher meanwhile.
		y := next("k/y")
		acquire(t, s, "s1", holderA, "k/y")
		if i%2 == 0 {
			releaseFloored(t, s, "s1", x)
		} else {
			release(t, s, "s1", x) // the row stays, unheld: a prune deletes it
			waitFor(t, "the released row to be unheld for a moment", func() bool {
				r := row(t, s, "k/x")
				return r.Now.Sub(r.ExpiresAt) > 10*time.Millisecond
			})
			if n, err := s.PruneFloored(bg, "k/x", floorOf, 5*time.Millisecond, 10); err != nil || n != 1 {
				t.Fatalf("PruneFloored = %d, %v; want 1", n, err)
			}
		}
		releaseFloored(t, s, "s1", store.Term{Name: y.Name, Epoch: y.Epoch + 1})
		if rows, err := s.Get(bg, []string{"k/x", "k/y"}); err != nil || len(rows) != 0 {
			t.Fatalf("rows after the deletes = %v, %v; want none", names(rows), err)
		}
	}
}

// A floored release deletes only the session's own term at its epoch.
func caseFlooredReleaseOwnTermOnly(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	open(t, s, "s2", holderB, LongTTL)
	ensureFloored(t, s, "k")
	old := acquireOne(t, s, "s1", holderA, "k", 1)
	cur := acquireOne(t, s, "s1", holderA, "k", 2)
	if n := releaseFloored(t, s, "s2", cur); n != 0 {
		t.Fatalf("ReleaseFloored by another session = %d, want 0", n)
	}
	if n := releaseFloored(t, s, "s1", old); n != 0 {
		t.Fatalf("ReleaseFloored of a stale term = %d, want 0", n)
	}
	if r := row(t, s, "k"); r.Session != "s1" || r.Epoch != 2 {
		t.Fatalf("row after the stale releases = %+v; want held by s1 at epoch 2", r)
	}
}

// A prune deletes at most its limit of dead floored rows per call, never
// a live one, and never a row outside its prefix.
func caseFlooredPruneBounded(t *testing.T, s Store) {
	open(t, s, "live", holderA, LongTTL)
	open(t, s, "short", holderB, ShortTTL)
	var dead []string
	for i := range 7 {
		dead = append(dead, fmt.Sprintf("k/d%d", i))
	}
	ensureFloored(t, s, append(dead, "k/live", "j/other")...)
	acquire(t, s, "short", holderB, dead...)
	acquireOne(t, s, "live", holderA, "k/live", 1)
	waitExpired(t, s, "short")
	waitFor(t, "the expired session to be dead for a moment", func() bool {
		r := row(t, s, "k/d0")
		return r.Now.Sub(r.ExpiresAt) > 10*time.Millisecond
	})
	var total int64
	for _, want := range []int64{3, 3, 1, 0} {
		n, err := s.PruneFloored(bg, "k/", floorOf, 5*time.Millisecond, 3)
		check(t, "PruneFloored", err)
		if n != want {
			t.Fatalf("PruneFloored(limit 3) = %d after %d; want %d", n, total, want)
		}
		total += n
	}
	got, err := s.List(bg, "")
	check(t, "List", err)
	if !slices.Equal(names(got), []string{"floor|a", "j/other", "k/live"}) {
		t.Fatalf("rows after the prunes = %v; want floor|a, j/other, k/live", names(got))
	}
	// The rows come back above every epoch they had.
	ensureFloored(t, s, "k/d0")
	acquireOne(t, s, "live", holderA, "k/d0", 2)
}
