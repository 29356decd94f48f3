package coordination

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// Token is a fencing token: a lease name and the epoch of one term. Epochs
// of a name only grow, and every new term gets a new one, so a resource
// that remembers the highest epoch it accepted can refuse writes from an
// older term. CheckFence does that against the lease row itself.
type Token struct {
	Name  string // full lease name: the row key (see "Names and rows" in the package doc)
	Epoch int64
}

// String formats the token as name@epoch.
func (t Token) String() string { return fmt.Sprintf("%s@%d", t.Name, t.Epoch) }

// Lease is one term of one lease held by this process. It is safe for
// concurrent use.
//
// The term ends, and Context is cancelled, at the first of: the trust
// deadline of the process's session passing without a successful renewal,
// the database showing that session expired, Release, a resign request
// (Coordinator.Resign), a step-down after failed health checks
// (Config.HealthCheck), or the coordinator shutting down. context.Cause
// of Context tells which (ErrLeaseLost, ErrReleased, ErrResigned,
// ErrUnhealthy, ErrClosed). Whoever obtained the lease must call Release once the work
// done under it has returned, including after a loss.
//
// Which liveness probe to use when:
//   - Context (or Done): pass it to the work, so that everything the work
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

// Key returns the full lease name, the key of its row: such as
// "cluster/eu-1/reports" or "global/billing" for elections, and
// "pool|global/orders|member|<instance>" for pool membership.
func (l *Lease) Key() string { return l.name }

// Epoch returns the fencing epoch of this term.
func (l *Lease) Epoch() int64 { return l.epoch }

// Token returns the fencing token of this term.
func (l *Lease) Token() Token { return Token{Name: l.name, Epoch: l.epoch} }

// Context returns a context that is cancelled when the term ends. Leader
// work must run under it.
func (l *Lease) Context() context.Context { return l.ctx }

// Done is shorthand for Context().Done().
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// TrustDeadline returns the current trust deadline: the moment, on this
// process's monotonic clock, after which it must no longer act as holder
// unless a renewal extends it.
func (l *Lease) TrustDeadline() time.Time { return l.sess.trustDeadline() }

// Valid reports whether it is safe to act as holder right now. It reads
// the monotonic clock itself and needs no goroutine to have run, so a
// process resumed after a long pause sees false at once, even before the
// timer that cancels Context has fired. Call it before each unit of work.
func (l *Lease) Valid() bool { return l.ctx.Err() == nil && l.sess.trusted() }

// Check returns nil when Valid would report true, and otherwise an error
// that wraps the reason the term ended (ErrLeaseLost, ErrReleased,
// ErrClosed).
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
// holds the lease: same holder and epoch, and unexpired by the database
// clock. It locks the lease row so the holder cannot change until tx ends.
// When the check fails it returns an error wrapping ErrFenced and the
// caller must roll back.
//
// On PostgreSQL, MySQL and SQL Server the lock is on the lease row only,
// and the renewal of the process's session, a row of its own, never waits
// for it. On SQLite a writing transaction excludes every other writer, so
// tx holds off the session's renewal until it ends; there Fence also
// renews the session inside tx, which makes tx a writing transaction at
// the check, and the holder trusts such a renewal once it sees it
// committed. Its terms then survive any run of fenced transactions in
// which less than TTL - Margin passes from one committed check to the
// commit of the next: back to back, each shorter than (TTL - Margin)/2,
// which RenewInterval never exceeds. A transaction that rolls back renews
// nothing.
//
// tx must be the handle of a transaction (the one db.Transaction passes to
// its function, or one from db.Begin); any other handle, and nil, is
// refused with an error wrapping ErrNotInTransaction.
func (l *Lease) Fence(tx *gorm.DB) error {
	if err := requireTransaction(tx, fmt.Sprintf("lease %q epoch %d", l.name, l.epoch)); err != nil {
		return err
	}
	if !l.Valid() {
		return &FenceError{Name: l.name, Epoch: l.epoch, Reason: "this process no longer trusts the term (" + l.Check().Error() + ")"}
	}
	return l.fence(tx)
}

// fence is the fencing check of the term inside tx, by this process.
func (l *Lease) fence(tx *gorm.DB) error { return l.f.check(tx, l.Token(), l.sess) }

// sessionID returns the id of the session the term rides on.
func (l *Lease) sessionID() string { return l.sess.id }

// Release ends the term and, unless the database already showed it over,
// gives the lease up in the database so a follower can take it on its next
// attempt. Call it after the work done under the lease has returned. It
// works even when ctx is already cancelled (it runs with ShutdownTimeout),
// and it is idempotent. The release statement only matches this holder
// and epoch, so it can never touch a newer term.
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
	t := l.t
	err := <-r.done
	log := t.log.With(zap.String("lease", l.name), zap.Int64("epoch", l.epoch))
	if err != nil {
		err = fmt.Errorf("coordination: release lease %q epoch %d (it is free once its session expires): %w", l.name, l.epoch, err)
		log.Warn("release failed", zap.Error(err))
		t.events.emit(Event{Kind: EventError, Lease: l.name, Epoch: l.epoch, Err: err})
		return err
	}
	if r.wasHeld {
		t.metrics.released()
		log.Info("released lease")
		t.events.emit(Event{Kind: EventReleased, Lease: l.name, Holder: t.holder, Epoch: l.epoch})
	}
	return nil
}

// requireTransaction returns an error wrapping ErrNotInTransaction unless
// tx is inside a transaction, that is, its statements run on a connection
// gorm can commit (*sql.Tx, or gorm's prepared-statement transaction). A
// fencing check outside a transaction would hold its row lock only for its
// own statement. what names the lease or pool in the message.
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
			ErrNotInTransaction, what)
	}
	return fmt.Errorf("%w: %s: tx runs on a %T, not a transaction; pass the handle db.Transaction gives its function, or one from db.Begin",
		ErrNotInTransaction, what, pool)
}
