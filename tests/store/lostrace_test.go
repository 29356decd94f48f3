package store_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/testdb"
)

// TestLostRaceIsSentAgain: a transaction that lost to a conflicting one
// (MariaDB's deadlock, or on a Galera cluster a failed certification,
// both error 1213) was rolled back whole, so the store sends it again, up
// to lostRaceAttempts (3) times in all. A renewal that loses its race twice
// still renews the session: a holder's own renewal never loses its term
// to a lost race. One that loses every time returns the lost race as an
// error, which the caller rides out as any transient error; it never
// reads as the session gone. Any other error is returned at once. The
// losses are made by the application's gorm callback, which fails the
// renewal with the server's error before it is sent.
func TestLostRaceIsSentAgain(t *testing.T) {
	tg := testdb.Target{Name: "mysql", Dialect: "mysql"}
	db := tg.Open(t)
	s := migrated(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const session = "lost-race-session"
	if err := s.Sessions().CreateSession(ctx, session, "node-a/test/1", time.Minute); err != nil {
		t.Fatal(err)
	}

	var fail atomic.Pointer[error] // what the next renewals fail with
	var failures, sent atomic.Int32
	inject := func(tx *gorm.DB) {
		if !strings.Contains(tx.Statement.SQL.String(), "SET renewed_at_us") {
			return
		}
		sent.Add(1)
		if failures.Load() > 0 {
			failures.Add(-1)
			_ = tx.AddError(*fail.Load())
		}
	}
	if err := db.Callback().Raw().Before("gorm:raw").Register("test:lose_race", inject); err != nil {
		t.Fatal(err)
	}
	deadlock := &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'},
		Message: "Deadlock found when trying to get lock; try restarting transaction"}
	refused := errors.New("refused by the application's callback")

	for _, tc := range []struct {
		name     string
		fail     error
		failures int32
		wantSent int32
		wantOK   bool
		wantErr  error // nil: none
	}{
		{"NoLoss", deadlock, 0, 1, true, nil},
		{"LostTwice", deadlock, 2, 3, true, nil},
		{"LostEveryTime", deadlock, 10, 3, false, deadlock},
		{"OtherErrorNotSentAgain", refused, 1, 1, false, refused},
	} {
		fail.Store(&tc.fail)
		failures.Store(tc.failures)
		sent.Store(0)
		ok, _, err := s.Sessions().RenewSession(ctx, session, time.Minute)
		switch {
		case tc.wantErr == nil && err != nil:
			t.Errorf("%s: RenewSession: %v", tc.name, err)
		case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("%s: RenewSession error %v, want %v", tc.name, err, tc.wantErr)
		}
		if ok != tc.wantOK {
			t.Errorf("%s: RenewSession ok = %v, want %v", tc.name, ok, tc.wantOK)
		}
		if n := sent.Load(); n != tc.wantSent {
			t.Errorf("%s: the renewal was sent %d times, want %d", tc.name, n, tc.wantSent)
		}
	}
	// The session lived through it all.
	if ok, _, err := s.Sessions().RenewSession(ctx, session, time.Minute); err != nil || !ok {
		t.Fatalf("RenewSession after the lost races = %v, %v; want the session live", ok, err)
	}
}
