package identity

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// defaultCluster is the Cluster used when the cluster variable (CLUSTER_NAME by
// default) is unset or empty.
const defaultCluster = "default"

// Length limits, in bytes. Every allowed character is one byte long, so these
// are also limits in characters.
const (
	// maxNodeLen is the longest allowed Node. It is below the 253 bytes a DNS
	// name may have but well above the 63 of a Kubernetes pod's host name.
	maxNodeLen = 128
	// maxClusterLen is the longest allowed Cluster: one DNS label.
	maxClusterLen = 63
	// maxInstanceLen is the longest allowed Instance: a UUID in its 36-byte
	// dashed form. Generated instance ids are 32 bytes long.
	maxInstanceLen = 36
	// maxHolderLen is the longest string [Identity.Holder] can return: the
	// three limits above plus two separators. A column that stores holders
	// must be at least this wide.
	maxHolderLen = maxNodeLen + 1 + maxClusterLen + 1 + maxInstanceLen
)

// Default variable names read by [FromEnv], [FromLookup] and a zero [env].
const (
	// defaultNodeVar is the variable that names the node.
	defaultNodeVar = "HOSTNAME"
	// defaultClusterVar is the variable that names the cluster.
	defaultClusterVar = "CLUSTER_NAME"
)

// sep separates Node, Cluster and Instance in a holder string. It is not an
// allowed character in any of them, so the encoding is unambiguous.
const sep = "/"

// Identity says who this process is. Two processes, or two starts of the same
// process, have different identities because their Instance differs.
//
// An Identity is a comparable value. Build one with [FromEnv], [FromLookup],
// [New] or [ParseHolder], which all return a valid Identity, or
// fill the fields yourself and call [Identity.Validate].
type Identity struct {
	// Node names the machine or pod. It is read from HOSTNAME, falling back
	// to os.Hostname. At most 128 bytes of ASCII letters, digits,
	// '.', '_' and '-'.
	Node string
	// Cluster names the group of nodes that per-cluster leases are scoped
	// to. It is read from CLUSTER_NAME, falling back to "default". At
	// most 63 bytes of ASCII letters, digits, '.', '_' and '-'.
	Cluster string
	// Instance is random and made when the Identity is built, once per
	// process start. Generated values are 32 lowercase hex characters (a
	// version 4 UUID without dashes). At most 36 bytes of ASCII
	// letters, digits, '_' and '-'.
	Instance string
}

// FromEnv builds the identity of this process from the environment: Node from
// HOSTNAME (or os.Hostname when HOSTNAME is unset or empty), Cluster from
// CLUSTER_NAME (or "default"), and a fresh random Instance. Surrounding
// whitespace is trimmed.
//
// Call it once at process start and pass the result around: every call returns
// a different Instance, so two calls give two different holders.
func FromEnv() (Identity, error) {
	return env{}.Lookup(os.LookupEnv)
}

// FromLookup is [FromEnv] with the environment replaced by lookup, which has
// the signature of os.LookupEnv. Tests pass a map-backed function instead of
// changing the process environment; a program that reads other variable
// names maps them in lookup.
func FromLookup(lookup func(string) (string, bool)) (Identity, error) {
	return env{}.Lookup(lookup)
}

// env says where env.Lookup reads an identity from. The zero value reads
// HOSTNAME and CLUSTER_NAME and falls back to os.Hostname, exactly like
// [FromEnv] and [FromLookup].
type env struct {
	// NodeVar is the variable holding the Node, for example "POD_NAME" or
	// "NODE_NAME". Defaults to "HOSTNAME".
	NodeVar string
	// ClusterVar is the variable holding the Cluster, for example
	// "KUBERNETES_CLUSTER". Defaults to "CLUSTER_NAME".
	ClusterVar string
	// Hostname gives the Node when NodeVar is unset or empty. Defaults to
	// os.Hostname.
	Hostname func() (string, error)
}

// Lookup builds an identity from the variables named by e, read through lookup
// (which has the signature of os.LookupEnv), and a fresh random Instance.
//
// A variable that is unset, empty or only whitespace counts as unset; values
// have surrounding whitespace trimmed. An unset node variable falls back to
// e.Hostname, and an unset cluster variable to defaultCluster. The result is
// validated; errors wrap [ErrInvalid] and say which variable the bad value came
// from. If the node variable is unset and the hostname cannot be found, the
// error says to set the variable.
//
// Lookup panics if lookup is nil.
func (e env) Lookup(lookup func(string) (string, bool)) (Identity, error) {
	if lookup == nil {
		panic("identity: env.Lookup called with a nil lookup function")
	}
	nodeVar := cmp.Or(e.NodeVar, defaultNodeVar)
	clusterVar := cmp.Or(e.ClusterVar, defaultClusterVar)

	node, nodeFrom := get(lookup, nodeVar), nodeVar
	if node == "" {
		hostname := e.Hostname
		if hostname == nil {
			hostname = os.Hostname
		}
		h, err := hostname()
		if err != nil {
			return Identity{}, fmt.Errorf("identity: %s is unset or empty and the host name is unknown (%w); set %s", nodeVar, err, nodeVar)
		}
		node, nodeFrom = strings.TrimSpace(h), "os.Hostname"
		if node == "" {
			return Identity{}, fmt.Errorf("identity: %s is unset or empty and os.Hostname returned an empty name; set %s", nodeVar, nodeVar)
		}
	}
	cluster, clusterFrom := get(lookup, clusterVar), clusterVar
	if cluster == "" {
		cluster, clusterFrom = defaultCluster, ""
	}

	if err := checkNode(node, nodeFrom); err != nil {
		return Identity{}, err
	}
	if err := checkCluster(cluster, clusterFrom); err != nil {
		return Identity{}, err
	}
	instance, err := newInstance()
	if err != nil {
		return Identity{}, err
	}
	return Identity{Node: node, Cluster: cluster, Instance: instance}, nil
}

// New builds an identity from explicit values and a fresh random Instance.
// The values are used as given (not trimmed, and an empty cluster is an error
// rather than "default"); errors wrap [ErrInvalid].
func New(node, cluster string) (Identity, error) {
	if err := checkNode(node, ""); err != nil {
		return Identity{}, err
	}
	if err := checkCluster(cluster, ""); err != nil {
		return Identity{}, err
	}
	instance, err := newInstance()
	if err != nil {
		return Identity{}, err
	}
	return Identity{Node: node, Cluster: cluster, Instance: instance}, nil
}

// ParseHolder is the inverse of [Identity.Holder]: it splits s into Node,
// Cluster and Instance and validates them. Errors wrap [ErrInvalid]. The empty
// string, which a store may use for "no holder", is an error too.
func ParseHolder(s string) (Identity, error) {
	parts := strings.Split(s, sep)
	if len(parts) != 3 {
		return Identity{}, &invalidError{fmt.Sprintf("holder %q has %d part(s) separated by %q; want node%scluster%sinstance", s, len(parts), sep, sep, sep)}
	}
	id := Identity{Node: parts[0], Cluster: parts[1], Instance: parts[2]}
	if err := id.Validate(); err != nil {
		var ie *invalidError
		if errors.As(err, &ie) {
			return Identity{}, &invalidError{fmt.Sprintf("holder %q: %s", s, ie.msg)}
		}
		return Identity{}, err
	}
	return id, nil
}

// Validate reports the first problem with id, checking Node, Cluster and
// Instance in that order: empty, longer than its Max*Len limit, or containing
// a character that is not allowed. The error wraps [ErrInvalid], names the
// field, quotes the value and, for a bad character, gives its byte offset.
func (id Identity) Validate() error {
	if err := checkNode(id.Node, ""); err != nil {
		return err
	}
	if err := checkCluster(id.Cluster, ""); err != nil {
		return err
	}
	return checkField("Instance", id.Instance, "", maxInstanceLen, false)
}

// Holder returns "node/cluster/instance", the string stored as the holder of a
// lease. It is unique to one process start because Instance is. Holder does
// not validate id; identities from this package's constructors are valid.
func (id Identity) Holder() string {
	return id.Node + sep + id.Cluster + sep + id.Instance
}

// String returns the same as [Identity.Holder], so an Identity can be logged
// directly.
func (id Identity) String() string { return id.Holder() }

func checkNode(v, from string) error { return checkField("Node", v, from, maxNodeLen, true) }

func checkCluster(v, from string) error {
	return checkField("Cluster", v, from, maxClusterLen, true)
}

// checkField validates one field. from, when not empty, names where the value
// came from (an environment variable or "os.Hostname") and is added to the
// message. allowDot says whether '.' is allowed (Node and Cluster) or not
// (Instance).
func checkField(field, v, from string, limit int, allowDot bool) error {
	src := ""
	if from != "" {
		src = " (from " + from + ")"
	}
	if v == "" {
		return &invalidError{fmt.Sprintf("%s%s is empty", field, src)}
	}
	if len(v) > limit {
		return &invalidError{fmt.Sprintf("%s %q%s is %d bytes long; the limit is %d", field, v, src, len(v), limit)}
	}
	for i := 0; i < len(v); {
		c := v[i]
		if isAlnum(c) || c == '_' || c == '-' || (allowDot && c == '.') {
			i++
			continue
		}
		allowed := "ASCII letters, digits, '_' and '-'"
		if allowDot {
			allowed = "ASCII letters, digits, '.', '_' and '-'"
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		what := fmt.Sprintf("%q", r)
		if r == utf8.RuneError && size == 1 {
			what = fmt.Sprintf("invalid UTF-8 byte 0x%02x", c)
		}
		return &invalidError{fmt.Sprintf("%s %q%s contains %s at byte %d; allowed are %s", field, v, src, what, i, allowed)}
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// get returns the trimmed value of the variable name, or "" when it is unset.
func get(lookup func(string) (string, bool), name string) string {
	v, ok := lookup(name)
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// newInstance returns a random version 4 UUID as 32 lowercase hex characters.
func newInstance() (string, error) {
	u, err := uuid.NewRandom()
	if err != nil {
		return "", fmt.Errorf("identity: generate instance id: %w", err)
	}
	return hex.EncodeToString(u[:]), nil
}
