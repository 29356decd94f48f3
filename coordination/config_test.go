package coordination

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/identity"
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
	good := []string{"reports", "outbox.publisher", "a/b:c-d_e", strings.Repeat("n", MaxNameLen)}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v", n, err)
		}
	}
	bad := map[string]string{
		"":                                "empty",
		strings.Repeat("n", MaxNameLen+1): "129 bytes",
		"has space":                       `' ' at byte 3`,
		"quote'":                          `'\'' at byte 5`,
		"naïve":                           "at byte 2",
	}
	for n, want := range bad {
		err := ValidateName(n)
		if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName containing %q", n, err, want)
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
	if _, err := leaseName(Scope(7), "eu-1", "jobs"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("bad scope: %v", err)
	}
}
