//go:build unix

package history

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Now returns CLOCK_MONOTONIC in nanoseconds. On Linux every process on the
// machine reads the same clock (outside a time namespace), it never jumps,
// and setting or faking the wall clock does not move it. The value is read
// on Linux with the clock_gettime system call itself, not through the vDSO
// or libc, so an LD_PRELOAD clock faker such as libfaketime cannot move it
// either.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC exists on every supported kernel; failing here
		// means the history would be meaningless.
		panic(fmt.Sprintf("history: clock_gettime(CLOCK_MONOTONIC): %v", err))
	}
	return ts.Nano()
}
