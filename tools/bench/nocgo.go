//go:build !cgo

package bench

import "github.com/leasehold/leasehold/internal/dbopen"

// cgoEnabled reports whether this binary has the cgo SQLite driver;
// sqliteDriver is the SQLite driver the benchmark uses.
const (
	cgoEnabled   = false
	sqliteDriver = dbopen.SQLitePure
)
