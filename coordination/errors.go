package coordination

import (
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/coordination/internal/membership"
	"github.com/leasehold/leasehold/internal/store"
)

// Errors returned by this package. Compare with errors.Is: most are wrapped
// with details such as the lease name and the values involved.
var (
	// ErrInvalidConfig is wrapped by every configuration error; the message
	// names the field and its value.
	ErrInvalidConfig = errors.New("leasehold: invalid config")

	// ErrInvalidName is returned for an election or pool name that is
	// empty, too long, has characters outside the allowed set, or has an
	// empty, "." or ".." segment (see ValidateName).
	ErrInvalidName = errors.New("leasehold: invalid name")

	// ErrLeaseLost is the cause of a lease's context when this process
	// stopped trusting the lease: its trust deadline passed without a
	// successful renewal, or the database showed another holder or epoch.
	ErrLeaseLost = errors.New("leasehold: lease lost")

	// ErrReleased is the cause of a lease's context after Release.
	ErrReleased = errors.New("leasehold: lease released")

	// ErrFenced is returned by fencing checks when this process no longer
	// holds the lease at the given epoch, or the lease has expired by the
	// database clock. The caller's transaction must be rolled back.
	ErrFenced = errors.New("leasehold: fenced: lease no longer held at this epoch")

	// ErrNotInTransaction is returned by Lease.Fence, Coordinator.CheckFence
	// and Assignment.Fence when the handle they are given is nil or is not
	// inside a transaction (such as the *gorm.DB the application opened,
	// rather than the one db.Transaction passes to its function). The
	// fencing check locks the lease row until the transaction ends; outside
	// one the lock ends with the check's own statement and protects
	// nothing, so the check is refused rather than passed.
	ErrNotInTransaction = errors.New("leasehold: fencing check needs a handle inside a transaction")

	// ErrPoolMode is wrapped by the EventError of a pool member that does
	// not join, or does not work, because live members run the pool in
	// the other mode (Pool.Run by index and count, or RunPartitions with
	// PoolConfig.Partitions) or with another number of partitions. It
	// retries at every read; the pool goes on in its mode.
	ErrPoolMode = membership.ErrMode

	// ErrClosed is returned by operations on a coordinator that has
	// stopped, and is the cause of lease contexts cancelled by shutdown.
	ErrClosed = errors.New("leasehold: coordinator stopped")

	// ErrAlreadyRunning is returned by a second call of Run.
	ErrAlreadyRunning = errors.New("leasehold: coordinator is already running")

	// ErrBusy is returned by Campaign, Run and TryAcquire on an election
	// that already has an active campaign, attempt or term in this process.
	ErrBusy = errors.New("leasehold: election already has an active campaign in this process")

	// ErrNotAcquired is returned by Election.TryAcquire when the lease
	// could not be taken because of who has it: another live holder (the
	// message names the holder and epoch, also when it took the lease
	// during the attempt), a resign that prefers another holder for a
	// while, or this process holding off after resigning it. A pool join
	// refused because another live session has the membership's row
	// reports it too. It never means that this process lost trust in its
	// own session: that is ErrSessionLost.
	ErrNotAcquired = errors.New("leasehold: lease is held by another holder")

	// ErrSessionLost is returned by Election.TryAcquire, and reported for
	// a pool join, when this process stopped trusting its own session
	// while the lease was being taken: the session's trust deadline
	// passed without a successful renewal, or a renewal found the session
	// gone. The database may have granted the term; it is given back at
	// once and no Lease is returned. Nobody else need hold the lease: a
	// later attempt starts a new session and may take it.
	ErrSessionLost = errors.New("leasehold: session lost")

	// ErrResigned is the cause of a lease's context when its term ended
	// because a resign was requested for it (Coordinator.Resign): the
	// work is cancelled, the lease is released once it has returned, and
	// this process holds off taking the lease again for a while, so
	// another process takes over.
	ErrResigned = errors.New("leasehold: resign requested")

	// ErrUnhealthy is the cause of a lease's context when its term ended
	// because this process failed Config.HealthFailures health checks in
	// a row (Config.HealthCheck), and is wrapped by the error of
	// Election.TryAcquire while the last health check failed.
	ErrUnhealthy = errors.New("leasehold: process is unhealthy")

	// ErrUnknownLease is returned by Coordinator.Resign for a name that
	// has no lease row; the message names it.
	ErrUnknownLease = errors.New("leasehold: unknown lease")

	// ErrNotHeld is returned by Coordinator.Resign for a lease that has no
	// live holder: there is nothing to resign. The message names it.
	ErrNotHeld = errors.New("leasehold: lease is not held")

	// ErrSchemaMissing is returned by Run when auto-migration is disabled
	// and the coordination tables are missing or outdated. The message
	// says how to migrate.
	ErrSchemaMissing = store.ErrSchemaMissing

	// ErrUnsupportedDialect is returned by New for a database leasehold
	// does not support.
	ErrUnsupportedDialect = store.ErrUnsupportedDialect
)

// FenceError describes a failed fencing check. It wraps ErrFenced.
//
// A check of a lease (Lease.Fence, Coordinator.CheckFence, and the
// membership part of Assignment.Fence) sets Name and Epoch. Assignment.Fence's
// check of the pool's generation sets Pool, with Name the pool's key and
// Generation the generation the assignment claimed; Epoch is then the
// epoch of the membership lease.
type FenceError struct {
	Name       string // full lease name, or the pool's key when Pool is set
	Epoch      int64  // the epoch the caller claimed
	Pool       bool   // the pool's generation was checked, not a lease
	Generation int64  // with Pool: the generation the caller claimed
	Reason     string // what the check found
}

func (e *FenceError) Error() string {
	if e.Pool {
		return fmt.Sprintf("%s: pool %q generation %d: %s", ErrFenced.Error(), e.Name, e.Generation, e.Reason)
	}
	return fmt.Sprintf("%s: lease %q epoch %d: %s", ErrFenced.Error(), e.Name, e.Epoch, e.Reason)
}

// Unwrap makes errors.Is(err, ErrFenced) true.
func (e *FenceError) Unwrap() error { return ErrFenced }
