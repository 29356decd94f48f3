// Package redact takes the passwords out of data source names and of
// the error messages that may quote them, before either is printed.
package redact

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/leasehold/leasehold/internal/dbopen"
)

// Redacted replaces every password.
const Redacted = "xxxxx"

// secretPair matches a key=value setting whose key names a password, in
// the key=value DSN form (PostgreSQL "password=…", SQL Server
// "password=…;", "pwd=…") and in URL query strings ("?password=…&").
// The value may be single- or double-quoted.
var secretPair = regexp.MustCompile(`(?i)(^|[\s;&?])((?:password|passwd|pwd|pass)\s*=\s*)('(?:[^'\\]|\\.)*'|"[^"]*"|[^\s;&]*)`)

// DSN returns dsn with its password replaced, for printing. It knows
// the forms the supported drivers take:
//
//   - URL: postgres://user:secret@host/db?sslmode=disable,
//     sqlserver://user:secret@host?database=db;
//   - key=value: host=h user=u password=secret dbname=d (PostgreSQL),
//     server=h;user id=u;password=secret (SQL Server);
//   - MySQL: user:secret@tcp(host:3306)/db?parseTime=true.
//
// SQLite DSNs carry no secret and are returned unchanged.
func DSN(driver, dsn string) string {
	switch driver {
	case dbopen.SQLite, dbopen.SQLitePure:
		return dsn
	case dbopen.MySQL:
		return redactPairs(redactMySQL(dsn))
	}
	if strings.Contains(dsn, "://") {
		return redactURL(dsn)
	}
	return redactPairs(dsn)
}

// redactPairs replaces the values of password-like key=value settings.
func redactPairs(s string) string {
	return secretPair.ReplaceAllString(s, "${1}${2}"+Redacted)
}

// redactURL replaces the password of a URL's user information and of its
// query parameters. A URL that does not parse has everything between the
// scheme's "://" and the last '@' of the authority replaced after the
// first ':'.
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err == nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Redacted)
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
		rest = rest[:colon+1] + Redacted + rest[at:]
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
	return dsn[:colon+1] + Redacted + dsn[at:]
}

// Message returns msg, an error message about the database at dsn, with
// dsn replaced by its redacted form and every password it carries
// replaced wherever else msg quotes it (a driver may quote part of its
// DSN), as it is written in dsn and URL-decoded.
func Message(driver, dsn, msg string) string {
	if dsn != "" {
		msg = strings.ReplaceAll(msg, dsn, DSN(driver, dsn))
	}
	for _, s := range secrets(driver, dsn) {
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			if form != "" && form != Redacted {
				msg = strings.ReplaceAll(msg, form, Redacted)
			}
		}
	}
	return msg
}

// secrets returns the passwords in dsn, in every form DSN replaces.
func secrets(driver, dsn string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		out = append(out, s)
		if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
			out = append(out, s[1:len(s)-1])
		}
		if u, err := url.QueryUnescape(s); err == nil && u != s {
			out = append(out, u)
		}
	}
	switch driver {
	case dbopen.SQLite, dbopen.SQLitePure:
		return nil
	case dbopen.MySQL:
		if slash := strings.LastIndex(dsn, "/"); slash > 0 {
			if at := strings.LastIndex(dsn[:slash], "@"); at >= 0 {
				if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
					add(dsn[colon+1 : at])
				}
			}
		}
	}
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+len("://"):]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				add(rest[colon+1 : at])
			}
		}
	}
	for _, m := range secretPair.FindAllStringSubmatch(dsn, -1) {
		add(m[3])
	}
	return out
}
