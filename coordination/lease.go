package coordination

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// Token is a fencing token: a lease name and the epoch of one term. A
// resource that remembers the highest epoch it accepted can refuse writes
// of older terms; CheckFence checks against the lease row itself.
type Token struct {
	Key   string // full lease name: the row key (see "Names and rows" in the package doc)
	Epoch int64
}

// String formats the token as name@epoch.
func (t Token) String() string { return fmt.Sprintf("%s@%d", t.Key, t.Epoch) }

// Lease is one term of one lease held by this process. It is safe for
// concurrent use.
//
// The term ends, and Context is cancelled, when the session's trust
// deadline passes without a successful renewal or the database shows the
// session expired or the term gone (ErrLeaseLost), on Release
// (ErrReleased), a resign
// (ErrResigned), a step-down after failed health checks (ErrUnhealthy) or
// shutdown (ErrClosed): context.Cause of Context tells which. Whoever
// obtained the lease must Release it once the work done under it has
// returned, also after a loss.
//
// Which liveness probe to use when:
//   - Context: pass it to the work, so that everything the work
//     waits on stops when the term ends. This is the main one.
//   - Valid (or Check, which returns the error): before each unit of work
//     that must not run outside the term. It reads the monotonic clock
//     itself, so it is right at once after a pause, before the timer that
//     cancels Context has fired.
//   - Fence: inside the transaction that commits the work, so the database
//     refuses it once another term began. The only probe that protects
//     the data itself; the others save wasted work.
//   - TrustDeadline: for deciding whether a unit of work fits in the rest
//     of the term (a deadline for a batch, a timeout for a call). It is a
//     moment on this process's monotonic clock, not a context deadline:
//     renewals move it later.
type Lease struct {
	t     *termSet // the owner of its term
	f     *fencer  // its fencing checks and data
	name  string
	epoch int64
	sess  *session // the session the term rides on; its deadline is the term's
	ctx   context.Context

	onRelease func()      // called by the first Release, after the term left the database (keyed locks)
	released  atomic.Bool // Release has been called
}

// Key returns the full lease name, the key of its row (package doc, "Names
// and rows"), such as "cluster/eu-1/reports".
func (l *Lease) Key() string { return l.name }

// Epoch returns the fencing epoch of this term.
func (l *Lease) Epoch() int64 { return l.epoch }

// Token returns the fencing token of this term.
func (l *Lease) Token() Token { return Token{Key: l.name, Epoch: l.epoch} }

// Context returns a context that is cancelled when the term ends. Leader
// work must run under it.
func (l *Lease) Context() context.Context { return l.ctx }

// TrustDeadline returns the moment after which this process must no longer
// act as holder, unless a renewal moves it later.
func (l *Lease) TrustDeadline() time.Time { return l.sess.trustDeadline() }

// Valid reports whether it is safe to act as holder right now, by the
// monotonic clock itself (see Lease).
func (l *Lease) Valid() bool { return l.ctx.Err() == nil && l.sess.trusted() }

// Check returns nil when Valid would report true, and otherwise an error
// wrapping why the term ended: context.Cause of Context, or ErrLeaseLost
// when the trust deadline passed before Context was cancelled.
func (l *Lease) Check() error {
	if l.Valid() {
		return nil
	}
	if cause := context.Cause(l.ctx); cause != nil {
		return fmt.Errorf("lease %q epoch %d: %w", l.name, l.epoch, cause)
	}
	return fmt.Errorf("%w: lease %q epoch %d: trust deadline passed", ErrLeaseLost, l.name, l.epoch)
}

// Fence asserts, inside the caller's transaction tx, that this term still
// holds the lease (same holder and epoch, unexpired by the database
// clock), and locks the lease row until tx ends. When the term is over it
// returns an error wrapping ErrFenced, and the caller must roll back; a tx
// that is not a transaction (from db.Transaction or db.Begin), or nil,
// gives an error wrapping ErrInvalidConfig.
//
// The lock never holds up the session's renewal, except on SQLite, where
// Fence renews the session inside tx: the terms survive back-to-back
// fenced transactions each shorter than (TTL - Margin)/2, and one that
// rolls back renews nothing.
func (l *Lease) Fence(tx *gorm.DB) error {
	if err := requireTransaction(tx, fmt.Sprintf("lease %q epoch %d", l.name, l.epoch)); err != nil {
		return err
	}
	if !l.Valid() {
		return fenced(fmt.Sprintf("lease %q epoch %d", l.name, l.epoch), "this process no longer trusts the term ("+l.Check().Error()+")")
	}
	return l.fence(tx)
}

// fence is the fencing check of the term inside tx, by this process.
func (l *Lease) fence(tx *gorm.DB) error { return l.f.check(tx, l.Token(), l.sess) }

// sessionID returns the id of the session the term rides on.
func (l *Lease) sessionID() string { return l.sess.id }

// Release ends the term and, unless the database already showed it over,
// gives the lease up so a follower can take it at its next attempt. Call
// it after the work done under the lease has returned. It is idempotent,
// and works even when ctx is already cancelled (it runs with
// ShutdownTimeout).
func (l *Lease) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return nil
	}
	if l.onRelease != nil {
		defer l.onRelease()
	}
	var r releaseTicket
	var first bool
	if !l.t.call(func(st *termState) { r, first = st.release(l.name, l) }) {
		// The coordinator stopped without this term, whose work outlived
		// ShutdownTimeout: give it back now that the work has returned.
		l.t.giveBackNow(l.sess, []store.Term{{Name: l.name, Epoch: l.epoch}})
		return nil
	}
	if !first || r.done == nil {
		return nil // the database showed the term over
	}
	return <-r.done
}

// requireTransaction returns an error wrapping ErrInvalidConfig unless tx
// runs on a connection gorm can commit: a fencing check outside a
// transaction would hold its row lock only for its own statement. what
// names the lease or pool in the message.
func requireTransaction(tx *gorm.DB, what string) error {
	var pool gorm.ConnPool
	if tx != nil && tx.Statement != nil {
		pool = tx.Statement.ConnPool
	}
	switch pool.(type) {
	case gorm.TxCommitter:
		return nil
	case nil:
		return fmt.Errorf("%w: %s: tx is nil or has no connection; pass the handle db.Transaction gives its function",
			errNotTransaction, what)
	}
	return fmt.Errorf("%w: %s: tx runs on a %T, not a transaction; pass the handle db.Transaction gives its function, or one from db.Begin",
		errNotTransaction, what, pool)
}
