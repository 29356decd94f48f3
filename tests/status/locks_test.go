package status_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/status"
)

// killedFixture is two processes on one SQLite file, members of the
// global pool "orders": a holds the keyed lock "order|7" of the namespace
// global/jobs and a slot of the semaphore global/limit; b's connections
// were closed, as if it had been killed, and its session has expired by
// the database clock.
type killedFixture struct {
	a, b *coordination.Coordinator
	lock *coordination.Lease
	slot *coordination.Lease
}

func newKilledFixture(t *testing.T) killedFixture {
	t.Helper()
	driver, dsn := testdb.Target{Name: "sqlite-pure", Dialect: "sqlite"}.OpenDSN(t)
	open := func() *gorm.DB {
		db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
		if err != nil {
			t.Fatal(err)
		}
		// Closed after the coordinator on it stops: cleanups run last first.
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		return db
	}
	dbB := open()
	f := killedFixture{a: start(t, open(), "node-a")}
	// b's TTL is short, so its session expires soon after it is killed.
	f.b = startWith(t, dbB, "node-b", coordination.Config{TTL: time.Second})
	join(t, f.a, "orders")
	join(t, f.b, "orders")
	waitSettled(t, f.a, "global/orders", 2)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	locks, err := f.a.Locks(coordination.GlobalScope, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if f.lock, err = locks.Lock(ctx, "order|7"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.lock.Release(context.Background()) })
	sem, err := f.a.Semaphore(coordination.GlobalScope, "limit", 3)
	if err != nil {
		t.Fatal(err)
	}
	if f.slot, err = sem.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.slot.Release(context.Background()) })

	// Kill b: it can no longer renew nor release anything.
	sqlDB, err := dbB.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlDB.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for !f.bExpired(t) {
		if time.Now().After(deadline) {
			t.Fatalf("the session of the killed %s did not expire within %v", f.b.Holder(), wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f
}

// bExpired reports whether the database shows b's session expired and its
// pool member not live.
func (f killedFixture) bExpired(t *testing.T) bool {
	t.Helper()
	s, err := status.Read(context.Background(), f.a.Admin())
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range s.Sessions {
		if si.Holder == f.b.Holder() && si.Live {
			return false
		}
	}
	for _, p := range s.Pools {
		for _, m := range p.Members {
			if m.Holder == f.b.Holder() && m.Live {
				return false
			}
		}
	}
	return true
}

// TestPageShowsLocksAndProcesses: the page and its JSON show the keyed
// lock and the semaphore slot held, with their holder and epoch, every
// process with its session, the killed one expired and its pool member
// dead, not pending; the lock rows and the floor rows of keyed locks are
// no leases.
func TestPageShowsLocksAndProcesses(t *testing.T) {
	f := newKilledFixture(t)
	srv := httptest.NewServer(status.Handler(f.a, status.Options{Refresh: -1}))
	defer srv.Close()

	_, _, html := fetch(t, srv.URL+"/status", "")
	for _, s := range []string{
		`<section id="section-locks">`, `<section id="section-processes">`,
		"<h3>global/jobs</h3>", "Keyed locks: 1 held", "<h3>global/limit</h3>", "Semaphore: 1 held",
		`<td class="name"><span class="clip" title="order|7">order|7</span></td>` + "\n" + holderCell(f.a.Holder()) + "\n" +
			`<td class="num">` + strconv.FormatInt(f.lock.Epoch(), 10) + `</td>`,
		`<tr class="session mine">` + "\n" + holderCell(f.a.Holder()),
		`<tr class="session dead">` + "\n" + holderCell(f.b.Holder()),
		`<span class="notlive">expired</span>`, `<span class="dead">dead</span>`,
	} {
		if !strings.Contains(html, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	for _, s := range []string{"lockfloor|", "lock|", "sem|", "(pending)"} {
		if strings.Contains(html, s) {
			t.Errorf("the page has %q", s)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", html)
	}

	_, _, body := fetch(t, srv.URL+"/status.json", "")
	var s status.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	for _, l := range s.Leases {
		if strings.Contains(l.Key, "|") {
			t.Errorf("JSON lease %q is a row of a pool, a keyed lock or a semaphore", l.Key)
		}
	}
	if len(s.Locks) != 2 {
		t.Fatalf("JSON locks = %+v, want global/jobs and global/limit", s.Locks)
	}
	if l := s.Locks[0]; l.Key != "global/jobs" || l.Slots != 0 || len(l.Holders) != 1 || l.Holders[0].Key != "order|7" ||
		l.Holders[0].Holder != f.a.Holder() || l.Holders[0].Epoch != f.lock.Epoch() || !l.Holders[0].Live ||
		!l.Holders[0].ExpiresAt.After(l.Holders[0].DatabaseTime) {
		t.Errorf("JSON keyed locks = %+v, want order|7 held live by %s at epoch %d", l, f.a.Holder(), f.lock.Epoch())
	}
	if l := s.Locks[1]; l.Key != "global/limit" || l.Slots < 1 || l.Slots > 3 || len(l.Holders) != 1 ||
		l.Holders[0].Holder != f.a.Holder() || l.Holders[0].Epoch != f.slot.Epoch() || !l.Holders[0].Live {
		t.Errorf("JSON semaphore = %+v, want 1 to 3 slots, one held live by %s at epoch %d", l, f.a.Holder(), f.slot.Epoch())
	}
	if len(s.Sessions) != 2 {
		t.Fatalf("JSON sessions = %+v, want a's and b's", s.Sessions)
	}
	for _, si := range s.Sessions {
		switch si.Holder {
		case f.a.Holder():
			if !si.Live || !si.ExpiresAt.After(si.DatabaseTime) || si.RenewedAt.IsZero() {
				t.Errorf("JSON session of a = %+v, want live with time left", si)
			}
		case f.b.Holder():
			if si.Live || si.ExpiresAt.After(si.DatabaseTime) {
				t.Errorf("JSON session of the killed b = %+v, want expired", si)
			}
		default:
			t.Errorf("JSON session of an unknown process: %+v", si)
		}
	}
}
