// Package membership is the member protocol of a pool: join, read the
// pool's rows, publish the next generation, revoke the work of older
// generations and acknowledge, assign, leave, prune the rows of dead
// members, and decide when to read again.
//
// A [Member] is one process's membership of one pool for one run of it,
// driven by the coordinator's Pool.Run: it calls Step, and sleeps until
// NextRead, a wake-up or the end of the membership (Lost). What the
// protocol needs from outside is handed to New behind small interfaces.
// Its guarantees are those the coordination package's Pool documents.
package membership

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// Store is the protocol's slice of the store: the pool's rows, the
// acknowledgement in a member row, the compare-and-set publish of a
// generation and the pruning of dead members' rows.
type Store interface {
	EnsureRows(ctx context.Context, names []string) error
	List(ctx context.Context, prefix string) ([]store.Row, error)
	// SetData writes an acknowledgement into the member row and, once it
	// wrote and unless wake is "", wakes the processes for the name wake
	// (Rows.Wake), in the same statement where the database can.
	SetData(ctx context.Context, session string, t store.Term, data, wake string) (bool, error)
	Publish(ctx context.Context, name string, from int64, data string) (bool, error)
	PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error)
}

// Lease is a membership: this member's term of its member row, renewed
// with every other lease of the process.
type Lease interface {
	Key() string     // the member row's key
	Epoch() int64    // the term's epoch
	Session() string // the session that holds the term
	// Valid reports whether the process still trusts the term.
	Valid() bool
	// Context ends when the term does.
	Context() context.Context
	Release(ctx context.Context) error
}

// Joiner takes memberships.
type Joiner interface {
	// MayJoin reports whether the process may join now (not while its
	// health checks fail).
	MayJoin() bool
	// NewID returns the member id of a new membership, one the process
	// never used in this pool: a row pruned and created anew starts its
	// epochs at 1 again, and must not hand out an earlier fencing token.
	NewID() string
	// Join takes the member row named row.
	Join(ctx context.Context, row string) (Lease, error)
}

// Notifier wakes the other processes for a change to a row. It is a
// hint: a failure is the notifier's to log.
type Notifier interface {
	Notify(ctx context.Context, row string)
}

// Assignment is this member's share of one generation.
type Assignment struct {
	Index      int      // this member's index, 0 <= Index < Count
	Count      int      // number of members in the generation
	Generation int64    // the generation
	Members    []string // member ids in index order
	Lease      Lease    // the membership the assignment rides on
}

// Worker runs the work of a generation.
type Worker interface {
	// Start is called when the member starts working in a generation. It
	// returns the work, which the member runs in a goroutine of its own
	// under a context that ends when the generation is superseded, the
	// membership ends or the context of Step ends. The member waits for
	// the work to return before it acknowledges a newer generation.
	Start(a Assignment) (run func(ctx context.Context))
	// Stopped is called once the work of the last Start has returned
	// after a newer generation or the loss of the membership ended it;
	// not on Leave.
	Stopped()
}

// Reporter receives what the member has to tell besides its log.
type Reporter interface {
	// Read reports the generation and member count of each read.
	Read(generation int64, members int)
	// Failed reports each failed statement of a step, and work that did
	// not return on Leave.
	Failed(err error)
	// Rebalanced reports how long the member was out of work before it
	// settled in a new generation (see NoteSettled).
	Rebalanced(d time.Duration, generation int64)
}

// Config is what a Member is built from.
type Config struct {
	Pool   string        // the pool's key, for logs and errors
	Rows   Rows          // the names of the pool's rows
	Holder string        // this process's holder string
	Poll   time.Duration // how often to read when settled; the shortest wait after a failed step
	// StepTimeout bounds the statements of one Step. ShutdownTimeout
	// bounds the wait for the work on Leave, and is how often a wait for
	// work that does not return is logged. PruneAfter is how long a
	// member row must have been unheld, or its session dead, before it
	// is pruned.
	StepTimeout, ShutdownTimeout, PruneAfter time.Duration

	Store    Store
	Joiner   Joiner
	Notifier Notifier
	Worker   Worker
	Reporter Reporter
	Log      *zap.Logger      // the pool's logger
	Now      func() time.Time // the clock; time.Now when nil

	// Partitions, when above 0, makes the pool sticky: the member runs the
	// partitions the generation's map gives it through Parts, and Worker
	// is not used.
	Partitions int
	Parts      PartitionWorker
	// Static says the member id is the process's stable identity, the same
	// after a restart. AwayGrace is how long after a static member's row
	// stopped being live its partitions wait for it to come back.
	Static    bool
	AwayGrace time.Duration
}
