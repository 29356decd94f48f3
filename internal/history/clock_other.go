//go:build !unix

package history

// Now would return CLOCK_MONOTONIC in nanoseconds. This system has no clock
// shared by every process, so histories cannot be recorded here; Now panics.
func Now() int64 {
	panic("history: Now needs CLOCK_MONOTONIC, which this operating system does not provide")
}
