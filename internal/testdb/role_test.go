package testdb

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasehold/leasehold/internal/dbopen"
)

func TestRoleDSN(t *testing.T) {
	escaped := url.QueryEscape(secret)
	r := Role{Name: "r_case_1f2e3d4c_7", password: "0123abcd"}
	cases := []struct{ name, dsn string }{
		{"keyvalue", `host=db.example port=5432 user=app password='p@ss:w/rd;x' dbname=app sslmode=require`},
		{"keyvalue no user", `host=db.example dbname=app`},
		{"keyvalue user twice", `host=db.example user=app dbname=app user=other password=x`},
		{"keyvalue quoted user", `host=db.example user = 'my app' dbname=app password='it\'s p@ss'`},
		{"url", "postgres://app:" + escaped + "@db.example:5432/app?sslmode=require&application_name=t"},
		{"url no user", "postgresql://db.example/app"},
		{"url user param", "postgres://db.example/app?user=app&password=" + escaped + "&sslmode=disable"},
		{"url two hosts", "postgres://app:" + escaped + "@h1:5432,h2:5433/app?target_session_attrs=read-write"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, err := pgconn.ParseConfig(tc.dsn)
			if err != nil {
				t.Fatalf("the case's DSN does not parse: %v", err)
			}
			got, err := r.DSN(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			after, err := pgconn.ParseConfig(got)
			if err != nil {
				t.Fatalf("the rewritten DSN does not parse: %v", err)
			}
			if after.User != r.Name || after.Password != r.password {
				t.Errorf("user %q password %q, want %q %q", after.User, after.Password, r.Name, r.password)
			}
			if after.Database != before.Database || after.Host != before.Host || after.Port != before.Port ||
				len(after.Fallbacks) != len(before.Fallbacks) || after.TLSConfig == nil != (before.TLSConfig == nil) {
				t.Errorf("connection settings changed: %s@%s:%d fallbacks %d, want %s@%s:%d %d",
					after.Database, after.Host, after.Port, len(after.Fallbacks), before.Database, before.Host, before.Port, len(before.Fallbacks))
			}
			for k, v := range before.RuntimeParams {
				if after.RuntimeParams[k] != v {
					t.Errorf("runtime parameter %s = %q, want %q", k, after.RuntimeParams[k], v)
				}
			}
			if strings.Contains(got, "p@ss") || strings.Contains(got, escaped) {
				t.Errorf("the DSN still holds the old password: %s", got)
			}
		})
	}
}

// TestRoleIsDroppedAfterTheDatabase: a role made by Target.Role can log in
// and own objects in the test's database, and is gone from the server
// once the test has ended. A role whose DSN user may not create roles
// skips the test that asks for one.
func TestRoleIsDroppedAfterTheDatabase(t *testing.T) {
	tg := Target{Name: "postgres", Dialect: "postgres"}
	if tg.External() {
		t.Skipf("LOUD: testdb: SKIPPING: this test reads the roles of the private PostgreSQL server, but %s points the tests at another",
			PostgresDSNEnv)
	}
	var name, skipped string
	var nested *testing.T
	t.Run("makes a role", func(t *testing.T) {
		role := tg.Role(t)
		name = role.Name
		driver, dsn := tg.OpenDSN(t)
		admin, err := dbopen.Open(driver, dsn, quiet)
		if err != nil {
			t.Fatal(err)
		}
		adminDB, _ := admin.DB()
		defer adminDB.Close()
		if err := admin.Exec(`GRANT ALL ON SCHEMA public TO "` + role.Name + `"`).Error; err != nil {
			t.Fatal(err)
		}
		roleDSN, err := role.DSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db, err := dbopen.Open(driver, roleDSN, quiet)
		if err != nil {
			t.Fatal(err)
		}
		sqlDB, _ := db.DB()
		defer sqlDB.Close()
		var user string
		if err := db.Raw("SELECT current_user").Scan(&user).Error; err != nil || user != role.Name {
			t.Fatalf("connected as %q (%v), want %s", user, err, role.Name)
		}
		// An object the role owns: the role can only be dropped after
		// the database that holds it.
		if err := db.Exec("CREATE TABLE owned (id int)").Error; err != nil {
			t.Fatal(err)
		}

		// The role has neither SUPERUSER nor CREATEROLE: a run whose DSN
		// names it cannot make roles, and skips.
		// The skip is expected here: its message is checked, not
		// printed, so that it is no loud line in the summary.
		t.Setenv(PostgresDSNEnv, roleDSN)
		t.Run("as a role that may not make roles", func(t *testing.T) {
			nested = t
			tg.Role(&quietSkip{TB: t, msg: &skipped})
			t.Error("Role did not skip")
		})
	})
	if nested == nil || !nested.Skipped() {
		t.Error("Role did not skip a test whose DSN's user may not create roles")
	} else if !strings.Contains(skipped, "LOUD:") || !strings.Contains(skipped, "CREATEROLE") || !strings.Contains(skipped, PostgresDSNEnv) {
		t.Errorf("Role skipped with %q, want the marker, the missing right and the variable", skipped)
	}
	if name == "" {
		t.Fatal("no role was made")
	}
	admin, err := tg.sharedServer(t).adminPool()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the role %s is still on the server after the test ended", name)
	}
}

// quietSkip is a testing.TB whose skips end the test without logging
// their message, which is kept in msg instead.
type quietSkip struct {
	testing.TB
	msg *string
}

func (q *quietSkip) Skip(args ...any) {
	*q.msg = fmt.Sprint(args...)
	q.SkipNow()
}

func (q *quietSkip) Skipf(format string, args ...any) {
	*q.msg = fmt.Sprintf(format, args...)
	q.SkipNow()
}
