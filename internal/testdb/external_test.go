package testdb

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/microsoft/go-mssqldb/msdsn"
)

// secret is the password in every DSN below. It holds characters that
// each DSN form has to escape or quote somehow.
const secret = `p@ss:w/rd;x`

func TestWithDatabasePostgres(t *testing.T) {
	escaped := url.QueryEscape(secret)
	cases := []struct{ name, dsn string }{
		{"keyvalue", `host=db.example port=5432 user=app password='p@ss:w/rd;x' dbname=app sslmode=require`},
		{"keyvalue database key", `host=db.example user=app database=app password='p@ss:w/rd;x'`},
		{"keyvalue no dbname", `host=db.example user=app password='p@ss:w/rd;x' `},
		{"keyvalue quoted dbname", `host=db.example dbname = 'my app' user=app password='p@ss:w/rd;x'`},
		{"keyvalue escaped quote", `host=db.example password='it\'s p@ss:w/rd;x' dbname=app user=app`},
		{"url", "postgres://app:" + escaped + "@db.example:5432/app?sslmode=require&application_name=t"},
		{"url postgresql no path", "postgresql://app:" + escaped + "@db.example"},
		{"url dbname param", "postgres://app:" + escaped + "@db.example/app?dbname=other&sslmode=disable"},
		{"url two hosts", "postgres://app:" + escaped + "@h1:5432,h2:5433/app?target_session_attrs=read-write"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, err := pgconn.ParseConfig(tc.dsn)
			if err != nil {
				t.Fatalf("the case's DSN does not parse: %v", err)
			}
			got, err := withDatabase("postgres", tc.dsn, "t_case_1")
			if err != nil {
				t.Fatal(err)
			}
			after, err := pgconn.ParseConfig(got)
			if err != nil {
				t.Fatalf("the rewritten DSN does not parse: %v", err)
			}
			if after.Database != "t_case_1" {
				t.Errorf("database %q, want t_case_1", after.Database)
			}
			if after.Password != before.Password || !strings.Contains(after.Password, secret) {
				t.Errorf("password %q, want %q", after.Password, before.Password)
			}
			if after.Host != before.Host || after.Port != before.Port || after.User != before.User ||
				len(after.Fallbacks) != len(before.Fallbacks) || after.TLSConfig == nil != (before.TLSConfig == nil) {
				t.Errorf("connection settings changed: host %s:%d user %s fallbacks %d, want %s:%d %s %d",
					after.Host, after.Port, after.User, len(after.Fallbacks), before.Host, before.Port, before.User, len(before.Fallbacks))
			}
			for k, v := range before.RuntimeParams {
				if after.RuntimeParams[k] != v {
					t.Errorf("runtime parameter %s = %q, want %q", k, after.RuntimeParams[k], v)
				}
			}
		})
	}
}

func TestWithDatabaseMySQL(t *testing.T) {
	cases := []string{
		"app:" + secret + "@tcp(db.example:3306)/app?tls=skip-verify&timeout=5s&charset=utf8mb4",
		"app:" + secret + "@tcp(db.example:3306)/",
		"app:" + secret + "@tcp(db.example)/app?parseTime=false&loc=Local",
		"app:" + secret + "@unix(/run/mysqld/mysqld.sock)/app",
	}
	for _, dsn := range cases {
		before, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("the case's DSN does not parse: %v", err)
		}
		got, err := withDatabase("mysql", dsn, "t_case_1")
		if err != nil {
			t.Fatal(err)
		}
		after, err := mysql.ParseDSN(got)
		if err != nil {
			t.Fatalf("the rewritten DSN does not parse: %v", err)
		}
		if after.DBName != "t_case_1" || !after.ParseTime || after.Loc != time.UTC {
			t.Errorf("database %q parseTime %v loc %v, want t_case_1, true, UTC", after.DBName, after.ParseTime, after.Loc)
		}
		if after.Passwd != secret || after.User != before.User || after.Net != before.Net || after.Addr != before.Addr ||
			after.TLSConfig != before.TLSConfig || after.Timeout != before.Timeout {
			t.Errorf("settings changed: %+v, want those of %+v", after, before)
		}
		for k, v := range before.Params {
			if after.Params[k] != v {
				t.Errorf("parameter %s = %q, want %q", k, after.Params[k], v)
			}
		}
	}
}

func TestWithDatabaseSQLServer(t *testing.T) {
	cases := []string{
		"sqlserver://app:" + url.QueryEscape(secret) + "@db.example:1433?database=app&encrypt=true",
		"sqlserver://app:" + url.QueryEscape(secret) + "@db.example/SQLEXPRESS?Database=app",
		"sqlserver://app:" + url.QueryEscape(secret) + "@db.example",
		"server=db.example,1433;user id=app;password=p@ss:w/rd=x;Initial Catalog=app;encrypt=disable",
		"server=db.example;user id=app;password=p@ss:w/rd=x;",
	}
	for _, dsn := range cases {
		before, err := msdsn.Parse(dsn)
		if err != nil {
			t.Fatalf("the case's DSN does not parse: %v", err)
		}
		got, err := withDatabase("sqlserver", dsn, "t_case_1")
		if err != nil {
			t.Fatal(err)
		}
		after, err := msdsn.Parse(got)
		if err != nil {
			t.Fatalf("the rewritten DSN does not parse: %v", err)
		}
		if after.Database != "t_case_1" {
			t.Errorf("database %q, want t_case_1", after.Database)
		}
		if after.Password != before.Password || after.User != before.User || after.Host != before.Host ||
			after.Port != before.Port || after.Instance != before.Instance || after.Encryption != before.Encryption {
			t.Errorf("settings changed: %s@%s:%d\\%s, want %s@%s:%d\\%s",
				after.User, after.Host, after.Port, after.Instance, before.User, before.Host, before.Port, before.Instance)
		}
	}
}

// TestWithDatabaseErrorsKeepThePassword: a DSN the driver cannot read
// fails ready with an error that names the variable and does not quote
// the password, even where the parser's own error would.
func TestWithDatabaseErrorsKeepThePassword(t *testing.T) {
	const pw = "s3cr3tPa55"
	cases := []struct{ dialect, dsn string }{
		{"postgres", "postgres://app:" + pw + "@db.example:notaport/app"},
		{"postgres", "host=db.example password='" + pw},
		{"mysql", "app:" + pw + "@tcp(db.example:3306)app"},
		{"mysql", "app:" + pw + "@tcp(db.example:3306/app"},
		{"sqlserver", "sqlserver://app:" + pw + "@db.example:bad%zz"},
		{"sqlserver", "odbc:server=db.example;pwd=" + pw},
	}
	for _, tc := range cases {
		if _, err := withDatabase(tc.dialect, tc.dsn, "t_x"); err == nil {
			t.Errorf("%s: withDatabase accepted %s", tc.dialect, tc.dsn)
		} else if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: withDatabase's error quotes the password: %v", tc.dialect, err)
		}
		es := &externalServer{dialect: dialectOf(tc.dialect), dsn: tc.dsn}
		_, err := es.ready()
		if err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), es.env()) {
			t.Errorf("%s: ready = %v, want an error that names %s and does not quote the password", tc.dialect, err, es.env())
		}
	}
	if _, err := withDatabase("postgres", "host=h", "bad name"); err == nil {
		t.Error("a database name that is not an identifier was accepted")
	}
}

func TestExternalName(t *testing.T) {
	a, b := externalName(t), externalName(t)
	if a == b || !validName.MatchString(a) || !strings.Contains(a, "_"+runToken()+"_") {
		t.Errorf("externalName gave %q and %q", a, b)
	}
	long := strings.Repeat("x", 200)
	t.Run(long, func(t *testing.T) {
		if n := externalName(t); !validName.MatchString(n) {
			t.Errorf("externalName of a long test name is %q (%d characters)", n, len(n))
		}
	})
}

// TestExternalUnreachable: a server that accepts connections but never
// answers, and one that refuses them, make ready fail within its bound
// with a message that names the variable and hides the password.
func TestExternalUnreachable(t *testing.T) {
	saved := externalConnectTimeout
	externalConnectTimeout = 2 * time.Second
	defer func() { externalConnectTimeout = saved }()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		_ = silent.Close()
		for c := range accepted {
			_ = c.Close()
		}
	}()
	refused, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	silentAddr := silent.Addr().(*net.TCPAddr)
	cases := []struct{ dialect, dsn string }{
		{"postgres", "postgres://app:" + url.QueryEscape(secret) + "@" + silentAddr.String() + "/app?sslmode=disable"},
		{"postgres", "host=127.0.0.1 port=" + strconv.Itoa(refused) + " user=app password='" + secret + "' sslmode=disable"},
		{"mysql", "app:" + secret + "@tcp(" + silentAddr.String() + ")/app"},
		{"sqlserver", "sqlserver://app:" + url.QueryEscape(secret) + "@" + silentAddr.String() + "?encrypt=disable"},
	}
	for _, tc := range cases {
		es := &externalServer{dialect: dialectOf(tc.dialect), dsn: tc.dsn}
		began := time.Now()
		_, err := es.ready()
		took := time.Since(began)
		if err == nil {
			t.Errorf("%s: ready succeeded against nothing", tc.dialect)
			continue
		}
		if took > externalConnectTimeout+5*time.Second {
			t.Errorf("%s: ready took %s, beyond its %s bound", tc.dialect, took, externalConnectTimeout)
		}
		msg := err.Error()
		if strings.Contains(msg, "w/rd") || !strings.Contains(msg, es.env()) {
			t.Errorf("%s: message quotes the password or does not name %s: %s", tc.dialect, es.env(), msg)
		}
		// The result is kept: later tests fail at once.
		if _, again := es.ready(); again == nil || again.Error() != msg {
			t.Errorf("%s: second ready = %v, want the first error", tc.dialect, again)
		}
	}
}
