package coordination

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// TestHolderTTL: a preference lasts twice the holder's TTL, read from its
// session as the database shows it, not the TTL of the process that asks
// (a command-line tool runs with the default).
func TestHolderTTL(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		renewed, expires time.Time
		want             time.Duration
	}{
		{at, at.Add(3 * time.Second), 3 * time.Second},
		{at, at.Add(time.Hour), time.Hour},
		{time.Time{}, time.Time{}, 15 * time.Second},         // nothing to read: the fallback
		{at, at.Add(-time.Second), 15 * time.Second},         // not a TTL
		{at, at.Add(maxTTL + time.Second), 15 * time.Second}, // beyond any TTL accepted
	} {
		r := store.Row{RenewedAt: tc.renewed, ExpiresAt: tc.expires}
		if got := holderTTL(r, 15*time.Second); got != tc.want {
			t.Errorf("holderTTL(renewed %v, expires %v) = %v, want %v", tc.renewed, tc.expires, got, tc.want)
		}
	}
}
