package coordination

import (
	"fmt"

	"github.com/leasehold/leasehold/coordination/internal/membership"
)

// Scope says who competes for an election.
type Scope int

const (
	// ClusterScope elections are won by one process per cluster
	// (identity.Identity.Cluster). It is the zero value.
	ClusterScope Scope = iota
	// GlobalScope elections are won by one process across all clusters
	// that share the database.
	GlobalScope
)

// String returns "cluster" or "global".
func (s Scope) String() string {
	switch s {
	case ClusterScope:
		return "cluster"
	case GlobalScope:
		return "global"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// MaxNameLen is the longest election name accepted.
const MaxNameLen = 128

// ValidateName checks an election, pool or worker name: 1 to MaxNameLen
// bytes of ASCII letters, digits, '.', '_', '-', ':' and '/'. The '/'
// separates segments, like a path: every segment must be non-empty (no
// leading, trailing or doubled '/') and neither "." nor "..", so that a
// name reads the same everywhere it is shown or used as a key. Every other
// byte, '|' in particular, is reserved: row keys use '|' as a separator, so
// no name can produce the key of another election or pool. The error names
// the value and the first bad byte or segment.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: name is empty", ErrInvalidName)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: name %q is %d bytes long; the limit is %d", ErrInvalidName, name, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9') ||
			b == '.' || b == '_' || b == '-' || b == ':' || b == '/' {
			continue
		}
		return fmt.Errorf("%w: name %q has %q at byte %d; allowed are ASCII letters, digits, '.', '_', '-', ':' and '/'",
			ErrInvalidName, name, rune(b), i)
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			continue
		}
		switch seg := name[start:i]; seg {
		case "":
			return fmt.Errorf("%w: name %q has an empty segment at byte %d; '/' must not start or end a name or follow another '/'",
				ErrInvalidName, name, start)
		case ".", "..":
			return fmt.Errorf("%w: name %q has the segment %q at byte %d; '.' and '..' are not allowed as segments",
				ErrInvalidName, name, seg, start)
		}
		start = i + 1
	}
	return nil
}

// Row keys. Every row of the lease table is named by the functions below and by no
// other code. The keys are:
//
//	cluster/<cluster>/<name>               election, ClusterScope
//	global/<name>                          election, GlobalScope
//	pool|<key>|generation                  a pool's generation row
//	pool|<key>|member|<member id>           a pool member's lease
//
// <key> is the pool's own scoped key, built like an election key. Names
// (ValidateName) and cluster names (package identity) never contain '|',
// and cluster names never contain '/'. Hence:
//
//   - an election key has no '|' and a pool row key starts with "pool|", so
//     no election key equals or extends a pool row key, or the reverse;
//   - in a pool row key the first '|' ends <key>, so the rows that start
//     with "pool|<key>|" are exactly the rows of that pool, and those that
//     start with "pool|<key>|member|" are exactly its member rows, whatever
//     other pools are called (pools "a" and "a/member/x" have the prefixes
//     "pool|global/a|" and "pool|global/a/member/x|");
//   - an election key is "global/" followed by the name, or "cluster/", a
//     cluster name without '/', '/' and the name, so it decodes to exactly
//     one scope, cluster and name.
//
// Listing a pool and pruning its dead members therefore only ever touch
// that pool's rows. '|' needs no escaping in a LIKE pattern on any
// supported database, and the store matches prefixes by byte range, not
// LIKE. Schema version 3 renamed the pool rows of earlier versions
// ("pool/<key>/generation", "pool/<key>/member/<instance>"), which could
// collide (see internal/store/schema.go).

// keySep separates the parts of a pool row key. ValidateName and package
// identity reject it, which is what makes the keys unambiguous.
const keySep = "|"

// leaseName encodes a scoped election name as the lease row name:
// "cluster/<cluster>/<name>" or "global/<name>". The same string is a
// pool's key. Cluster names cannot contain '/', so the encoding cannot
// collide.
func leaseName(scope Scope, cluster, name string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	switch scope {
	case ClusterScope:
		return "cluster/" + cluster + "/" + name, nil
	case GlobalScope:
		return "global/" + name, nil
	}
	return "", fmt.Errorf("%w: scope %d is neither ClusterScope nor GlobalScope", ErrInvalidName, int(scope))
}

// poolRowsFor names the rows of the pool with the given key (from
// leaseName): its prefix, its generation row, and the prefix of its
// member rows, after which comes the member id.
func poolRowsFor(key string) membership.Rows {
	prefix := "pool" + keySep + key + keySep
	return membership.Rows{Prefix: prefix, Generation: prefix + "generation", Members: prefix + "member" + keySep}
}
