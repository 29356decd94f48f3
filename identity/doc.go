// Package identity says who this process is, for use as the holder of leases
// and as the member of a worker pool.
//
// # What an identity is
//
// An [Identity] has three parts:
//
//   - Node: the machine or pod the process runs on, for example
//     "orders-7d9f8b6c5-x2x7k" or "host.example.com".
//   - Cluster: the group of nodes that per-cluster leases are scoped to
//     (lease names look like cluster/<Cluster>/<name>).
//   - Instance: a random id made when the process builds its identity.
//
// [Identity.Holder] joins them as "node/cluster/instance". That string is what
// a lease row stores as its holder and what logs show; [ParseHolder] turns it
// back into an Identity.
//
// # Why there is an instance id
//
// A holder is one process start, not one host. Two processes on the same host,
// or the same process before and after a restart, share Node and Cluster but
// must be different holders. Otherwise a restarted process would renew its
// predecessor's unexpired lease as if it were its own, at the same epoch, and
// two copies on one host would both believe they hold the same lease. The
// Instance, a version 4 UUID generated at start (32 lowercase hex characters,
// no dashes), makes holders distinct.
//
// Uniqueness of Instance is the whole guarantee: nothing else checks that two
// live processes have different holders. So build the identity once at process
// start (each call of [FromEnv], [FromLookup] or [New] makes a new Instance)
// and never copy an Instance from one process to another. If you
// set Instance yourself, it must be unique across every process that shares
// the database.
//
// # Where the values come from
//
// [FromEnv] reads two environment variables:
//
//   - HOSTNAME gives Node. When it is unset or empty, os.Hostname is used; if
//     that fails too, the error asks you to set HOSTNAME. Kubernetes sets
//     HOSTNAME to the pod name.
//   - CLUSTER_NAME gives Cluster. When it is unset or empty, Cluster is
//     "default".
//
// A variable that is empty or only whitespace counts as unset, and surrounding
// whitespace is trimmed. [FromLookup] does the same through a lookup function
// instead of the process environment: for tests, or to read other variables
// (POD_NAME, say) by mapping their names. [New] takes explicit values.
//
// # Limits and allowed characters
//
// Every constructor validates its result, and [Identity.Validate] checks an
// Identity built by hand:
//
//   - Node: 1 to 128 bytes of ASCII letters, digits, '.', '_'
//     and '-'. Upper case is allowed.
//   - Cluster: 1 to 63 bytes of the same characters.
//   - Instance: 1 to 36 bytes of ASCII letters, digits, '_'
//     and '-'.
//
// '/', ':', whitespace and everything else are rejected, because '/' separates
// the parts of lease names and holders and the others make names ambiguous or
// unreadable in logs. A holder is at most 229 bytes long;
// columns that store holders must be at least that wide.
//
// Invalid values are reported at construction, never repaired: no truncation
// or replacement of characters, which could make two different nodes look the
// same. Every validation error wraps [ErrInvalid] and names the field, quotes
// the value and, for a bad character, gives its byte offset, for example:
//
//	identity: Cluster "eu west" (from CLUSTER_NAME) contains ' ' at byte 2; allowed are ASCII letters, digits, '.', '_' and '-'
package identity
