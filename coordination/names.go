package coordination

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

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
//	lock|<key>|<lock key>                  a keyed lock's row (Locks)
//	lockfloor|<key>|<bucket>               a floor row of keyed locks
//	sem|<key>|<slot>                       a slot of a semaphore
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
// The same holds of the rows of keyed locks and semaphores: <key> is the
// namespace's scoped key, built like an election key, so the first '|'
// after "lock|" ends it and a lock key after it may contain any byte
// ValidateKey allows, '|' included. The rows that start with
// "lock|<key>|" are exactly that namespace's lock rows, and a floor row
// ("lockfloor|", not "lock|") is never among them.
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
// member rows, after which comes the member id. Wake-ups for one member
// ("pool|<key>|wake|<member id>", membership.Rows.Wake) are names of
// wake-ups only: no row is called so.
func poolRowsFor(key string) membership.Rows {
	prefix := "pool" + keySep + key + keySep
	return membership.Rows{Prefix: prefix, Generation: prefix + "generation", Members: prefix + "member" + keySep,
		Wakes: prefix + "wake" + keySep}
}

// poolMemberRow reports whether name is a pool's member row
// (poolRowsFor). Nobody waits to take one, and its member announces its
// release itself once it published the generation without it
// (membership.Member.Leave), so the release wakes nobody
// (store.Options.Quiet): woken by it, every member would race the leaver
// to publish that generation.
func poolMemberRow(name string) bool {
	rest, ok := strings.CutPrefix(name, "pool"+keySep)
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, keySep)
	return ok && strings.HasPrefix(rest, "member"+keySep)
}

// Keyed locks: the prefixes of their rows and the number of floor rows of
// a namespace (store/floored.go): a lock row's epochs continue from one
// of them, picked by a hash of the lock key.
const (
	lockRowPrefix   = "lock" + keySep
	lockFloorPrefix = "lockfloor" + keySep
	lockFloors      = 64
)

// MaxKeyLen is the longest lock key accepted (ValidateKey). The row key,
// "lock|" + the namespace's scoped key + "|" + the lock key, must also
// fit the 255 bytes of the name column.
const MaxKeyLen = 100

// maxRowName is the longest row key the name column holds.
const maxRowName = 255

// ValidateKey checks a lock key (Locks): 1 to MaxKeyLen bytes of
// printable ASCII, space included, so that it compares byte for byte on
// every database. Any other byte is refused; the error names the value
// and the first bad byte.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: lock key is empty", ErrInvalidName)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: lock key %q is %d bytes long; the limit is %d", ErrInvalidName, key, len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; b < 0x20 || b > 0x7e {
			return fmt.Errorf("%w: lock key %q has byte 0x%02x at %d; allowed is printable ASCII (0x20 to 0x7e)",
				ErrInvalidName, key, b, i)
		}
	}
	return nil
}

// lockRow is the row key of a lock key of the namespace ns (a scoped key
// from leaseName).
func lockRow(ns, key string) string { return lockRowPrefix + ns + keySep + key }

// lockFloor is the floor row of a lock row: "lockfloor|<ns>|<bucket>",
// the bucket a hash of the lock key. It reports false for a row key that
// is not a lock row's.
func lockFloor(row string) (string, bool) {
	rest, ok := strings.CutPrefix(row, lockRowPrefix)
	if !ok {
		return "", false
	}
	ns, key, ok := strings.Cut(rest, keySep)
	if !ok {
		return "", false
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return lockFloorPrefix + ns + keySep + strconv.Itoa(int(h.Sum32()%lockFloors)), true
}

// semRow is the row key of slot i of the semaphore ns.
func semRow(ns string, i int) string { return "sem" + keySep + ns + keySep + strconv.Itoa(i) }
