package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"
)

// defaultSQLiteFile is the database used when neither -dsn nor
// LEASEHOLD_DSN is set: a SQLite file in the working directory.
const defaultSQLiteFile = "leasehold-sample.db"

// config is the sample's configuration, from flags with environment
// fallbacks.
type config struct {
	driver    string
	dsn       string
	logFormat string
	ttl       time.Duration
	renew     time.Duration
	retry     time.Duration
	orders    int
	workDelay time.Duration
	seedOnly  bool
	httpAddr  string
	// wakeAddr and wakeAdvertise, when either is set, select peer
	// wake-ups over UDP on PostgreSQL too (coordination.Config's
	// WakeAddress and WakeAdvertise) instead of LISTEN/NOTIFY.
	wakeAddr      string
	wakeAdvertise []string
}

// errUsage marks a configuration error: the process exits with status 2.
var errUsage = errors.New("usage")

// usageError wraps a configuration error so that errors.Is(err, errUsage).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return errUsage }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// envFlag ties a flag to the environment variable that gives its default.
type envFlag struct {
	flag, env string
}

// envFlags lists the environment fallback of each flag. A flag on the
// command line wins over its variable.
var envFlags = []envFlag{
	{"driver", "LEASEHOLD_DRIVER"},
	{"dsn", "LEASEHOLD_DSN"},
	{"log-format", "LOG_FORMAT"},
	{"ttl", "LEASEHOLD_TTL"},
	{"renew", "LEASEHOLD_RENEW"},
	{"retry", "LEASEHOLD_RETRY"},
	{"orders", "SAMPLE_ORDERS"},
	{"work-delay", "SAMPLE_WORK_DELAY"},
	{"http", "SAMPLE_HTTP"},
	{"wake-address", "LEASEHOLD_WAKE_ADDRESS"},
	{"wake-advertise", "LEASEHOLD_WAKE_ADVERTISE"},
}

// parseConfig reads the flags in args, falling back to the variables read
// through getenv. Errors wrap errUsage and name the flag (or variable) and
// the bad value; flag.ErrHelp is returned as is for -h.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	fs.StringVar(&c.driver, "driver", driverSQLitePure,
		"database driver: "+strings.Join(drivers(), ", ")+" (env LEASEHOLD_DRIVER)")
	fs.StringVar(&c.dsn, "dsn", "",
		"data source name (env LEASEHOLD_DSN; default: the SQLite file "+defaultSQLiteFile+" in the working directory; "+
			"a SQLite file path gets the default's settings, a file: URI or a DSN with parameters is used as given)")
	fs.StringVar(&c.logFormat, "log-format", "console", "log format: console or json (env LOG_FORMAT)")
	fs.DurationVar(&c.ttl, "ttl", 0, "lease TTL; 0 means the library default, 15s (env LEASEHOLD_TTL)")
	fs.DurationVar(&c.renew, "renew", 0, "lease renew interval; 0 means the library default, TTL/3 (env LEASEHOLD_RENEW)")
	fs.DurationVar(&c.retry, "retry", 0,
		"follower retry and pool poll interval; 0 means the library default, min(2s, TTL/4) (env LEASEHOLD_RETRY)")
	fs.IntVar(&c.orders, "orders", 10000, "orders to seed when sample_orders is empty (env SAMPLE_ORDERS)")
	fs.DurationVar(&c.workDelay, "work-delay", 2*time.Millisecond, "simulated work per order (env SAMPLE_WORK_DELAY)")
	fs.StringVar(&c.httpAddr, "http", "",
		"address to serve /metrics, /healthz, /readyz, /status and /status.json on, such as 127.0.0.1:8080; empty: none (env SAMPLE_HTTP)")
	fs.StringVar(&c.wakeAddr, "wake-address", "",
		"UDP host:port to receive peer wake-ups on, such as :7946; with it or -wake-advertise, PostgreSQL uses UDP wake-ups instead of LISTEN/NOTIFY (env LEASEHOLD_WAKE_ADDRESS)")
	fs.Func("wake-advertise",
		"comma-separated IPs or IP:ports the other copies send this one's wake-ups to, such as the pod IP (env LEASEHOLD_WAKE_ADVERTISE)",
		func(v string) error {
			c.wakeAdvertise = nil
			for a := range strings.SplitSeq(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					c.wakeAdvertise = append(c.wakeAdvertise, a)
				}
			}
			return nil
		})
	fs.BoolVar(&c.seedOnly, "seed-only", false, "create the sample tables, seed the orders if the table is empty, and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sample [flags]\n\n"+
			"Runs three leasehold workers (cluster-report, ledger, orders) in one host.\n"+
			"Identity comes from HOSTNAME and CLUSTER_NAME.\n\nFlags:\n")
		fs.PrintDefaults()
	}

	for _, ef := range envFlags {
		v := strings.TrimSpace(getenv(ef.env))
		if v == "" {
			continue
		}
		if err := fs.Set(ef.flag, v); err != nil {
			return config{}, usagef("invalid value %q in %s (the default of -%s): %v", v, ef.env, ef.flag, err)
		}
	}
	// Errors are reported by the caller, once; -h prints the usage.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return config{}, err
		}
		return config{}, usagef("%v (run sample -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return config{}, usagef("unexpected argument %q: the sample takes flags only", fs.Arg(0))
	}
	if err := c.check(); err != nil {
		return config{}, err
	}
	if c.dsn == "" {
		c.dsn = sqliteDSN(c.driver, defaultSQLiteFile)
	} else if isSQLite(c.driver) && isFilePath(c.dsn) {
		c.dsn = sqliteDSN(c.driver, c.dsn)
	}
	return c, nil
}

// isFilePath reports whether a SQLite DSN is a bare file path: no "file:"
// URI, no parameters, not ":memory:". Such a path gets the settings of
// the default DSN (sqliteDSN); without them the pure-Go driver waits for
// no lock, and every write beside another fails with SQLITE_BUSY.
func isFilePath(dsn string) bool {
	return !strings.HasPrefix(dsn, "file:") && !strings.Contains(dsn, "?") && dsn != ":memory:"
}

// check validates the values the flag package cannot.
func (c config) check() error {
	if !slices.Contains(drivers(), c.driver) {
		return usagef("invalid value %q for flag -driver: want one of %s", c.driver, strings.Join(drivers(), ", "))
	}
	if c.logFormat != "console" && c.logFormat != "json" {
		return usagef("invalid value %q for flag -log-format: want console or json", c.logFormat)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ttl", c.ttl}, {"renew", c.renew}, {"retry", c.retry}, {"work-delay", c.workDelay}} {
		if d.v < 0 {
			return usagef("invalid value %v for flag -%s: must not be negative", d.v, d.name)
		}
	}
	if c.orders < 0 {
		return usagef("invalid value %d for flag -orders: must not be negative", c.orders)
	}
	if c.httpAddr != "" {
		if _, _, err := net.SplitHostPort(c.httpAddr); err != nil {
			return usagef("invalid value %q for flag -http: want host:port, such as 127.0.0.1:8080: %v", c.httpAddr, err)
		}
	}
	if c.wakeAddr != "" {
		if _, _, err := net.SplitHostPort(c.wakeAddr); err != nil {
			return usagef("invalid value %q for flag -wake-address: want host:port, such as :7946: %v", c.wakeAddr, err)
		}
	}
	for _, a := range c.wakeAdvertise {
		host := a
		if h, _, err := net.SplitHostPort(a); err == nil {
			host = h
		}
		if net.ParseIP(host) == nil {
			return usagef("invalid value %q in flag -wake-advertise: want an IP or IP:port, such as 10.0.0.7", a)
		}
	}
	if c.dsn == "" && !isSQLite(c.driver) {
		return usagef("flag -dsn (or LEASEHOLD_DSN) is required with -driver %s; only the SQLite drivers have a default", c.driver)
	}
	// A SQLite driver takes any DSN for a file name: it would create a
	// file named after a server's DSN, password included.
	if server, ok := serverDSN(c.dsn); ok && isSQLite(c.driver) {
		set := "-driver " + server + " (or LEASEHOLD_DRIVER=" + server + ")"
		if server == "" {
			set = "-driver to the server's: " + strings.Join(drivers()[2:], ", ")
		}
		return usagef("invalid value %q for flag -dsn: that is a database server's DSN, which the %s driver would take for a file name; "+
			"set %s, or give a SQLite file", redactDSN(c.driver, c.dsn), c.driver, set)
	}
	return nil
}
