// Package testlink gives the tests that need a real database, which live
// in a module of their own (tests/, so that the library's module requires
// no database driver), what packages coordination and workers keep to
// themselves, without making it public API. The packages set the
// functions when they are initialised; nothing else calls them.
package testlink

// Worker is one worker of a host, as its tests see it.
type Worker struct {
	Name string
	// Done is closed when the worker's goroutine has returned.
	Done <-chan struct{}
}

var (
	// Workers returns the workers of the *workers.Host h, in the order
	// they were given to NewHost.
	Workers func(h any) []Worker

	// WorkerPoolKey returns the key of the coordination pool of the
	// partitioned or sticky worker w (a workers.Worker) of the
	// *workers.Host h.
	WorkerPoolKey func(h, w any) string

	// EncodeSchedule returns the lease data that holds the
	// workers.ScheduleState s: the inverse of workers.DecodeScheduleState.
	EncodeSchedule func(s any) string
)
