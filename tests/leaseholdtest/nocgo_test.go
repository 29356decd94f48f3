//go:build !cgo

package leaseholdtest_test

import "github.com/leasehold/leasehold/internal/dbopen"

// sqliteDriver is the SQLite driver of appDB: the pure-Go one without cgo.
const sqliteDriver = dbopen.SQLitePure
