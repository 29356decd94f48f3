package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsRenew(t *testing.T) {
	for sql, want := range map[string]bool{
		// As leasehold sends it (internal/store/sql_sessions.go).
		`UPDATE "leasehold_sessions" SET renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 3000000 WHERE id = ? AND expires_at_us >= 5`: true,
		"UPDATE `leasehold_sessions` SET renewed_at_us = UTC(), expires_at_us = UTC() + 3 WHERE id = ?": true,
		// pg_stat_statements' normalised text.
		`UPDATE "leasehold_sessions" SET renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * $1 AS BIGINT), expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * $2 AS BIGINT) + $3 WHERE id = $4`: true,
		// Acquire, release, publish, acknowledgement, others.
		`UPDATE "leasehold_leases" SET holder = ?, session_id = ?, epoch = epoch + 1, acquired_at_us = 1, renewed_at_us = 1, expires_at_us = 4 WHERE name IN (?)`: false,
		`UPDATE "leasehold_leases" SET holder = '', session_id = '', expires_at_us = 1 WHERE session_id = ? AND ((name = ? AND epoch = 1))`:                       false,
		`UPDATE "leasehold_leases" SET epoch = epoch + 1, data = ?, renewed_at_us = 1 WHERE name = ? AND holder = ''`:                                             false,
		`UPDATE "leasehold_leases" SET data = ? WHERE name = ? AND renewed_at_us > 0`:                                                                             false,
		`UPDATE "orders" SET renewed_at_us = 1 WHERE id = 1`:                                                                                                      false,
		`SELECT renewed_at_us FROM "leasehold_sessions"`:                                                                                                          false,
		``: false,
	} {
		if got := IsRenew(sql); got != want {
			t.Errorf("IsRenew(%q) = %v, want %v", sql, got, want)
		}
	}
}

// TestIsRenewMatchesTheGoldenStatements classifies every statement in the
// store's golden files: those under a "-- renew" heading must be renewals
// and no other. It fails when the store changes the renewal's shape, so
// that IsRenew is adjusted with it.
func TestIsRenewMatchesTheGoldenStatements(t *testing.T) {
	files, err := filepath.Glob("../../internal/store/testdata/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files under ../../internal/store/testdata (%v)", err)
	}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "ddl-") {
			continue // the schema scripts: no lease statement in them
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		heading, renewals := "", 0
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "-- args:"):
			case strings.HasPrefix(line, "--"):
				heading = line
			case strings.TrimSpace(line) == "":
			default:
				want := strings.HasPrefix(heading, "-- renew")
				if got := IsRenew(line); got != want {
					t.Errorf("%s, %s: IsRenew = %v, want %v for\n%s", filepath.Base(f), heading, got, want, line)
				}
				if want {
					renewals++
				}
			}
		}
		if renewals == 0 {
			t.Errorf("%s: no statement under a \"-- renew\" heading", filepath.Base(f))
		}
	}
}
