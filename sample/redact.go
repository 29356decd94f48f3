package main

import (
	"net/url"
	"regexp"
	"strings"
)

// redacted replaces every password in a logged DSN.
const redacted = "xxxxx"

// secretPair matches a key=value setting whose key names a password, in
// the key=value DSN form (PostgreSQL "password=…", SQL Server
// "password=…;", "pwd=…") and in URL query strings ("?password=…&").
// The value may be single- or double-quoted.
var secretPair = regexp.MustCompile(`(?i)(^|[\s;&?])((?:password|passwd|pwd|pass)\s*=\s*)('(?:[^'\\]|\\.)*'|"[^"]*"|[^\s;&]*)`)

// redactDSN returns dsn with its password replaced, for logging. It knows
// the forms the supported drivers take:
//
//   - URL: postgres://user:secret@host/db?sslmode=disable,
//     sqlserver://user:secret@host?database=db;
//   - key=value: host=h user=u password=secret dbname=d (PostgreSQL),
//     server=h;user id=u;password=secret (SQL Server);
//   - MySQL: user:secret@tcp(host:3306)/db?parseTime=true.
//
// SQLite DSNs carry no secret and are returned unchanged.
func redactDSN(driver, dsn string) string {
	switch driver {
	case driverSQLite, driverSQLitePure:
		return dsn
	case driverMySQL:
		return redactPairs(redactMySQL(dsn))
	}
	if strings.Contains(dsn, "://") {
		return redactURL(dsn)
	}
	return redactPairs(dsn)
}

// redactPairs replaces the values of password-like key=value settings.
func redactPairs(s string) string {
	return secretPair.ReplaceAllString(s, "${1}${2}"+redacted)
}

// redactURL replaces the password of a URL's user information and of its
// query parameters. A URL that does not parse has everything between the
// scheme's "://" and the last '@' of the authority replaced after the
// first ':'.
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err == nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		u.RawQuery = redactPairs(u.RawQuery)
		return u.String()
	}
	i := strings.Index(dsn, "://") + len("://")
	rest := dsn[i:]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		// The '@' may be in an unescaped password containing '/'.
		at = strings.LastIndex(rest, "@")
	}
	if at < 0 {
		return redactPairs(dsn)
	}
	if colon := strings.Index(rest[:at], ":"); colon >= 0 {
		rest = rest[:colon+1] + redacted + rest[at:]
	}
	return redactPairs(dsn[:i] + rest)
}

// redactMySQL replaces the password of a go-sql-driver/mysql DSN,
// [user[:password]@][net[(addr)]]/dbname[?params], finding it the way the
// driver does: the last '/', the last '@' before it, and the first ':'
// before that.
func redactMySQL(dsn string) string {
	slash := strings.LastIndex(dsn, "/")
	if slash <= 0 {
		return dsn
	}
	at := strings.LastIndex(dsn[:slash], "@")
	if at < 0 {
		return dsn
	}
	colon := strings.Index(dsn[:at], ":")
	if colon < 0 {
		return dsn
	}
	return dsn[:colon+1] + redacted + dsn[at:]
}
