package coordination

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/memstore"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.TTL != 15*time.Second || c.RenewInterval != 5*time.Second || c.RetryInterval != 2*time.Second ||
		c.Margin != 3*time.Second || c.ShutdownTimeout != 10*time.Second || c.TablePrefix != "leasehold_" || c.Logger == nil {
		t.Fatalf("defaults = %+v", c)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if c.HealthCheck != nil || c.HealthInterval != c.RetryInterval || c.HealthFailures != defaultHealthFailures {
		t.Fatalf("health defaults: interval %v, failures %d; want RetryInterval (%v) and %d",
			c.HealthInterval, c.HealthFailures, c.RetryInterval, defaultHealthFailures)
	}
	// Setting only the TTL scales the derived defaults with it.
	c = Config{TTL: 3 * time.Second}.withDefaults()
	if c.RenewInterval != time.Second || c.RetryInterval != 750*time.Millisecond || c.Margin != 600*time.Millisecond {
		t.Fatalf("defaults for TTL 3s = %+v", c)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("defaults for TTL 3s invalid: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []string // substrings the error must contain
	}{
		{"NegativeTTL", Config{TTL: -time.Second}, []string{"TTL (-1s)", "negative"}},
		{"NegativeRenew", Config{RenewInterval: -5}, []string{"RenewInterval (-5ns)"}},
		{"NegativeShutdown", Config{ShutdownTimeout: -time.Second}, []string{"ShutdownTimeout (-1s)"}},
		{"TinyTTL", Config{TTL: time.Millisecond}, []string{"TTL (1ms)", "at least 10ms"}},
		{"MarginNotBelowTTL", Config{Margin: 15 * time.Second}, []string{"Margin (15s)", "TTL (15s)"}},
		{"RenewTooSlow", Config{RenewInterval: 7 * time.Second}, []string{"RenewInterval (7s)", "15s - 3s = 12s"}},
		{"RenewEqualsTTL", Config{TTL: 5 * time.Second, RenewInterval: 5 * time.Second}, []string{"RenewInterval (5s)"}},
		{"RetryAboveTTL", Config{TTL: 4 * time.Second, RetryInterval: 5 * time.Second}, []string{"RetryInterval (5s)", "TTL (4s)"}},
		{"BadPrefix", Config{TablePrefix: "x; DROP TABLE y"}, []string{`"x; DROP TABLE y"`, "TablePrefix"}},
		{"MaxInt64TTL", Config{TTL: math.MaxInt64}, []string{"TTL (2562047h47m16.854775807s)", "at most 24h0m0s"}},
		{"TTLAboveMax", Config{TTL: maxTTL + time.Nanosecond}, []string{"TTL (24h0m0.000000001s)", "at most 24h0m0s"}},
		{"MaxInt64Renew", Config{RenewInterval: math.MaxInt64}, []string{"RenewInterval (2562047h47m16.854775807s)", "half of TTL - Margin"}},
		{"MaxInt64Retry", Config{RetryInterval: math.MaxInt64}, []string{"RetryInterval (2562047h47m16.854775807s)", "TTL (15s)"}},
		{"MaxInt64Margin", Config{Margin: math.MaxInt64}, []string{"Margin (2562047h47m16.854775807s)", "TTL (15s)"}},
		{"NanosecondRenew", Config{RenewInterval: time.Nanosecond}, []string{"RenewInterval (1ns)", "at least 1ms"}},
		{"NanosecondRetry", Config{RetryInterval: time.Nanosecond}, []string{"RetryInterval (1ns)", "at least 1ms"}},
		{"NegativeHealthInterval", Config{HealthInterval: -time.Second}, []string{"HealthInterval (-1s)", "negative"}},
		{"NanosecondHealthInterval", Config{HealthInterval: time.Nanosecond}, []string{"HealthInterval (1ns)", "at least 1ms"}},
		{"NegativeHealthFailures", Config{HealthFailures: -1}, []string{"HealthFailures (-1)", "at least 1"}},
		{"WakeAddressWithoutPort", Config{WakeAddress: "10.0.0.5"}, []string{`WakeAddress ("10.0.0.5")`, "host:port"}},
		{"WakeAddressHostName", Config{WakeAddress: "db.example:7946"}, []string{`WakeAddress ("db.example:7946")`, "IP address"}},
		{"WakeAddressBadPort", Config{WakeAddress: ":70000"}, []string{`WakeAddress (":70000")`, "0 to 65535"}},
		{"WakeAdvertiseHostName", Config{WakeAdvertise: []string{"10.0.0.5", "pod.example"}}, []string{`WakeAdvertise[1] ("pod.example")`}},
		{"BothLoggers", Config{Logger: zap.NewNop(), Slog: slog.Default()}, []string{"Logger and Slog are both set"}},
		{"WakeAdvertiseUnspecified", Config{WakeAdvertise: []string{"0.0.0.0:7946"}}, []string{`WakeAdvertise[0] ("0.0.0.0:7946")`, "unicast"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.withDefaults().validate()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestConfigBoundsAccepted(t *testing.T) {
	for _, c := range []Config{
		{TTL: minTTL},
		{TTL: maxTTL},
		{TTL: maxTTL, RetryInterval: maxTTL},
		{RenewInterval: minInterval, RetryInterval: minInterval},
		{WakeAddress: "0.0.0.0:7946", WakeAdvertise: []string{"10.1.2.3", "[2001:db8::1]:7946"}},
	} {
		if err := c.withDefaults().validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New(nil, identity.Identity{Node: "a", Cluster: "b", Instance: "c"}, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil db: %v", err)
	}
	if _, err := New(nil, identity.Identity{Node: "a b", Cluster: "b", Instance: "c"}, Config{}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `"a b"`) {
		t.Errorf("bad identity: %v", err)
	}
	if _, err := New(nil, identity.Identity{Node: "a", Cluster: "b", Instance: "c"}, Config{TTL: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad config: %v", err)
	}
}

func TestNames(t *testing.T) {
	good := []string{"reports", "outbox.publisher", "a/b:c-d_e", strings.Repeat("n", maxNameLen),
		".hidden", "a/...", "v1..2/x.y", "a/b/c"}
	for _, n := range good {
		if err := validateName(n); err != nil {
			t.Errorf("validateName(%q) = %v", n, err)
		}
	}
	bad := map[string]string{
		"":                                "empty",
		strings.Repeat("n", maxNameLen+1): "129 bytes",
		"has space":                       `' ' at byte 3`,
		"quote'":                          `'\'' at byte 5`,
		"naïve":                           "at byte 2",
		"../..":                           `"../.." has the segment ".." at byte 0`,
		"..":                              `".." has the segment ".." at byte 0`,
		".":                               `"." has the segment "." at byte 0`,
		"a/./b":                           `"a/./b" has the segment "." at byte 2`,
		"jobs/..":                         `"jobs/.." has the segment ".." at byte 5`,
		"/jobs":                           `"/jobs" has an empty segment at byte 0`,
		"jobs/":                           `"jobs/" has an empty segment at byte 5`,
		"a//b":                            `"a//b" has an empty segment at byte 2`,
		"/":                               `"/" has an empty segment at byte 0`,
	}
	for n, want := range bad {
		err := validateName(n)
		if !errors.Is(err, errInvalidName) || !strings.Contains(err.Error(), want) {
			t.Errorf("validateName(%q) = %v, want errInvalidName containing %q", n, err, want)
		}
	}
	for _, tc := range []struct {
		scope Scope
		want  string
	}{{ClusterScope, "cluster/eu-1/jobs"}, {GlobalScope, "global/jobs"}} {
		got, err := leaseName(tc.scope, "eu-1", "jobs")
		if err != nil || got != tc.want {
			t.Errorf("leaseName(%v) = %q, %v; want %q", tc.scope, got, err, tc.want)
		}
	}
	if _, err := leaseName(Scope(7), "eu-1", "jobs"); !errors.Is(err, errInvalidName) {
		t.Errorf("bad scope: %v", err)
	}
}

func TestPoolConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		poll time.Duration
		want string // "" when valid; else what the error must contain
	}{
		{0, ""},
		{minPollInterval, ""},
		{time.Second, ""},
		{maxPollInterval, ""},
		{-time.Second, "PollInterval (-1s) must not be negative"},
		{time.Nanosecond, "PollInterval (1ns) must be at least 10ms"},
		{minPollInterval - 1, "PollInterval (9.999999ms) must be at least 10ms"},
		{maxPollInterval + time.Second, "PollInterval (24h0m1s) must be at most 24h0m0s"},
		{math.MaxInt64, "PollInterval (2562047h47m16.854775807s) must be at most 24h0m0s"},
	} {
		err := PoolConfig{PollInterval: tc.poll}.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("PollInterval %v: %v", tc.poll, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), tc.want)):
			t.Errorf("PollInterval %v: err = %v, want ErrInvalidConfig containing %q", tc.poll, err, tc.want)
		}
	}
}

func TestPoolRejectsBadInput(t *testing.T) {
	c := newCoordinator(memstore.New(), testIdentity(t, "node-a"), Config{TTL: minTTL}.withDefaults())
	if _, err := c.Pool(GlobalScope, "../..", PoolConfig{}); !errors.Is(err, errInvalidName) || !strings.Contains(err.Error(), `"../.."`) {
		t.Errorf("Pool named ../..: %v, want errInvalidName naming it", err)
	}
	_, err := c.Pool(GlobalScope, "orders", PoolConfig{PollInterval: time.Nanosecond})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "PollInterval (1ns)") || !strings.Contains(err.Error(), `"global/orders"`) {
		t.Errorf("Pool with a 1ns poll: %v, want ErrInvalidConfig naming the pool, the field and the value", err)
	}
	// The default poll is the RetryInterval (2.5ms for a 10ms TTL), raised
	// to minPollInterval.
	p, err := c.Pool(GlobalScope, "orders", PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if p.poll != minPollInterval {
		t.Errorf("default poll for RetryInterval %v = %v, want %v", c.cfg.RetryInterval, p.poll, minPollInterval)
	}
	if _, err := c.Election(GlobalScope, "a//b"); !errors.Is(err, errInvalidName) {
		t.Errorf("Election named a//b: %v, want errInvalidName", err)
	}
}
