//go:build linux

package history

import (
	"fmt"
	"syscall"
	"unsafe"
)

// clockMonotonic is CLOCK_MONOTONIC's id in linux/time.h.
const clockMonotonic = 1

// Now returns CLOCK_MONOTONIC in nanoseconds. On Linux every process on the
// machine reads the same clock (outside a time namespace), it never jumps,
// and setting or faking the wall clock does not move it. The value is read
// with the clock_gettime system call itself, not through the vDSO or libc,
// so an LD_PRELOAD clock faker such as libfaketime cannot move it either.
func Now() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		// CLOCK_MONOTONIC exists on every supported kernel; failing here
		// means the history would be meaningless.
		panic(fmt.Sprintf("history: clock_gettime(CLOCK_MONOTONIC): %v", errno))
	}
	return ts.Nano()
}
