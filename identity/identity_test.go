package identity_test

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/identity"
)

// generatedInstance matches an Instance made by this package.
var generatedInstance = regexp.MustCompile(`^[0-9a-f]{32}$`)

// mapLookup returns a lookup function backed by vars, like os.LookupEnv.
func mapLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func hostname(name string, err error) func() (string, error) {
	return func() (string, error) { return name, err }
}

func TestEnvLookup(t *testing.T) {
	t.Parallel()

	errNoHost := errors.New("uname failed")
	tests := []struct {
		name        string
		env         identity.Env
		vars        map[string]string
		wantNode    string
		wantCluster string
		wantErr     string // substring; empty means success
		wantInvalid bool   // errors.Is(err, identity.ErrInvalid)
		wantCause   error  // errors.Is(err, wantCause) when not nil
	}{
		{
			name:        "BothSet",
			vars:        map[string]string{"HOSTNAME": "orders-7d9f8b6c5-x2x7k", "CLUSTER_NAME": "eu-west-1"},
			wantNode:    "orders-7d9f8b6c5-x2x7k",
			wantCluster: "eu-west-1",
		},
		{
			name:        "FQDNAndUpperCase",
			vars:        map[string]string{"HOSTNAME": "Host-01.example.com", "CLUSTER_NAME": "Prod_EU.2"},
			wantNode:    "Host-01.example.com",
			wantCluster: "Prod_EU.2",
		},
		{
			name:        "ClusterAbsentUsesDefault",
			vars:        map[string]string{"HOSTNAME": "node-a"},
			wantNode:    "node-a",
			wantCluster: identity.DefaultCluster,
		},
		{
			name:        "ClusterEmptyUsesDefault",
			vars:        map[string]string{"HOSTNAME": "node-a", "CLUSTER_NAME": ""},
			wantNode:    "node-a",
			wantCluster: identity.DefaultCluster,
		},
		{
			name:        "ClusterWhitespaceUsesDefault",
			vars:        map[string]string{"HOSTNAME": "node-a", "CLUSTER_NAME": " \t\n"},
			wantNode:    "node-a",
			wantCluster: identity.DefaultCluster,
		},
		{
			name:        "SurroundingWhitespaceTrimmed",
			vars:        map[string]string{"HOSTNAME": "  node-a\n", "CLUSTER_NAME": "\tblue "},
			wantNode:    "node-a",
			wantCluster: "blue",
		},
		{
			name:        "HostnameAbsentFallsBack",
			env:         identity.Env{Hostname: hostname("fallback-host", nil)},
			vars:        map[string]string{"CLUSTER_NAME": "blue"},
			wantNode:    "fallback-host",
			wantCluster: "blue",
		},
		{
			name:        "HostnameEmptyFallsBack",
			env:         identity.Env{Hostname: hostname("fallback-host", nil)},
			vars:        map[string]string{"HOSTNAME": ""},
			wantNode:    "fallback-host",
			wantCluster: identity.DefaultCluster,
		},
		{
			name:        "HostnameWhitespaceFallsBackAndTrims",
			env:         identity.Env{Hostname: hostname(" fallback-host\n", nil)},
			vars:        map[string]string{"HOSTNAME": "   "},
			wantNode:    "fallback-host",
			wantCluster: identity.DefaultCluster,
		},
		{
			name:        "HostnameSetDoesNotCallFallback",
			env:         identity.Env{Hostname: hostname("", errNoHost)},
			vars:        map[string]string{"HOSTNAME": "node-a"},
			wantNode:    "node-a",
			wantCluster: identity.DefaultCluster,
		},
		{
			name:      "HostnameFails",
			env:       identity.Env{Hostname: hostname("", errNoHost)},
			vars:      map[string]string{},
			wantErr:   `identity: HOSTNAME is unset or empty and the host name is unknown (uname failed); set HOSTNAME`,
			wantCause: errNoHost,
		},
		{
			name:    "HostnameReturnsEmpty",
			env:     identity.Env{Hostname: hostname("  ", nil)},
			vars:    map[string]string{},
			wantErr: `identity: HOSTNAME is unset or empty and os.Hostname returned an empty name; set HOSTNAME`,
		},
		{
			name:        "CustomVarNames",
			env:         identity.Env{NodeVar: "POD_NAME", ClusterVar: "KUBERNETES_CLUSTER"},
			vars:        map[string]string{"HOSTNAME": "ignored", "CLUSTER_NAME": "ignored", "POD_NAME": "pod-1", "KUBERNETES_CLUSTER": "k1"},
			wantNode:    "pod-1",
			wantCluster: "k1",
		},
		{
			name:        "CustomVarNamesAbsentFallBack",
			env:         identity.Env{NodeVar: "POD_NAME", ClusterVar: "KUBERNETES_CLUSTER", Hostname: hostname("fallback-host", nil)},
			vars:        map[string]string{"HOSTNAME": "ignored", "CLUSTER_NAME": "ignored"},
			wantNode:    "fallback-host",
			wantCluster: identity.DefaultCluster,
		},
		{
			name:      "CustomNodeVarNamedInHostnameError",
			env:       identity.Env{NodeVar: "POD_NAME", Hostname: hostname("", errNoHost)},
			vars:      map[string]string{"HOSTNAME": "ignored"},
			wantErr:   `identity: POD_NAME is unset or empty and the host name is unknown (uname failed); set POD_NAME`,
			wantCause: errNoHost,
		},
		{
			name:        "ClusterWithSpace",
			vars:        map[string]string{"HOSTNAME": "node-a", "CLUSTER_NAME": "eu west"},
			wantErr:     `identity: Cluster "eu west" (from CLUSTER_NAME) contains ' ' at byte 2; allowed are ASCII letters, digits, '.', '_' and '-'`,
			wantInvalid: true,
		},
		{
			name:        "NodeWithSlash",
			vars:        map[string]string{"HOSTNAME": "a/b"},
			wantErr:     `identity: Node "a/b" (from HOSTNAME) contains '/' at byte 1;`,
			wantInvalid: true,
		},
		{
			name:        "BadHostnameFallbackNamesSource",
			env:         identity.Env{Hostname: hostname("my host", nil)},
			vars:        map[string]string{},
			wantErr:     `identity: Node "my host" (from os.Hostname) contains ' ' at byte 2;`,
			wantInvalid: true,
		},
		{
			name:        "CustomClusterVarNamedInError",
			env:         identity.Env{ClusterVar: "KUBERNETES_CLUSTER"},
			vars:        map[string]string{"HOSTNAME": "node-a", "KUBERNETES_CLUSTER": "k:1"},
			wantErr:     `identity: Cluster "k:1" (from KUBERNETES_CLUSTER) contains ':' at byte 1;`,
			wantInvalid: true,
		},
		{
			name:        "NodeTooLong",
			vars:        map[string]string{"HOSTNAME": strings.Repeat("n", identity.MaxNodeLen+1)},
			wantErr:     `(from HOSTNAME) is 129 bytes long; the limit is 128`,
			wantInvalid: true,
		},
		{
			name:        "ClusterTooLong",
			vars:        map[string]string{"HOSTNAME": "node-a", "CLUSTER_NAME": strings.Repeat("c", identity.MaxClusterLen+1)},
			wantErr:     `(from CLUSTER_NAME) is 64 bytes long; the limit is 63`,
			wantInvalid: true,
		},
		{
			name:        "NodeAtLimit",
			vars:        map[string]string{"HOSTNAME": strings.Repeat("n", identity.MaxNodeLen), "CLUSTER_NAME": strings.Repeat("c", identity.MaxClusterLen)},
			wantNode:    strings.Repeat("n", identity.MaxNodeLen),
			wantCluster: strings.Repeat("c", identity.MaxClusterLen),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			id, err := tt.env.Lookup(mapLookup(tt.vars))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Lookup() = %+v, want error containing %q", id, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Lookup() error = %q, want it to contain %q", err, tt.wantErr)
				}
				if got := errors.Is(err, identity.ErrInvalid); got != tt.wantInvalid {
					t.Fatalf("errors.Is(%q, ErrInvalid) = %v, want %v", err, got, tt.wantInvalid)
				}
				if tt.wantCause != nil && !errors.Is(err, tt.wantCause) {
					t.Fatalf("errors.Is(%q, %q) = false, want true", err, tt.wantCause)
				}
				if id != (identity.Identity{}) {
					t.Fatalf("Lookup() returned %+v with an error, want the zero Identity", id)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup() error = %v, want nil", err)
			}
			if id.Node != tt.wantNode || id.Cluster != tt.wantCluster {
				t.Fatalf("Lookup() = Node %q, Cluster %q; want Node %q, Cluster %q", id.Node, id.Cluster, tt.wantNode, tt.wantCluster)
			}
			if !generatedInstance.MatchString(id.Instance) {
				t.Fatalf("Lookup() Instance = %q, want 32 lowercase hex characters", id.Instance)
			}
			if err := id.Validate(); err != nil {
				t.Fatalf("Validate() on Lookup() result = %v, want nil", err)
			}
		})
	}
}

func TestFromLookup(t *testing.T) {
	t.Parallel()

	id, err := identity.FromLookup(mapLookup(map[string]string{"HOSTNAME": "node-a", "CLUSTER_NAME": "blue"}))
	if err != nil {
		t.Fatalf("FromLookup() error = %v, want nil", err)
	}
	if id.Node != "node-a" || id.Cluster != "blue" || !generatedInstance.MatchString(id.Instance) {
		t.Fatalf("FromLookup() = %+v, want Node node-a, Cluster blue and a generated Instance", id)
	}
}

func TestFromLookupNilPanics(t *testing.T) {
	t.Parallel()

	defer func() {
		r := recover()
		if msg, _ := r.(string); !strings.HasPrefix(msg, "identity: ") {
			t.Fatalf("recover() = %v, want a panic message starting with %q", r, "identity: ")
		}
	}()
	_, _ = identity.FromLookup(nil)
}

// TestFromEnv changes the process environment, so it cannot run in parallel.
func TestFromEnv(t *testing.T) {
	t.Setenv("HOSTNAME", " env-node ")
	t.Setenv("CLUSTER_NAME", "env-cluster")

	id, err := identity.FromEnv()
	if err != nil {
		t.Fatalf("FromEnv() error = %v, want nil", err)
	}
	if id.Node != "env-node" || id.Cluster != "env-cluster" || !generatedInstance.MatchString(id.Instance) {
		t.Fatalf("FromEnv() = %+v, want Node env-node, Cluster env-cluster and a generated Instance", id)
	}
}

func TestFromEnvFallsBackToOSHostname(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || strings.TrimSpace(host) == "" {
		t.Skipf("os.Hostname() = %q, %v; cannot test the fallback", host, err)
	}
	t.Setenv("HOSTNAME", "")
	t.Setenv("CLUSTER_NAME", "")

	id, err := identity.FromEnv()
	if err != nil {
		t.Fatalf("FromEnv() error = %v, want nil (os.Hostname() = %q)", err, host)
	}
	if id.Node != strings.TrimSpace(host) || id.Cluster != identity.DefaultCluster {
		t.Fatalf("FromEnv() = %+v, want Node %q, Cluster %q", id, host, identity.DefaultCluster)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		node    string
		cluster string
		wantErr string // substring; empty means success
	}{
		{name: "Valid", node: "orders-7d9f8b6c5-x2x7k", cluster: "prod"},
		{name: "EmptyNode", node: "", cluster: "prod", wantErr: `identity: Node is empty`},
		{name: "EmptyCluster", node: "n", cluster: "", wantErr: `identity: Cluster is empty`},
		{name: "NotTrimmed", node: " n", cluster: "prod", wantErr: `identity: Node " n" contains ' ' at byte 0;`},
		{name: "ClusterColon", node: "n", cluster: "a:b", wantErr: `identity: Cluster "a:b" contains ':' at byte 1;`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			id, err := identity.New(tt.node, tt.cluster)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, identity.ErrInvalid) {
					t.Fatalf("New(%q, %q) = %+v, %v; want an ErrInvalid error containing %q", tt.node, tt.cluster, id, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q, %q) error = %v, want nil", tt.node, tt.cluster, err)
			}
			if id.Node != tt.node || id.Cluster != tt.cluster || !generatedInstance.MatchString(id.Instance) {
				t.Fatalf("New(%q, %q) = %+v, want those values and a generated Instance", tt.node, tt.cluster, id)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()

	const inst = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name    string
		id      identity.Identity
		wantErr string // exact message; empty means valid
	}{
		{name: "Valid", id: identity.Identity{Node: "n", Cluster: "c", Instance: inst}},
		{name: "DashedUUIDInstance", id: identity.Identity{Node: "n", Cluster: "c", Instance: "123e4567-e89b-12d3-a456-426614174000"}},
		{name: "AllAllowedNodeChars", id: identity.Identity{Node: "azAZ09._-", Cluster: "c", Instance: "azAZ09_-"}},
		{name: "Zero", id: identity.Identity{}, wantErr: `identity: Node is empty`},
		{name: "EmptyInstance", id: identity.Identity{Node: "n", Cluster: "c"}, wantErr: `identity: Instance is empty`},
		{
			name:    "ClusterSpace",
			id:      identity.Identity{Node: "n", Cluster: "eu west", Instance: inst},
			wantErr: `identity: Cluster "eu west" contains ' ' at byte 2; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "NodeSlash",
			id:      identity.Identity{Node: "a.b/c", Cluster: "c", Instance: inst},
			wantErr: `identity: Node "a.b/c" contains '/' at byte 3; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "NodeColon",
			id:      identity.Identity{Node: "host:8080", Cluster: "c", Instance: inst},
			wantErr: `identity: Node "host:8080" contains ':' at byte 4; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "NodeNonASCII",
			id:      identity.Identity{Node: "caf\u00e9", Cluster: "c", Instance: inst},
			wantErr: `identity: Node "café" contains 'é' at byte 3; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "NodeInvalidUTF8",
			id:      identity.Identity{Node: "ab\xff", Cluster: "c", Instance: inst},
			wantErr: `identity: Node "ab\xff" contains invalid UTF-8 byte 0xff at byte 2; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "ClusterNewline",
			id:      identity.Identity{Node: "n", Cluster: "a\nb", Instance: inst},
			wantErr: `identity: Cluster "a\nb" contains '\n' at byte 1; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "InstanceDot",
			id:      identity.Identity{Node: "n", Cluster: "c", Instance: "ab.cd"},
			wantErr: `identity: Instance "ab.cd" contains '.' at byte 2; allowed are ASCII letters, digits, '_' and '-'`,
		},
		{
			name:    "NodeTooLong",
			id:      identity.Identity{Node: strings.Repeat("x", 129), Cluster: "c", Instance: inst},
			wantErr: `identity: Node "` + strings.Repeat("x", 129) + `" is 129 bytes long; the limit is 128`,
		},
		{
			name:    "ClusterTooLong",
			id:      identity.Identity{Node: "n", Cluster: strings.Repeat("x", 64), Instance: inst},
			wantErr: `identity: Cluster "` + strings.Repeat("x", 64) + `" is 64 bytes long; the limit is 63`,
		},
		{
			name:    "InstanceTooLong",
			id:      identity.Identity{Node: "n", Cluster: "c", Instance: strings.Repeat("x", 37)},
			wantErr: `identity: Instance "` + strings.Repeat("x", 37) + `" is 37 bytes long; the limit is 36`,
		},
		{
			name:    "FirstProblemWins",
			id:      identity.Identity{Node: "a b", Cluster: "c d", Instance: ""},
			wantErr: `identity: Node "a b" contains ' ' at byte 1; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := tt.id.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", tt.id, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want %q", tt.id, tt.wantErr)
			}
			if err.Error() != tt.wantErr {
				t.Fatalf("Validate(%+v) =\n\t%q\nwant\n\t%q", tt.id, err, tt.wantErr)
			}
			if !errors.Is(err, identity.ErrInvalid) {
				t.Fatalf("errors.Is(%q, ErrInvalid) = false, want true", err)
			}
		})
	}
}

func TestParseHolder(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		holder  string
		want    identity.Identity
		wantErr string // exact message; empty means success
	}{
		{
			name:   "Valid",
			holder: "orders-7d9f8b6c5-x2x7k/prod/0123456789abcdef0123456789abcdef",
			want:   identity.Identity{Node: "orders-7d9f8b6c5-x2x7k", Cluster: "prod", Instance: "0123456789abcdef0123456789abcdef"},
		},
		{
			name:   "FQDN",
			holder: "host.example.com/default/i-1",
			want:   identity.Identity{Node: "host.example.com", Cluster: "default", Instance: "i-1"},
		},
		{name: "Empty", holder: "", wantErr: `identity: holder "" has 1 part(s) separated by "/"; want node/cluster/instance`},
		{name: "TwoParts", holder: "n/c", wantErr: `identity: holder "n/c" has 2 part(s) separated by "/"; want node/cluster/instance`},
		{name: "FourParts", holder: "n/c/i/x", wantErr: `identity: holder "n/c/i/x" has 4 part(s) separated by "/"; want node/cluster/instance`},
		{name: "EmptyNode", holder: "/c/i", wantErr: `identity: holder "/c/i": Node is empty`},
		{name: "EmptyCluster", holder: "n//i", wantErr: `identity: holder "n//i": Cluster is empty`},
		{name: "EmptyInstance", holder: "n/c/", wantErr: `identity: holder "n/c/": Instance is empty`},
		{
			name:    "BadInstance",
			holder:  "n/c/i:1",
			wantErr: `identity: holder "n/c/i:1": Instance "i:1" contains ':' at byte 1; allowed are ASCII letters, digits, '_' and '-'`,
		},
		{
			name:    "SpaceInCluster",
			holder:  "n/eu west/i",
			wantErr: `identity: holder "n/eu west/i": Cluster "eu west" contains ' ' at byte 2; allowed are ASCII letters, digits, '.', '_' and '-'`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := identity.ParseHolder(tt.holder)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseHolder(%q) = %+v, want error %q", tt.holder, got, tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Fatalf("ParseHolder(%q) error =\n\t%q\nwant\n\t%q", tt.holder, err, tt.wantErr)
				}
				if !errors.Is(err, identity.ErrInvalid) {
					t.Fatalf("errors.Is(%q, ErrInvalid) = false, want true", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHolder(%q) error = %v, want nil", tt.holder, err)
			}
			if got != tt.want {
				t.Fatalf("ParseHolder(%q) = %+v, want %+v", tt.holder, got, tt.want)
			}
			if got.Holder() != tt.holder {
				t.Fatalf("ParseHolder(%q).Holder() = %q, want the input back", tt.holder, got.Holder())
			}
		})
	}
}

func TestHolderRoundTrip(t *testing.T) {
	t.Parallel()

	ids := []identity.Identity{
		{Node: "n", Cluster: "c", Instance: "i"},
		{Node: "orders-7d9f8b6c5-x2x7k", Cluster: "eu-west-1", Instance: "0123456789abcdef0123456789abcdef"},
		{Node: strings.Repeat("N", identity.MaxNodeLen), Cluster: strings.Repeat("C", identity.MaxClusterLen), Instance: strings.Repeat("I", identity.MaxInstanceLen)},
	}
	for i := range 10 {
		id, err := identity.New("host.example.com", "Prod_EU.2")
		if err != nil {
			t.Fatalf("New() #%d error = %v", i, err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		h := id.Holder()
		if s := id.String(); s != h {
			t.Fatalf("String() = %q, Holder() = %q; want them equal", s, h)
		}
		if len(h) > identity.MaxHolderLen {
			t.Fatalf("len(Holder()) = %d, more than MaxHolderLen %d", len(h), identity.MaxHolderLen)
		}
		got, err := identity.ParseHolder(h)
		if err != nil {
			t.Fatalf("ParseHolder(%q) error = %v, want nil", h, err)
		}
		if got != id {
			t.Fatalf("ParseHolder(%q) = %+v, want %+v", h, got, id)
		}
	}
}

func TestMaxHolderLen(t *testing.T) {
	t.Parallel()

	id := identity.Identity{
		Node:     strings.Repeat("n", identity.MaxNodeLen),
		Cluster:  strings.Repeat("c", identity.MaxClusterLen),
		Instance: strings.Repeat("i", identity.MaxInstanceLen),
	}
	if err := id.Validate(); err != nil {
		t.Fatalf("Validate() of the longest identity = %v, want nil", err)
	}
	if got := len(id.Holder()); got != identity.MaxHolderLen {
		t.Fatalf("len(Holder()) of the longest identity = %d, want MaxHolderLen %d", got, identity.MaxHolderLen)
	}
}

func TestInstanceUnique(t *testing.T) {
	t.Parallel()

	const n = 1000
	seen := make(map[string]bool, n)
	for i := range n {
		id, err := identity.New("node-a", "blue")
		if err != nil {
			t.Fatalf("New() #%d error = %v", i, err)
		}
		if !generatedInstance.MatchString(id.Instance) {
			t.Fatalf("New() #%d Instance = %q, want 32 lowercase hex characters", i, id.Instance)
		}
		if seen[id.Instance] {
			t.Fatalf("New() #%d Instance %q was already returned", i, id.Instance)
		}
		seen[id.Instance] = true
	}
}
