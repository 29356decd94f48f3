package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
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

// plantedDSNs are the forms of DSN with the password "S3cret/PW@x:y", for
// tests that look for it in what is printed.
var plantedDSNs = []struct{ form, dsn string }{
	{"postgres URL", "postgres://alice:S3cret%2FPW%40x%3Ay@db.example:5432/app?sslmode=disable"},
	{"postgres URL, unescaped", "postgresql://alice:S3cret/PW@x:y@db.example/app"},
	{"key=value", "host=db.example port=5432 user=alice password=S3cret/PW@x:y dbname=app"},
	{"key=value, quoted", "host=db.example user=alice password='S3cret/PW@x:y' dbname=app"},
	{"mysql", "alice:S3cret/PW@x:y@tcp(db.example:3306)/app?parseTime=true"},
	{"mysql without a database", "alice:S3cret/PW@x:y@tcp(db.example:3306)"},
	{"sqlserver URL", "sqlserver://alice:S3cret%2FPW%40x%3Ay@db.example:1433?database=app"},
	{"sqlserver ADO", "server=db.example;user id=alice;password=S3cret/PW@x:y;database=app"},
}

// TestDSNWhateverTheDriver: a DSN's password is replaced by its shape,
// whichever driver it is given to, SQLite's included.
func TestDSNWhateverTheDriver(t *testing.T) {
	for _, driver := range []string{"sqlite", "sqlite-pure", "postgres", "mysql", "sqlserver", ""} {
		for _, p := range plantedDSNs {
			got := DSN(driver, p.dsn)
			if strings.Contains(got, "S3cret") || !strings.Contains(got, Redacted) {
				t.Errorf("DSN(%q, %s %q) = %q: want the password replaced", driver, p.form, p.dsn, got)
			}
			if !strings.Contains(got, "alice") || !strings.Contains(got, "db.example") {
				t.Errorf("DSN(%q, %s %q) = %q: want the user and the host kept", driver, p.form, p.dsn, got)
			}
		}
	}
}

// TestSQLiteDSNsKept: a SQLite path or file: URI is printed as it is,
// even with the characters of user information in it.
func TestSQLiteDSNsKept(t *testing.T) {
	for _, driver := range []string{"sqlite", "sqlite-pure", "postgres", "sqlserver"} {
		for _, dsn := range []string{
			"leasehold-sample.db",
			"./data/a:b@c/x.db",
			"/srv/db@prod:2/x.db",
			"file:/tmp/a@b:c/x.db?_pragma=busy_timeout(5000)",
			"file:///tmp/x.db?mode=ro",
		} {
			if got := DSN(driver, dsn); got != dsn {
				t.Errorf("DSN(%q, %q) = %q, want it unchanged", driver, dsn, got)
			}
			if got := Message(driver, dsn, "open "+dsn+": failed"); got != "open "+dsn+": failed" {
				t.Errorf("Message(%q, %q) changed the message: %q", driver, dsn, got)
			}
		}
	}
	if got := DSN("sqlite", "file:x.db?_auth_user=u&_auth_pass=S3cret&_key=K3y"); strings.Contains(got, "S3cret") || strings.Contains(got, "K3y") {
		t.Errorf("a SQLite URI's password parameters are kept: %q", got)
	}
}

// TestMessageWhateverTheDriver: a message quoting the password, as it is
// written, decoded, or escaped in a JSON log line, keeps none of it.
func TestMessageWhateverTheDriver(t *testing.T) {
	const pw = `S3cret/PW@x:y`
	for _, driver := range []string{"sqlite", "sqlite-pure", "postgres", "mysql", "sqlserver"} {
		for _, p := range plantedDSNs {
			line, err := json.Marshal(map[string]string{"error": "password " + pw + " refused"})
			if err != nil {
				t.Fatal(err)
			}
			msg := "open " + p.dsn + ": no such file; password " + pw + " " + string(line)
			got := Message(driver, p.dsn, msg)
			if strings.Contains(got, "S3cret") {
				t.Errorf("Message(%q, %s) = %q still holds the password", driver, p.form, got)
			}
		}
	}
	const quoted = `pa"ss\word<&>`
	dsn := "postgres://alice:" + url.QueryEscape(quoted) + "@db.example/app"
	for _, escapeHTML := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if err := enc.Encode(map[string]string{"error": "login failed with " + quoted}); err != nil {
			t.Fatal(err)
		}
		if got := Message("sqlite-pure", dsn, b.String()); strings.Contains(got, `pa\"ss`) || strings.Contains(got, "word") {
			t.Errorf("Message of a JSON line (HTML escaped: %v) = %q still holds the password", escapeHTML, got)
		}
	}
}

func TestServerDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn, driver string
		server      bool
	}{
		{"postgres://alice:pw@db.example/app", "postgres", true},
		{"POSTGRESQL://db.example/app", "postgres", true},
		{"mysql://alice:pw@db.example/app", "mysql", true},
		{"sqlserver://sa:pw@db.example?database=app", "sqlserver", true},
		{"redis://db.example", "", true},
		{"host=db.example user=alice password=pw dbname=app", "postgres", true},
		{"  dbname=app sslmode=disable", "postgres", true},
		{"host=/var/run/postgresql dbname=app", "postgres", true},
		{"server=db.example;user id=sa;password=pw;database=app", "sqlserver", true},
		{"Data Source=db.example;Initial Catalog=app", "sqlserver", true},
		{"alice:pw@tcp(db.example:3306)/app?parseTime=true", "mysql", true},
		{"alice:p/w@tcp(db.example:3306)/app", "mysql", true},
		{"alice@unix(/run/mysqld/mysqld.sock)/app", "mysql", true},
		{"tcp(127.0.0.1:3306)/app", "mysql", true},
		{"alice:pw@/app", "mysql", true},
		{"leasehold-sample.db", "", false},
		{"./leasehold-sample.db", "", false},
		{"/tmp/leasehold-demo-1/demo.db", "", false},
		{"file:/tmp/a.db?_pragma=busy_timeout(5000)", "", false},
		{"file:///tmp/a.db", "", false},
		{"file:alice:pw@tcp(h)/app", "", false},
		{":memory:", "", false},
		{"me@home/x.db", "", false},
		{"./data/a:b@c/x.db", "", false},
		{"a=b.db", "", false},
		{"", "", false},
	} {
		driver, ok := ServerDSN(tc.dsn)
		if ok != tc.server || driver != tc.driver {
			t.Errorf("ServerDSN(%q) = %q, %v; want %q, %v", tc.dsn, driver, ok, tc.driver, tc.server)
		}
	}
}
