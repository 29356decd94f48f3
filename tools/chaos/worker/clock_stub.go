//go:build !chaosclock

package main

// clockInjectable reports whether setWallOffset moves the wall clock: not
// in a build without the chaos suite's runtime overlay.
const clockInjectable = false

func setWallOffset(int64) {}
