package coordination

import (
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/coordination/internal/membership"
	"github.com/leasehold/leasehold/internal/store"
)

// Errors returned by this package. Compare with errors.Is: most are
// wrapped with details such as the lease name and the values involved.
var (
	// ErrInvalidConfig is wrapped by every error of a bad configuration,
	// name, key or argument, which names the field and its value; also of
	// a database leasehold does not support, a transaction pooler the
	// driver's prepared statements do not survive, a fencing check outside
	// a transaction, and a pool member in another mode than the others.
	ErrInvalidConfig = store.ErrInvalidConfig

	// ErrNotAcquired is returned by an attempt that found the lease taken:
	// by another live holder (the message names it), reserved by a resign
	// for another holder, or held off after this process resigned it.
	ErrNotAcquired = errors.New("leasehold: lease is held by another holder")

	// ErrBusy is returned while something else of this process is at the
	// same lease: another Campaign, Run, TryAcquire or unreleased Lease of
	// the election, another Run of the pool, or an earlier attempt's
	// give-back. No other process need hold it; try again.
	ErrBusy = errors.New("leasehold: busy in this process")

	// ErrLeaseLost is the cause of a lease's context when this process
	// stopped trusting the term: the trust deadline passed, or the database
	// showed its session or the term gone. An attempt that lost its
	// session's trust while taking a lease wraps it too.
	ErrLeaseLost = errors.New("leasehold: lease lost")

	// ErrReleased is the cause of a lease's context after Release.
	ErrReleased = errors.New("leasehold: lease released")

	// ErrResigned is the cause of a lease's context when its term was asked
	// to resign (Admin.Resign).
	ErrResigned = errors.New("leasehold: resign requested")

	// ErrUnhealthy is the cause of a lease's context after
	// Config.HealthFailures failed health checks in a row, and is wrapped
	// by an attempt's error while the last check failed.
	ErrUnhealthy = errors.New("leasehold: process is unhealthy")

	// ErrFenced is wrapped by the error of a fencing check that found the
	// term over (another holder or epoch, or expired by the database
	// clock), which says what it found. Roll the caller's transaction back.
	ErrFenced = errors.New("leasehold: fenced: lease no longer held at this epoch")

	// ErrClosed is returned by operations on a stopped coordinator and by
	// a second Run, and is the cause of lease contexts ended by shutdown.
	ErrClosed = errors.New("leasehold: coordinator stopped")

	// ErrNotHeld is returned by Admin.Resign for a lease with no row or no
	// live holder.
	ErrNotHeld = errors.New("leasehold: lease is not held")

	// ErrSchemaMissing is returned by Run with DisableAutoMigrate when the
	// coordination tables are missing or outdated; it says how to migrate.
	ErrSchemaMissing = store.ErrSchemaMissing
)

// Details of the sentinels, which callers inside the package tell apart.
var (
	errSessionLost    = fmt.Errorf("%w: this process stopped trusting its session", ErrLeaseLost)
	errAlreadyRunning = fmt.Errorf("%w: Run was called already; a Coordinator runs once", ErrClosed)
	errInvalidName    = fmt.Errorf("%w: invalid name", ErrInvalidConfig)
	errNotTransaction = fmt.Errorf("%w: a fencing check needs a handle inside a transaction", ErrInvalidConfig)
)

// invalid makes err, a store's refusal of its input, an ErrInvalidConfig.
func invalid(err error) error {
	if errors.Is(err, ErrInvalidConfig) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
}

// poolModeError makes the failure of a member whose pool live members run
// in another mode an ErrInvalidConfig.
func poolModeError(err error) error {
	if errors.Is(err, membership.ErrMode) && !errors.Is(err, ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return err
}

// fenced is the error of a failed fencing check of what (a lease, or a
// pool's generation or partition) at its epoch: reason says what it found.
func fenced(what string, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrFenced, what, reason)
}
