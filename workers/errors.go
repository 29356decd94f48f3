package workers

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Compare with errors.Is: most are wrapped
// with details such as the worker name and the values involved.
var (
	// ErrInvalidConfig is wrapped by every configuration error of NewHost;
	// the message names the field and its value. Errors of the embedded
	// coordination config also wrap coordination.ErrInvalidConfig.
	ErrInvalidConfig = errors.New("workers: invalid config")

	// ErrInvalidWorker is wrapped by NewHost's errors about its workers:
	// none given, a nil worker or function, a bad name (also wrapping
	// coordination.ErrInvalidName), a bad PartitionConfig (also wrapping
	// coordination.ErrInvalidConfig), or two workers of the same kind and
	// name.
	ErrInvalidWorker = errors.New("workers: invalid worker")

	// ErrAlreadyRunning is returned by a second call of Host.Run.
	ErrAlreadyRunning = errors.New("workers: Run was already called on this host")

	// ErrPanicked is wrapped by every *PanicError: a worker function
	// panicked, and the host recovered.
	ErrPanicked = errors.New("workers: worker function panicked")

	// ErrShutdownOverrun is returned by Host.Run, and carried by
	// EventShutdownOverrun, when a worker function was still running
	// ShutdownTimeout after shutdown began. Its goroutine is left running
	// and its lease is not released: the lease expires after TTL.
	ErrShutdownOverrun = errors.New("workers: worker did not return within the shutdown timeout")
)

// PanicError is the error a worker function's panic is turned into. It
// wraps ErrPanicked, and the panic value too when that is an error.
type PanicError struct {
	// Value is what the function passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// formats it.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%s: %v", ErrPanicked.Error(), e.Value)
}

// Unwrap makes errors.Is(err, ErrPanicked) true, and errors.Is and
// errors.As see the panic value when it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrPanicked, err}
	}
	return []error{ErrPanicked}
}
