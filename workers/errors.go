package workers

import "errors"

// ErrShutdownOverrun is returned by Host.Run, and carried by
// EventShutdownOverrun, when a worker function was still running
// ShutdownTimeout after shutdown began; its lease expires after TTL. Every
// other error of this package wraps coordination.ErrInvalidConfig (a bad
// config or worker) or coordination.ErrClosed.
var ErrShutdownOverrun = errors.New("leasehold: worker did not return within the shutdown timeout")
