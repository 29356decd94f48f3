package coordination

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"go.uber.org/zap/zapcore"

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

// maxNameLen is the longest election name accepted.
const maxNameLen = 128

// validateName checks an election, pool or worker name: 1 to maxNameLen
// bytes of ASCII letters, digits, '.', '_', '-', ':' and '/', where '/'
// separates non-empty segments other than "." and "..". Every other byte,
// '|' above all, is reserved for row keys. The error names the value and
// the first bad byte or segment.
func validateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: name is empty", errInvalidName)
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("%w: name %q is %d bytes long; the limit is %d", errInvalidName, name, len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9') ||
			b == '.' || b == '_' || b == '-' || b == ':' || b == '/' {
			continue
		}
		return fmt.Errorf("%w: name %q has %q at byte %d; allowed are ASCII letters, digits, '.', '_', '-', ':' and '/'",
			errInvalidName, name, rune(b), i)
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			continue
		}
		switch seg := name[start:i]; seg {
		case "":
			return fmt.Errorf("%w: name %q has an empty segment at byte %d; '/' must not start or end a name or follow another '/'",
				errInvalidName, name, start)
		case ".", "..":
			return fmt.Errorf("%w: name %q has the segment %q at byte %d; '.' and '..' are not allowed as segments",
				errInvalidName, name, seg, start)
		}
		start = i + 1
	}
	return nil
}

// Row keys: every row of the lease table is named by the functions below
// and by no other code (the package doc lists the keys). Names and cluster
// names never contain '|', and cluster names never contain '/'. So an
// election key decodes to one scope, cluster and name; the first '|' after
// "pool|", "lock|" or "sem|" ends the owner's scoped key; and the rows
// under a prefix such as "pool|<key>|" or "pool|<key>|member|" are exactly
// that pool's (members'), whatever other pools are called. Listing a pool
// and pruning its dead members only ever touch that pool's rows.

// keySep separates the parts of a row key; no name or cluster name has it.
const keySep = "|"

// leaseName encodes a scoped election name as its lease row name,
// "cluster/<cluster>/<name>" or "global/<name>", which is also the key of
// a pool, a lock namespace or a semaphore of that scope and name.
func leaseName(scope Scope, cluster, name string) (string, error) {
	if err := validateName(name); err != nil {
		return "", err
	}
	switch scope {
	case ClusterScope:
		return "cluster/" + cluster + "/" + name, nil
	case GlobalScope:
		return "global/" + name, nil
	}
	return "", fmt.Errorf("%w: scope %d is neither ClusterScope nor GlobalScope", errInvalidName, int(scope))
}

// poolRowsFor names the rows of the pool with the given key; its
// "pool|<key>|wake|<member id>" names are wake-ups only, never rows.
func poolRowsFor(key string) membership.Rows {
	prefix := "pool" + keySep + key + keySep
	return membership.Rows{Prefix: prefix, Generation: prefix + "generation", Members: prefix + "member" + keySep,
		Wakes: prefix + "wake" + keySep}
}

// poolMemberRow reports whether name is a pool's member row, whose
// release wakes nobody (store.Options.Quiet): its member announces the
// generation without it itself.
func poolMemberRow(name string) bool {
	rest, ok := strings.CutPrefix(name, "pool"+keySep)
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, keySep)
	return ok && strings.HasPrefix(rest, "member"+keySep)
}

// Keyed locks: the prefixes of their rows, and the number of floor rows of
// a namespace, from one of which a lock row's epochs continue.
const (
	lockRowPrefix   = "lock" + keySep
	lockFloorPrefix = "lockfloor" + keySep
	lockFloors      = 64
)

// maxKeyLen is the longest lock key accepted (validateKey). The row key,
// "lock|" + the namespace's scoped key + "|" + the lock key, must also
// fit the 255 bytes of the name column.
const maxKeyLen = 100

// maxRowName is the longest row key the name column holds.
const maxRowName = 255

// validateKey checks a lock key: 1 to maxKeyLen bytes of printable ASCII,
// space included. The error names the value and the first bad byte.
func validateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: lock key is empty", errInvalidName)
	}
	if len(key) > maxKeyLen {
		return fmt.Errorf("%w: lock key %q is %d bytes long; the limit is %d", errInvalidName, key, len(key), maxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; b < 0x20 || b > 0x7e {
			return fmt.Errorf("%w: lock key %q has byte 0x%02x at %d; allowed is printable ASCII (0x20 to 0x7e)",
				errInvalidName, key, b, i)
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
func semRow(ns string, i int) string { return semRowPrefix + ns + keySep + strconv.Itoa(i) }

// semRowPrefix starts the row key of every semaphore slot.
const semRowPrefix = "sem" + keySep

// grantLevel is the level of the lines that log the acquire and release
// of the row name: debug for a keyed lock's and a semaphore slot's, which
// come and go with every call, info for a leadership's.
func grantLevel(name string) zapcore.Level {
	if strings.HasPrefix(name, lockRowPrefix) || strings.HasPrefix(name, semRowPrefix) {
		return zapcore.DebugLevel
	}
	return zapcore.InfoLevel
}
