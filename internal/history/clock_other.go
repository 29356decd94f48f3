//go:build !linux

package history

// Now would return CLOCK_MONOTONIC in nanoseconds. Histories are recorded
// on Linux only, where Now reads it with the system call itself; here Now
// panics.
func Now() int64 {
	panic("history: Now reads CLOCK_MONOTONIC on Linux only")
}
