//go:build cgo

package leaseholdtest_test

import "github.com/leasehold/leasehold/internal/dbopen"

// sqliteDriver is the SQLite driver of appDB: the cgo one where cgo is on.
const sqliteDriver = dbopen.SQLite
