//go:build race

package testdb

// raceEnabled reports whether this test binary was built with -race; the
// test binaries it builds are built the same way.
const raceEnabled = true
