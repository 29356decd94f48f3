package redact

import (
	"strings"
	"testing"
)

func TestDSN(t *testing.T) {
	tests := []struct {
		name, driver, dsn, want string
	}{
		{
			name:   "postgres URL",
			driver: "postgres",
			dsn:    "postgres://app:s3cr%40t@db.example:5432/orders?sslmode=disable",
			want:   "postgres://app:xxxxx@db.example:5432/orders?sslmode=disable",
		},
		{
			name:   "postgres URL with a password parameter",
			driver: "postgres",
			dsn:    "postgresql://app@db.example/orders?password=hunter2&sslmode=require",
			want:   "postgresql://app@db.example/orders?password=xxxxx&sslmode=require",
		},
		{
			name:   "postgres URL without a password",
			driver: "postgres",
			dsn:    "postgres://app@db.example/orders",
			want:   "postgres://app@db.example/orders",
		},
		{
			name:   "postgres URL that does not parse",
			driver: "postgres",
			dsn:    "postgres://app:p%zz@db.example/orders",
			want:   "postgres://app:xxxxx@db.example/orders",
		},
		{
			name:   "postgres key=value",
			driver: "postgres",
			dsn:    "host=db.example user=app password=hunter2 dbname=orders sslmode=disable",
			want:   "host=db.example user=app password=xxxxx dbname=orders sslmode=disable",
		},
		{
			name:   "postgres key=value, quoted, spaces around =",
			driver: "postgres",
			dsn:    `host=db.example password = 'hunter2 it\'s' dbname=orders`,
			want:   `host=db.example password = xxxxx dbname=orders`,
		},
		{
			name:   "postgres key=value, password first",
			driver: "postgres",
			dsn:    "password=hunter2 host=db.example",
			want:   "password=xxxxx host=db.example",
		},
		{
			name:   "sqlserver URL",
			driver: "sqlserver",
			dsn:    "sqlserver://sa:Str0ng!Pass@localhost:1433?database=orders",
			want:   "sqlserver://sa:xxxxx@localhost:1433?database=orders",
		},
		{
			name:   "sqlserver ADO",
			driver: "sqlserver",
			dsn:    "server=localhost;user id=sa;password=Str0ng!Pass;database=orders",
			want:   "server=localhost;user id=sa;password=xxxxx;database=orders",
		},
		{
			name:   "sqlserver ADO pwd",
			driver: "sqlserver",
			dsn:    "server=localhost;uid=sa;PWD=Str0ng!Pass",
			want:   "server=localhost;uid=sa;PWD=xxxxx",
		},
		{
			name:   "mysql",
			driver: "mysql",
			dsn:    "app:hunter2@tcp(127.0.0.1:3306)/orders?parseTime=true",
			want:   "app:xxxxx@tcp(127.0.0.1:3306)/orders?parseTime=true",
		},
		{
			name:   "mysql password with @ and :",
			driver: "mysql",
			dsn:    "app:p@ss:w0rd@tcp(db:3306)/orders",
			want:   "app:xxxxx@tcp(db:3306)/orders",
		},
		{
			name:   "mysql without a password",
			driver: "mysql",
			dsn:    "app@unix(/run/mysqld/mysqld.sock)/orders",
			want:   "app@unix(/run/mysqld/mysqld.sock)/orders",
		},
		{
			name:   "mysql without user information",
			driver: "mysql",
			dsn:    "/orders",
			want:   "/orders",
		},
		{
			name:   "sqlite is unchanged",
			driver: "sqlite-pure",
			dsn:    "file:/tmp/a@b:c/x.db?_pragma=busy_timeout(5000)",
			want:   "file:/tmp/a@b:c/x.db?_pragma=busy_timeout(5000)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DSN(tc.driver, tc.dsn)
			if got != tc.want {
				t.Errorf("DSN(%q, %q)\n got %q\nwant %q", tc.driver, tc.dsn, got, tc.want)
			}
			for _, secret := range []string{"hunter2", "s3cr", "Str0ng", "p@ss", "w0rd"} {
				if strings.Contains(tc.dsn, secret) && strings.Contains(got, secret) {
					t.Errorf("DSN(%q, %q) = %q still contains %q", tc.driver, tc.dsn, got, secret)
				}
			}
		})
	}
}

func TestMessage(t *testing.T) {
	tests := []struct{ driver, dsn, msg string }{
		{"postgres", "postgres://u:secret@127.0.0.1:1/db", "connect to postgres://u:secret@127.0.0.1:1/db: password secret refused"},
		{"postgres", "postgres://u:s%65cret@127.0.0.1:1/db", "failed for user u with password secret and s%65cret"},
		{"postgres", "host=h user=u password='secret' dbname=d", "bad password 'secret' or secret"},
		{"mysql", "u:secret@tcp(127.0.0.1:1)/db", "dial u:secret@tcp(127.0.0.1:1)/db; secret"},
		{"sqlserver", "server=h;user id=u;password=secret;database=d", "login failed: secret"},
	}
	for _, tc := range tests {
		got := Message(tc.driver, tc.dsn, tc.msg)
		if strings.Contains(got, "secret") || strings.Contains(got, "s%65cret") {
			t.Errorf("Message(%q, %q, %q) = %q still holds the password", tc.driver, tc.dsn, tc.msg, got)
		}
		if !strings.Contains(got, Redacted) {
			t.Errorf("Message(%q, %q, %q) = %q: nothing replaced", tc.driver, tc.dsn, tc.msg, got)
		}
	}
	if got := Message("sqlite", "file:x.db", "no such table in file:x.db"); got != "no such table in file:x.db" {
		t.Errorf("a SQLite message changed: %q", got)
	}
}
