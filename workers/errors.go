package workers

import (
	"errors"

	"github.com/leasehold/leasehold/coordination"
)

// Errors returned by this package. Compare with errors.Is: most are wrapped
// with details such as the worker name and the values involved.
var (
	// ErrInvalidConfig is wrapped by every configuration error of NewHost;
	// the message names the field and its value. Errors of the embedded
	// coordination config also wrap coordination.ErrInvalidConfig.
	ErrInvalidConfig = errors.New("leasehold: invalid host config")

	// ErrInvalidWorker is wrapped by NewHost's errors about its workers:
	// none given, a nil worker or function, a bad name (also wrapping
	// coordination.ErrInvalidName), a bad PartitionConfig (also wrapping
	// coordination.ErrInvalidConfig), or two workers of the same kind and
	// name.
	ErrInvalidWorker = errors.New("leasehold: invalid worker")

	// ErrAlreadyRunning is returned by a second call of Host.Run.
	ErrAlreadyRunning = errors.New("leasehold: Run was already called on this host")

	// ErrPanicked is wrapped by every *PanicError: a worker function
	// panicked, and the host recovered. It is coordination.ErrPanicked.
	ErrPanicked = coordination.ErrPanicked

	// ErrShutdownOverrun is returned by Host.Run, and carried by
	// EventShutdownOverrun, when a worker function was still running
	// ShutdownTimeout after shutdown began. Its goroutine is left running
	// and its lease is not released: the lease expires after TTL.
	ErrShutdownOverrun = errors.New("leasehold: worker did not return within the shutdown timeout")
)

// PanicError is the error a worker function's panic is turned into. It
// wraps ErrPanicked, and the panic value too when that is an error. It is
// coordination.PanicError: workers run on the term loops of package
// coordination, so elections, pools and workers share one panic policy.
type PanicError = coordination.PanicError
