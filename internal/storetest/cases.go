package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

var cases = []Case{
	// Sessions.
	{"SessionCreateRenewRead", caseSessionCreateRenewRead},
	{"SessionExpiresByClock", caseSessionExpiresByClock},
	{"SessionEnd", caseSessionEnd},
	{"SessionNotice", caseSessionNotice},
	{"SessionEndPrunesExpired", caseSessionEndPrunesExpired},
	// Acquires.
	{"AcquireFree", caseAcquireFree},
	{"AcquireHeldByLiveOther", caseAcquireHeldByLiveOther},
	{"AcquireOwnAgain", caseAcquireOwnAgain},
	{"AcquireHeldByDeadSession", caseAcquireHeldByDeadSession},
	{"AcquireByDeadSession", caseAcquireByDeadSession},
	{"EpochsNeverRepeat", caseEpochsNeverRepeat},
	// Renewals and releases touch their own term only.
	{"ReleaseOwnTermOnly", caseReleaseOwnTermOnly},
	{"SetDataOwnTermOnly", caseSetDataOwnTermOnly},
	// Resign requests and preferred holders.
	{"ResignRequest", caseResignRequest},
	{"PreferredHolderOnly", casePreferredHolderOnly},
	{"PreferenceWindowEnds", casePreferenceWindowEnds},
	// Pool rows.
	{"EnsureRowsKeepsRows", caseEnsureRowsKeepsRows},
	{"Publish", casePublish},
	{"PruneDead", casePruneDead},
	// Reads.
	{"GetAndList", caseGetAndList},
	// Floored rows (keyed locks).
	{"FlooredReleaseDeletes", caseFlooredReleaseDeletes},
	{"FlooredEpochsNeverGoBack", caseFlooredEpochsNeverGoBack},
	{"FlooredReleaseOwnTermOnly", caseFlooredReleaseOwnTermOnly},
	{"FlooredPruneBounded", caseFlooredPruneBounded},
}

// A session reads back live for its TTL from its renewal, and a renewal
// restarts the TTL; unknown sessions are neither read nor renewed.
func caseSessionCreateRenewRead(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	sess, ok, err := s.ReadSession(bg, "s1")
	check(t, "ReadSession", err)
	if !ok || !sess.Live() || sess.ExpiresAt.Sub(sess.RenewedAt) != LongTTL || sess.Now.Before(sess.RenewedAt) {
		t.Fatalf("ReadSession after create = %+v, %v; want live, expiring TTL %v after its renewal", sess, ok, LongTTL)
	}
	ok, notice, err := s.RenewSession(bg, "s1", 2*LongTTL)
	check(t, "RenewSession", err)
	if !ok || notice != 0 {
		t.Fatalf("RenewSession = %v, %d; want true, 0", ok, notice)
	}
	again, ok, err := s.ReadSession(bg, "s1")
	check(t, "ReadSession", err)
	if !ok || !again.Live() || again.ExpiresAt.Sub(again.RenewedAt) != 2*LongTTL || again.RenewedAt.Before(sess.RenewedAt) {
		t.Fatalf("ReadSession after renew = %+v, %v; want live, renewed no earlier than %v, TTL %v", again, ok, sess.RenewedAt, 2*LongTTL)
	}
	if ok, notice, err := s.RenewSession(bg, "nobody", LongTTL); err != nil || ok || notice != 0 {
		t.Fatalf("RenewSession(unknown) = %v, %d, %v; want false, 0, nil", ok, notice, err)
	}
	if _, ok, err := s.ReadSession(bg, "nobody"); err != nil || ok {
		t.Fatalf("ReadSession(unknown) = %v, %v; want not found", ok, err)
	}
}

// A session that is not renewed expires by the store's clock: it is never
// renewed again, its leases are free to others, and it can no longer
// write their data.
func caseSessionExpiresByClock(t *testing.T, s Store) {
	open(t, s, "short", holderA, ShortTTL)
	open(t, s, "other", holderB, LongTTL)
	ensure(t, s, "x")
	term := acquireOne(t, s, "short", holderA, "x", 1)
	waitExpired(t, s, "short")
	sess, ok, err := s.ReadSession(bg, "short")
	check(t, "ReadSession", err)
	if !ok || sess.Live() {
		t.Fatalf("ReadSession of the expired session = %+v, %v; want its row, not live", sess, ok)
	}
	if ok, _, err := s.RenewSession(bg, "short", LongTTL); err != nil || ok {
		t.Fatalf("RenewSession of the expired session = %v, %v; want false: it is never revived", ok, err)
	}
	if after, _, _ := s.ReadSession(bg, "short"); !after.ExpiresAt.Equal(sess.ExpiresAt) {
		t.Fatalf("the refused renewal moved the expiry from %v to %v", sess.ExpiresAt, after.ExpiresAt)
	}
	if r := row(t, s, "x"); r.Live() || r.Holder != holderA || r.Session != "short" || !r.ExpiresAt.Equal(sess.ExpiresAt) {
		t.Fatalf("row of the expired session = %+v; want its holder, not live, expired with the session", r)
	}
	if ok, err := s.SetData(bg, "short", term, "late", ""); err != nil || ok {
		t.Fatalf("SetData by the expired session = %v, %v; want false", ok, err)
	}
}

// An ended session is gone at once: its leases are free to others, it is
// never renewed, and its rows read with no expiry.
func caseSessionEnd(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	open(t, s, "s2", holderB, LongTTL)
	ensure(t, s, "x")
	acquireOne(t, s, "s1", holderA, "x", 1)
	check(t, "EndSession", s.EndSession(bg, "s1", LongTTL))
	if _, ok, err := s.ReadSession(bg, "s1"); err != nil || ok {
		t.Fatalf("ReadSession of the ended session = %v, %v; want not found", ok, err)
	}
	if ok, _, err := s.RenewSession(bg, "s1", LongTTL); err != nil || ok {
		t.Fatalf("RenewSession of the ended session = %v, %v; want false", ok, err)
	}
	if r := row(t, s, "x"); r.Live() || !r.ExpiresAt.IsZero() || r.Session != "s1" {
		t.Fatalf("row of the ended session = %+v; want not live, no expiry, its session still named", r)
	}
	acquireOne(t, s, "s2", holderB, "x", 2)
	acquireNone(t, s, "s1", holderA, "x")
}

// Ending a session also deletes the sessions expired for longer than its
// pruneAfter, and only those; their leases read as free with no expiry.
func caseSessionEndPrunesExpired(t *testing.T, s Store) {
	open(t, s, "short", holderA, ShortTTL)
	open(t, s, "live", holderB, LongTTL)
	open(t, s, "e1", holderC, LongTTL)
	open(t, s, "e2", holderC, LongTTL)
	ensure(t, s, "x")
	acquireOne(t, s, "short", holderA, "x", 1)
	waitExpired(t, s, "short")
	check(t, "EndSession", s.EndSession(bg, "e1", time.Hour))
	if _, ok, err := s.ReadSession(bg, "short"); err != nil || !ok {
		t.Fatalf("ReadSession of a session expired for less than pruneAfter = %v, %v; want it kept", ok, err)
	}
	waitFor(t, "the session to be expired for a moment", func() bool {
		sess, _, err := s.ReadSession(bg, "short")
		check(t, "ReadSession", err)
		return sess.Now.Sub(sess.ExpiresAt) > 10*time.Millisecond
	})
	check(t, "EndSession", s.EndSession(bg, "e2", 5*time.Millisecond))
	if _, ok, err := s.ReadSession(bg, "short"); err != nil || ok {
		t.Fatalf("ReadSession of a session expired for longer than pruneAfter = %v, %v; want it pruned", ok, err)
	}
	if _, ok, err := s.ReadSession(bg, "live"); err != nil || !ok {
		t.Fatalf("ReadSession of a live session = %v, %v; want it kept", ok, err)
	}
	if r := row(t, s, "x"); r.Live() || !r.ExpiresAt.IsZero() || r.Session != "short" {
		t.Fatalf("row of the pruned session = %+v; want not live, no expiry", r)
	}
}

// Every resign request made to a session's leases raises the notice its
// renewals return.
func caseSessionNotice(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	ensure(t, s, "x", "y")
	acquire(t, s, "s1", holderA, "x", "y")
	for i, name := range []string{"x", "y"} {
		if _, found, notified, err := s.RequestResign(bg, name, "", noWindow); err != nil || !found || !notified {
			t.Fatalf("RequestResign(%s) = %v, %v, %v; want found and notified", name, found, notified, err)
		}
		ok, notice, err := s.RenewSession(bg, "s1", LongTTL)
		if err != nil || !ok || notice != int64(i+1) {
			t.Fatalf("RenewSession after %d requests = %v, %d, %v; want true, %d", i+1, ok, notice, err, i+1)
		}
	}
}

// A free lease is taken at epoch 1 by a live session; a name without a
// row is not.
func caseAcquireFree(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	ensure(t, s, "a", "b")
	fresh := row(t, s, "a")
	if fresh.Holder != "" || fresh.Session != "" || fresh.Epoch != 0 || fresh.Live() || !fresh.AcquiredAt.IsZero() || fresh.Now.IsZero() {
		t.Fatalf("new row = %+v; want free at epoch 0, never acquired", fresh)
	}
	got := acquire(t, s, "s1", holderA, "a", "b", "missing")
	if want := []store.Term{{Name: "a", Epoch: 1}, {Name: "b", Epoch: 1}}; !slices.Equal(got, want) {
		t.Fatalf("Acquire = %v, want %v", got, want)
	}
	sess, _, err := s.ReadSession(bg, "s1")
	check(t, "ReadSession", err)
	r := row(t, s, "a")
	if r.Holder != holderA || r.Session != "s1" || r.Epoch != 1 || !r.Live() || r.AcquiredAt.IsZero() || r.AcquiredAt.After(r.Now) ||
		!r.ExpiresAt.Equal(sess.ExpiresAt) || !r.RenewedAt.Equal(sess.RenewedAt) {
		t.Fatalf("acquired row = %+v (session %+v); want held by s1 at epoch 1, live with its session", r, sess)
	}
	if rows, err := s.Get(bg, []string{"missing"}); err != nil || len(rows) != 0 {
		t.Fatalf("Get(missing) = %+v, %v; want no row: Acquire creates none", rows, err)
	}
}

// A lease held by another live session is not taken, and is left as it
// was.
func caseAcquireHeldByLiveOther(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	open(t, s, "s2", holderB, LongTTL)
	ensure(t, s, "x")
	acquireOne(t, s, "s1", holderA, "x", 1)
	before := row(t, s, "x")
	acquireNone(t, s, "s2", holderB, "x")
	after := row(t, s, "x")
	if after.Holder != holderA || after.Session != "s1" || after.Epoch != 1 || !after.AcquiredAt.Equal(before.AcquiredAt) {
		t.Fatalf("row after a refused acquire = %+v; want it unchanged from %+v", after, before)
	}
}

// A session acquiring a lease it holds starts a new term of it.
func caseAcquireOwnAgain(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	ensure(t, s, "x")
	acquireOne(t, s, "s1", holderA, "x", 1)
	acquireOne(t, s, "s1", holderA, "x", 2)
	if r := row(t, s, "x"); r.Epoch != 2 || r.Session != "s1" || !r.Live() {
		t.Fatalf("row = %+v; want held by s1 at epoch 2", r)
	}
}

// A lease whose session expired is taken by another session, with the
// next epoch.
func caseAcquireHeldByDeadSession(t *testing.T, s Store) {
	open(t, s, "short", holderA, ShortTTL)
	ensure(t, s, "x")
	acquireOne(t, s, "short", holderA, "x", 1)
	open(t, s, "s2", holderB, LongTTL)
	acquireNone(t, s, "s2", holderB, "x")
	waitExpired(t, s, "short")
	acquireOne(t, s, "s2", holderB, "x", 2)
	if r := row(t, s, "x"); r.Holder != holderB || r.Session != "s2" || !r.Live() {
		t.Fatalf("row = %+v; want held by s2", r)
	}
}

// A session that expired, or never existed, takes nothing, not even a
// free lease.
func caseAcquireByDeadSession(t *testing.T, s Store) {
	open(t, s, "short", holderA, ShortTTL)
	ensure(t, s, "x")
	waitExpired(t, s, "short")
	acquireNone(t, s, "short", holderA, "x")
	acquireNone(t, s, "nobody", holderB, "x")
	if r := row(t, s, "x"); r.Holder != "" || r.Epoch != 0 {
		t.Fatalf("row = %+v; want free at epoch 0", r)
	}
}

// Every new term of a lease has the next epoch, whoever takes it and
// however the last term ended: no epoch is handed out twice.
func caseEpochsNeverRepeat(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	open(t, s, "s2", holderB, LongTTL)
	open(t, s, "s3", holderC, LongTTL)
	ensure(t, s, "x")
	t1 := acquireOne(t, s, "s1", holderA, "x", 1)
	if n := release(t, s, "s1", t1); n != 1 {
		t.Fatalf("Release = %d, want 1", n)
	}
	acquireOne(t, s, "s2", holderB, "x", 2)
	check(t, "EndSession", s.EndSession(bg, "s2", LongTTL))
	acquireOne(t, s, "s3", holderC, "x", 3)
	t4 := acquireOne(t, s, "s3", holderC, "x", 4)
	ensure(t, s, "x")
	acquireNone(t, s, "s1", holderA, "x")
	release(t, s, "s3", t4)
	ensure(t, s, "x")
	acquireOne(t, s, "s1", holderA, "x", 5)
}

// A release frees only the session's own term at its epoch; a stale or
// foreign release touches nothing.
func caseReleaseOwnTermOnly(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	open(t, s, "s2", holderB, LongTTL)
	ensure(t, s, "x")
	acquireOne(t, s, "s1", holderA, "x", 1)
	cur := acquireOne(t, s, "s1", holderA, "x", 2)
	if n := release(t, s, "s2", cur); n != 0 {
		t.Fatalf("Release by another session = %d, want 0", n)
	}
	if n := release(t, s, "s1", store.Term{Name: "x", Epoch: 1}); n != 0 {
		t.Fatalf("Release of an earlier term = %d, want 0", n)
	}
	if n := release(t, s, "s1", store.Term{Name: "missing", Epoch: 1}); n != 0 {
		t.Fatalf("Release of a missing lease = %d, want 0", n)
	}
	if r := row(t, s, "x"); r.Holder != holderA || r.Session != "s1" || r.Epoch != 2 || !r.Live() {
		t.Fatalf("row after stale releases = %+v; want still held by s1 at epoch 2", r)
	}
	if n := release(t, s, "s1", cur); n != 1 {
		t.Fatalf("Release of the current term = %d, want 1", n)
	}
	r := row(t, s, "x")
	if r.Holder != "" || r.Session != "" || r.Epoch != 2 || r.Live() || r.ExpiresAt.IsZero() || r.ExpiresAt.After(r.Now) ||
		r.RenewedAt.IsZero() || r.RenewedAt.Before(r.AcquiredAt) {
		t.Fatalf("released row = %+v; want free, epoch kept, expired at the release, renewed as its term began", r)
	}
	if n := release(t, s, "s1", cur); n != 0 {
		t.Fatalf("second Release = %d, want 0", n)
	}
	if ok, _, err := s.RenewSession(bg, "s1", LongTTL); err != nil || !ok {
		t.Fatalf("RenewSession after the release = %v, %v; want the session still live", ok, err)
	}
}

// SetData writes only into the session's own live term, with a wake-up
// (on PostgreSQL one statement with the notification) or without.
func caseSetDataOwnTermOnly(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	open(t, s, "s2", holderB, LongTTL)
	ensure(t, s, "x")
	term := acquireOne(t, s, "s1", holderA, "x", 1)
	setData := func(session string, tm store.Term, data string, want bool) {
		t.Helper()
		for _, wake := range []string{"", "pool|global/p|wake|m1"} {
			if ok, err := s.SetData(bg, session, tm, data, wake); err != nil || ok != want {
				t.Fatalf("SetData(%s, %v, %q, wake %q) = %v, %v; want %v", session, tm, data, wake, ok, err, want)
			}
		}
	}
	setData("s1", term, "mine", true)
	setData("s1", term, "mine", true) // unchanged data is still a write of the term
	setData("s2", term, "theirs", false)
	setData("s1", store.Term{Name: "x", Epoch: 2}, "future", false)
	setData("s1", store.Term{Name: "missing", Epoch: 1}, "none", false)
	if r := row(t, s, "x"); r.Data != "mine" {
		t.Fatalf("data = %q, want %q", r.Data, "mine")
	}
	release(t, s, "s1", term)
	setData("s1", term, "after", false)
	if r := row(t, s, "x"); r.Data != "mine" {
		t.Fatalf("data after the release = %q, want it kept: %q", r.Data, "mine")
	}
}

// A resign request is recorded for the current term only, reads back as
// pending for its session only, and ends with the term.
func caseResignRequest(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	open(t, s, "s2", holderB, LongTTL)
	ensure(t, s, "x", "free")
	acquireOne(t, s, "s1", holderA, "x", 1)

	if _, found, notified, err := s.RequestResign(bg, "missing", "", noWindow); err != nil || found || notified {
		t.Fatalf("RequestResign(missing) = %v, %v, %v; want not found", found, notified, err)
	}
	refuse := func(store.Row) (time.Duration, error) { return 0, errRefused }
	if r, found, notified, err := s.RequestResign(bg, "x", "", refuse); !errors.Is(err, errRefused) || !found || notified || r.Session != "s1" {
		t.Fatalf("RequestResign refused by its check = %+v, %v, %v, %v; want the row, found, not notified, the check's error", r, found, notified, err)
	}
	if got, err := s.PendingResigns(bg, "s1", []string{"x"}); err != nil || len(got) != 0 {
		t.Fatalf("PendingResigns after a refused request = %v, %v; want none", got, err)
	}
	if _, found, notified, err := s.RequestResign(bg, "free", "", noWindow); err != nil || !found || notified {
		t.Fatalf("RequestResign(never held) = %v, %v, %v; want found, not notified", found, notified, err)
	}

	var seen store.Row
	r, found, notified, err := s.RequestResign(bg, "x", "", func(r store.Row) (time.Duration, error) { seen = r; return 0, nil })
	if err != nil || !found || !notified || r.Holder != holderA || r.Epoch != 1 || seen.Session != "s1" {
		t.Fatalf("RequestResign = %+v, %v, %v, %v (check saw %+v); want the held row, notified", r, found, notified, err, seen)
	}
	if got, err := s.PendingResigns(bg, "s1", []string{"x", "free", "missing"}); err != nil || !slices.Equal(got, []store.Term{{Name: "x", Epoch: 1}}) {
		t.Fatalf("PendingResigns(s1) = %v, %v; want [x 1]", got, err)
	}
	if got, err := s.PendingResigns(bg, "s2", []string{"x"}); err != nil || len(got) != 0 {
		t.Fatalf("PendingResigns(s2) = %v, %v; want none", got, err)
	}
	if r := row(t, s, "x"); r.ResignEpoch != 1 || r.PreferredHolder != "" {
		t.Fatalf("row = %+v; want resign epoch 1, no preference", r)
	}
	acquireOne(t, s, "s1", holderA, "x", 2)
	if got, err := s.PendingResigns(bg, "s1", []string{"x"}); err != nil || len(got) != 0 {
		t.Fatalf("PendingResigns after a new term = %v, %v; want none", got, err)
	}
	if r := row(t, s, "x"); r.ResignEpoch != 0 {
		t.Fatalf("row after a new term = %+v; want the request cleared", r)
	}
}

// While a resign preference's window lasts, only the preferred process
// takes the lease, named by its holder string, node or instance; the
// term it starts clears the preference.
func casePreferredHolderOnly(t *testing.T, s Store) {
	open(t, s, "sa", holderA, LongTTL)
	open(t, s, "sb", holderB, LongTTL)
	open(t, s, "sc", holderC, LongTTL)
	for _, prefer := range []string{holderB, "node-b", "inst-b"} {
		name := "x-" + prefer
		ensure(t, s, name)
		term := acquireOne(t, s, "sa", holderA, name, 1)
		if _, _, notified, err := s.RequestResign(bg, name, prefer, window(LongTTL)); err != nil || !notified {
			t.Fatalf("RequestResign = %v, %v; want notified", notified, err)
		}
		r := row(t, s, name)
		if r.PreferredHolder != prefer || r.PreferredUntil.Sub(r.Now) > LongTTL || r.PreferredUntil.Sub(r.Now) < LongTTL-time.Minute ||
			!r.ReservedAgainst(holderC) || r.ReservedAgainst(holderB) {
			t.Fatalf("row = %+v; want preferring %s for about %v", r, prefer, LongTTL)
		}
		acquireNone(t, s, "sb", holderB, name) // still held
		release(t, s, "sa", term)
		acquireNone(t, s, "sc", holderC, name)
		acquireNone(t, s, "sa", holderA, name) // the holder that resigned, too
		acquireOne(t, s, "sb", holderB, name, 2)
		if r := row(t, s, name); r.PreferredHolder != "" || !r.PreferredUntil.IsZero() || r.ResignEpoch != 0 {
			t.Fatalf("row after the preferred holder took it = %+v; want the preference cleared", r)
		}
	}
}

// Once a preference's window has passed by the store's clock, anyone may
// take the lease again.
func casePreferenceWindowEnds(t *testing.T, s Store) {
	open(t, s, "sa", holderA, LongTTL)
	open(t, s, "sc", holderC, LongTTL)
	ensure(t, s, "x")
	term := acquireOne(t, s, "sa", holderA, "x", 1)
	if _, _, notified, err := s.RequestResign(bg, "x", "node-b", window(ShortTTL)); err != nil || !notified {
		t.Fatalf("RequestResign = %v, %v; want notified", notified, err)
	}
	release(t, s, "sa", term)
	waitFor(t, "the preference window to end", func() bool { return !row(t, s, "x").ReservedAgainst(holderC) })
	acquireOne(t, s, "sc", holderC, "x", 2)
}

// EnsureRows creates missing rows only: a held row keeps its term, an
// unheld one its epoch and data, and counts as released anew.
func caseEnsureRowsKeepsRows(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	ensure(t, s, "held", "free")
	ensure(t, s, "held", "free")
	term := acquireOne(t, s, "s1", holderA, "held", 1)
	if ok, err := s.SetData(bg, "s1", term, "d", ""); err != nil || !ok {
		t.Fatalf("SetData = %v, %v", ok, err)
	}
	if ok, err := s.Publish(bg, "free", 0, "gen"); err != nil || !ok {
		t.Fatalf("Publish = %v, %v", ok, err)
	}
	before := row(t, s, "free")
	ensure(t, s, "held", "free", "new")
	if r := row(t, s, "held"); r.Holder != holderA || r.Session != "s1" || r.Epoch != 1 || r.Data != "d" || !r.Live() {
		t.Fatalf("held row after EnsureRows = %+v; want its term kept", r)
	}
	r := row(t, s, "free")
	if r.Holder != "" || r.Epoch != 1 || r.Data != "gen" || r.ExpiresAt.Before(before.ExpiresAt) {
		t.Fatalf("unheld row after EnsureRows = %+v (before %+v); want epoch and data kept, released no earlier", r, before)
	}
	if got, err := s.List(bg, ""); err != nil || !slices.Equal(names(got), []string{"free", "held", "new"}) {
		t.Fatalf("List = %v, %v; want free, held, new", names(got), err)
	}
}

// Publish is a compare-and-set on an unheld row's epoch: it moves from
// from to from+1 with the new data, and only from the current epoch.
func casePublish(t *testing.T, s Store) {
	open(t, s, "s1", holderA, LongTTL)
	ensure(t, s, "gen", "held")
	publish := func(name string, from int64, data string, want bool) {
		t.Helper()
		if ok, err := s.Publish(bg, name, from, data); err != nil || ok != want {
			t.Fatalf("Publish(%s, %d, %q) = %v, %v; want %v", name, from, data, ok, err, want)
		}
	}
	publish("gen", 0, "g1", true)
	if r := row(t, s, "gen"); r.Epoch != 1 || r.Data != "g1" || r.Holder != "" || r.RenewedAt.IsZero() || r.RenewedAt.After(r.Now) {
		t.Fatalf("published row = %+v; want epoch 1, data g1, unheld, published now", r)
	}
	publish("gen", 0, "stale", false)
	publish("gen", 2, "ahead", false)
	publish("gen", 1, "g2", true)
	publish("missing", 0, "none", false)
	if r := row(t, s, "gen"); r.Epoch != 2 || r.Data != "g2" {
		t.Fatalf("row = %+v; want epoch 2, data g2", r)
	}
	acquireOne(t, s, "s1", holderA, "gen", 3)
	acquireOne(t, s, "s1", holderA, "held", 1)
	publish("held", 1, "held", false)
	if r := row(t, s, "held"); r.Epoch != 1 || r.Data != "" || r.Holder != holderA {
		t.Fatalf("held row after a refused publish = %+v; want it unchanged", r)
	}
}

// PruneDead deletes, under its prefix only, the rows nobody holds or is
// about to hold for longer than grace: unheld ones, those of expired
// sessions, and those of sessions gone.
func casePruneDead(t *testing.T, s Store) {
	open(t, s, "live", holderA, LongTTL)
	open(t, s, "short", holderB, ShortTTL)
	open(t, s, "ended", holderC, LongTTL)
	ensure(t, s, "p/free", "p/live", "p/expired", "p/ended", "q/free")
	acquireOne(t, s, "live", holderA, "p/live", 1)
	acquireOne(t, s, "short", holderB, "p/expired", 1)
	acquireOne(t, s, "ended", holderC, "p/ended", 1)
	check(t, "EndSession", s.EndSession(bg, "ended", LongTTL))
	waitExpired(t, s, "short")
	// A session gone counts as expired forever; the others are too recent.
	if n, err := s.PruneDead(bg, "p/", time.Hour); err != nil || n != 1 {
		t.Fatalf("PruneDead(grace 1h) = %d, %v; want 1 (the ended session's row)", n, err)
	}
	waitFor(t, "the rows to be dead for a moment", func() bool {
		r := row(t, s, "p/expired")
		return r.Now.Sub(r.ExpiresAt) > 10*time.Millisecond
	})
	if n, err := s.PruneDead(bg, "p/", 5*time.Millisecond); err != nil || n != 2 {
		t.Fatalf("PruneDead(grace 5ms) = %d, %v; want 2 (the unheld row and the expired session's)", n, err)
	}
	if got, err := s.List(bg, ""); err != nil || !slices.Equal(names(got), []string{"p/live", "q/free"}) {
		t.Fatalf("List after the prunes = %v, %v; want p/live, q/free", names(got), err)
	}
}

// Get reads the rows of the names given; List those under a prefix, byte
// for byte, in name order.
func caseGetAndList(t *testing.T, s Store) {
	ensure(t, s, "b/1", "a/2", "a/10", "a/1", "ab", "a%x", "a_y", "A/1")
	rows, err := s.Get(bg, []string{"b/1", "missing", "a/1"})
	check(t, "Get", err)
	got := names(rows)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a/1", "b/1"}) {
		t.Fatalf("Get = %v, want a/1 and b/1", got)
	}
	for prefix, want := range map[string][]string{
		"":        {"A/1", "a%x", "a/1", "a/10", "a/2", "a_y", "ab", "b/1"},
		"a/":      {"a/1", "a/10", "a/2"},
		"a":       {"a%x", "a/1", "a/10", "a/2", "a_y", "ab"},
		"a%":      {"a%x"},
		"a_":      {"a_y"},
		"a/1":     {"a/1", "a/10"},
		"zz":      nil,
		"b/1/sub": nil,
	} {
		rows, err := s.List(bg, prefix)
		check(t, "List", err)
		if !slices.Equal(names(rows), want) {
			t.Errorf("List(%q) = %v, want %v", prefix, names(rows), want)
		}
	}
}
