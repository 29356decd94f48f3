package coordination

import (
	"fmt"
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
// name reads the same everywhere it is shown or used as a key. The error
// names the value and the first bad byte or segment.
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

// leaseName encodes a scoped election name as the lease row name:
// "cluster/<cluster>/<name>" or "global/<name>". Cluster names cannot
// contain '/', so the encoding cannot collide.
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
