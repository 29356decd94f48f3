package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasehold/leasehold/internal/redact"
)

// Role is a PostgreSQL login role made for one test by Target.Role, and
// dropped when the test ends.
type Role struct {
	// Name is the role's name, "r_<test>_<run>_<n>": a plain lower-case
	// identifier, unique on the server, that needs no quoting.
	Name     string
	password string
}

// Role creates a login role of its own for t on the PostgreSQL server
// behind tg, the private one or the one PostgresDSNEnv names, for a test
// that needs to connect as a role with fewer rights than the DSN's. The
// role has no attribute beyond LOGIN and a random password; the test
// grants it what it needs in its own database. It is dropped when t ends.
//
// A role belongs to the whole server, not to the test's database, so Role
// must be called before the test's databases are made (tg.OpenDSN, Open):
// cleanups run last-registered first, and the role can be dropped only
// once no database holds objects or privileges of it.
//
// When the DSN's user may not create roles (it has neither SUPERUSER nor
// CREATEROLE), Role skips the test, loudly. It fails the test for a target
// other than PostgreSQL.
func (tg Target) Role(t testing.TB) Role {
	t.Helper()
	if d := dialectOf(tg.Dialect); d == nil || !d.roles {
		t.Fatalf("testdb: Role: target %q is not PostgreSQL; only PostgreSQL tests make roles", tg.Name)
	}
	adm := tg.roleAdmin(t)
	admin, err := adm.pool()
	if err != nil {
		t.Fatal(adm.errorf("testdb: Role: %v", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var who string
	var may bool
	err = admin.QueryRowContext(ctx,
		"SELECT current_user, rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user").Scan(&who, &may)
	if err != nil {
		t.Fatal(adm.errorf("testdb: read the attributes of the user of %s: %v", adm.where, err))
	}
	if !may {
		t.Skipf("LOUD: testdb: SKIPPING: this test connects as a role of its own, but the user %q of %s may not create roles "+
			"(it has neither SUPERUSER nor CREATEROLE)", who, adm.where)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testdb: Role: a random password: %v", err)
	}
	r := Role{Name: "r" + strings.TrimPrefix(externalName(t), "t"), password: hex.EncodeToString(b)}
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(`CREATE ROLE "%s" LOGIN PASSWORD '%s'`, r.Name, r.password)); err != nil {
		t.Fatal(adm.errorf("testdb: create role %s on %s: %v", r.Name, adm.where, err))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := adm.pool()
		if err == nil {
			_, err = db.ExecContext(ctx, fmt.Sprintf(`DROP ROLE IF EXISTS "%s"`, r.Name))
		}
		if err != nil {
			t.Error(adm.errorf("testdb: drop role %s on %s; it is left behind (if a database of the test still holds "+
				"objects or privileges of it, the test made the database before calling Role): %v", r.Name, adm.where, err))
		}
	})
	return r
}

// DSN returns dsn, a PostgreSQL DSN as tg.OpenDSN returns it (key=value or
// URL form), with the role as its user and the role's password. Every
// other setting is kept.
func (r Role) DSN(dsn string) (string, error) {
	out, err := postgresWith(dsn, pgSettings{user: r.Name, password: r.password})
	if err != nil {
		return "", errors.New(redact.Message(postgresDialect.driver, dsn, "testdb: connect as role "+r.Name+": "+err.Error()))
	}
	cfg, err := pgconn.ParseConfig(out)
	if err != nil || cfg.User != r.Name || cfg.Password != r.password {
		return "", fmt.Errorf("testdb: connect as role %s: the rewritten DSN %s does not name the role and its password",
			r.Name, redact.DSN(postgresDialect.driver, out))
	}
	return out, nil
}

// roleAdmin is how Role reaches tg's server: the external server's admin
// pool, or the shared private server's.
type roleAdmin struct {
	where string                  // the server, for messages; any DSN in it redacted
	dsn   string                  // a DSN whose password messages must not quote; "" for none
	pool  func() (*sql.DB, error) // the admin pool, looked up at each use: a private server may have been restarted
}

// errorf makes an error whose message quotes no part of the DSN's
// password.
func (a *roleAdmin) errorf(format string, args ...any) error {
	return errors.New(redact.Message(postgresDialect.driver, a.dsn, fmt.Sprintf(format, args...)))
}

// roleAdmin returns the way to tg's server, skipping or failing t as
// OpenDSN does when there is none.
func (tg Target) roleAdmin(t testing.TB) *roleAdmin {
	t.Helper()
	if es := externalFor(tg.Dialect); es != nil {
		return &roleAdmin{where: es.env() + "=" + es.redacted(), dsn: es.dsn, pool: es.ready}
	}
	srv := tg.sharedServer(t)
	return &roleAdmin{where: "the private PostgreSQL server", pool: func() (*sql.DB, error) {
		db, err := srv.adminPool()
		if err != nil {
			return nil, fmt.Errorf("the private PostgreSQL server: %w", err)
		}
		return db, nil
	}}
}
