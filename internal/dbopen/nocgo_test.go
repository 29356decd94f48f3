//go:build !cgo

package dbopen

const cgoEnabled = false
