//go:build chaosclock

package main

import _ "unsafe" // for go:linkname

// clockInjectable reports whether setWallOffset moves the wall clock.
const clockInjectable = true

// setWallOffset sets this process's wall clock sec seconds off. It is
// added to the runtime by the chaos suite's build overlay (see
// tools/chaos/clock.go).
//
//go:linkname setWallOffset runtime.chaosSetWallOffset
func setWallOffset(sec int64)
