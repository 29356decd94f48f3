// Package redact takes the passwords out of data source names and of
// the messages that may quote them, before either is printed, and tells
// the DSN of a database server from a SQLite file name.
//
// It goes by the DSN's shape rather than by the driver it is meant for:
// an operator may give a server's DSN to a SQLite driver by mistake, and
// its password must not be printed then either.
//
// The sample keeps a copy of this file (sample/redact.go, with the
// exported names unexported), since it imports only leasehold's public
// packages; TestSampleCopy keeps the two the same.
package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces every password.
const Redacted = "xxxxx"

// mysqlDriver is the driver name of go-sql-driver/mysql, whose DSNs are
// read the way the driver reads them whatever their shape.
const mysqlDriver = "mysql"

// secretPair matches a key=value setting whose key names a password or a
// key, in the key=value DSN form (PostgreSQL "password=…", SQL Server
// "password=…;", "pwd=…") and in URL query strings ("?password=…&",
// SQLite's "_auth_pass=…" and "_key=…"). The value may be single- or
// double-quoted.
var secretPair = regexp.MustCompile(`(?i)(^|[\s;&?])((?:password|passwd|pwd|pass|_auth_pass|_pragma_key|_key)\s*=\s*)('(?:[^'\\]|\\.)*'|"[^"]*"|[^\s;&]*)`)

// DSN returns dsn with its passwords replaced, for printing. It knows the
// forms the supported drivers take, whichever driver dsn is given to:
//
//   - URL: postgres://user:secret@host/db?sslmode=disable,
//     sqlserver://user:secret@host?database=db;
//   - key=value: host=h user=u password=secret dbname=d (PostgreSQL),
//     server=h;user id=u;password=secret (SQL Server);
//   - MySQL: user:secret@tcp(host:3306)/db?parseTime=true. With the
//     driver "mysql" the password is found the way the driver finds it;
//     with another, only when the user name before it has no '/', '\\',
//     '=', ';' or space, so that a file path is left alone;
//   - SQLite: a "file:" URI or a path, which has no password unless a
//     parameter names one (_auth_pass=, _key=).
func DSN(driver, dsn string) string {
	switch {
	case isFileURI(dsn):
		return redactPairs(dsn)
	case strings.Contains(dsn, "://"):
		return redactURL(dsn)
	}
	if from, to, ok := mysqlPassword(driver, dsn); ok {
		dsn = dsn[:from] + Redacted + dsn[to:]
	}
	return redactPairs(dsn)
}

// isFileURI reports whether dsn is a SQLite "file:" URI.
func isFileURI(dsn string) bool {
	return len(dsn) >= len("file:") && strings.EqualFold(dsn[:len("file:")], "file:")
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

// mysqlPassword finds the password of a go-sql-driver/mysql DSN,
// [user[:password]@][net[(addr)]]/dbname[?params], the way the driver
// does: the last '/', the last '@' before it, and the first ':' before
// that. Where no '@' comes before the last '/' (the driver would refuse
// the DSN, but it may still be printed), the last '@' is taken. It returns the password's bounds
// in dsn. For a driver other than mysql it finds none when the user name
// has a character no MySQL user name in a DSN has but a file path may.
func mysqlPassword(driver, dsn string) (from, to int, ok bool) {
	end := strings.LastIndex(dsn, "/")
	if end < 0 {
		end = len(dsn)
	}
	at := strings.LastIndex(dsn[:end], "@")
	if at < 0 {
		at = strings.LastIndex(dsn, "@")
	}
	if at < 0 {
		return 0, 0, false
	}
	colon := strings.Index(dsn[:at], ":")
	if colon < 0 {
		return 0, 0, false
	}
	if driver != mysqlDriver && strings.ContainsAny(dsn[:colon], "/\\=; \t") {
		return 0, 0, false
	}
	return colon + 1, at, true
}

// Message returns msg, a message about the database at dsn, with dsn
// replaced by its redacted form and every password it carries replaced
// wherever else msg quotes it (a driver may quote part of its DSN): as
// it is written in dsn, URL-decoded, URL-encoded and as a JSON string
// quotes it (a JSON log line).
func Message(driver, dsn, msg string) string {
	if dsn != "" {
		msg = strings.ReplaceAll(msg, dsn, DSN(driver, dsn))
	}
	for _, s := range secrets(driver, dsn) {
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s), jsonString(s, false), jsonString(s, true)} {
			if form != "" && form != Redacted {
				msg = strings.ReplaceAll(msg, form, Redacted)
			}
		}
	}
	return msg
}

// jsonString returns s as a JSON string quotes it, without the quotes,
// with or without HTML characters escaped.
func jsonString(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		return s
	}
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`)
}

// secrets returns the passwords in dsn, in every form DSN replaces.
func secrets(driver, dsn string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" || s == Redacted {
			return
		}
		out = append(out, s)
		if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
			out = append(out, s[1:len(s)-1])
		}
		if u, err := url.QueryUnescape(s); err == nil && u != s {
			out = append(out, u)
		}
		if u, err := url.PathUnescape(s); err == nil && u != s {
			out = append(out, u)
		}
	}
	switch {
	case isFileURI(dsn):
	case strings.Contains(dsn, "://"):
		rest := dsn[strings.Index(dsn, "://")+len("://"):]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				add(rest[colon+1 : at])
			}
		}
		if u, err := url.Parse(dsn); err == nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
	default:
		if from, to, ok := mysqlPassword(driver, dsn); ok {
			add(dsn[from:to])
		}
	}
	for _, m := range secretPair.FindAllStringSubmatch(dsn, -1) {
		add(m[3])
	}
	return out
}

// serverSchemes maps the URL schemes of server DSNs to their driver.
var serverSchemes = map[string]string{
	"postgres":   "postgres",
	"postgresql": "postgres",
	"mysql":      mysqlDriver,
	"mariadb":    mysqlDriver,
	"sqlserver":  "sqlserver",
	"mssql":      "sqlserver",
}

// urlScheme matches a URL scheme (RFC 3986).
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// mysqlNet matches the net(addr) part of a MySQL DSN: tcp(host:3306),
// unix(/run/mysqld/mysqld.sock).
var mysqlNet = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*\(.*\)$`)

// mysqlBareNet matches the net(addr) part of a MySQL DSN without user
// information, which must name a network the driver knows.
var mysqlBareNet = regexp.MustCompile(`^(?:tcp|tcp4|tcp6|unix)\(.*\)$`)

// firstSetting matches a DSN that begins with a key=value setting.
var firstSetting = regexp.MustCompile(`^\s*[A-Za-z][A-Za-z0-9_ ]*=`)

// serverKey matches a key=value setting that names a server, a database
// or a login: PostgreSQL's and SQL Server's.
var serverKey = regexp.MustCompile(`(?i)(?:^|[\s;])(?:host|hostaddr|port|dbname|user|password|sslmode|service|server|data source|address|addr|database|initial catalog|uid|user id|pwd)\s*=`)

// sqlserverKey matches a key=value setting only SQL Server's DSNs have.
var sqlserverKey = regexp.MustCompile(`(?i)(?:^|[\s;])(?:server|data source|address|addr|initial catalog|uid|user id|pwd)\s*=`)

// ServerDSN reports whether dsn is plainly the DSN of a database server,
// not a SQLite file name or "file:" URI, and the driver its form belongs
// to: "postgres", "mysql" or "sqlserver", or "" for a URL of a scheme no
// supported driver takes. Plainly a server's are
//
//   - a URL other than a "file:" one: postgres://, postgresql://,
//     mysql://, sqlserver://, …;
//   - key=value settings naming a host, a database or a login:
//     host=h dbname=d (PostgreSQL), server=h;database=d (SQL Server);
//   - a MySQL DSN with a network address: user:secret@tcp(host:3306)/db,
//     user@unix(/run/mysqld/mysqld.sock)/db, tcp(host)/db, or with user
//     and password: user:secret@/db.
func ServerDSN(dsn string) (driver string, ok bool) {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" || isFileURI(dsn) {
		return "", false
	}
	if scheme, _, found := strings.Cut(dsn, "://"); found && urlScheme.MatchString(scheme) {
		return serverSchemes[strings.ToLower(scheme)], true
	}
	if firstSetting.MatchString(dsn) && serverKey.MatchString(dsn) {
		if sqlserverKey.MatchString(dsn) {
			return "sqlserver", true
		}
		return "postgres", true
	}
	end := strings.LastIndex(dsn, "/")
	if end < 0 {
		return "", false
	}
	at := strings.LastIndex(dsn[:end], "@")
	if at < 0 {
		if mysqlBareNet.MatchString(dsn[:end]) {
			return mysqlDriver, true
		}
		return "", false
	}
	user, _, hasPassword := strings.Cut(dsn[:at], ":")
	if strings.ContainsAny(user, "/\\=; \t") {
		return "", false
	}
	if net := dsn[at+1 : end]; mysqlNet.MatchString(net) || (net == "" && hasPassword) {
		return mysqlDriver, true
	}
	return "", false
}
