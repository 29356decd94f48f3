//go:build !cgo

package testdb

// cgoEnabled reports whether this binary was built with cgo, which the
// "sqlite-cgo" target needs.
const cgoEnabled = false
