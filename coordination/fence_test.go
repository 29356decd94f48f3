package coordination

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
)

// TestRequireTransaction covers the connection kinds the conformance case
// FenceNeedsTransaction cannot open without leaking gorm's goroutines:
// prepared-statement mode's transaction is accepted, its pool refused.
func TestRequireTransaction(t *testing.T) {
	on := func(p gorm.ConnPool) *gorm.DB { return &gorm.DB{Statement: &gorm.Statement{ConnPool: p}} }
	for _, tc := range []struct {
		name string
		tx   *gorm.DB
		ok   bool
	}{
		{"nil", nil, false},
		{"no statement", &gorm.DB{}, false},
		{"no connection", on(nil), false},
		{"sql.Tx", on(&sql.Tx{}), true},
		{"prepared transaction", on(&gorm.PreparedStmtTX{}), true},
		{"prepared pool", on(&gorm.PreparedStmtDB{}), false},
		{"sql.DB", on(&sql.DB{}), false},
		{"sql.Conn", on(&sql.Conn{}), false},
	} {
		err := requireTransaction(tc.tx, `lease "global/x" epoch 3`)
		if tc.ok != (err == nil) || (err != nil && (!errors.Is(err, errNotTransaction) || !strings.Contains(err.Error(), `lease "global/x" epoch 3`))) {
			t.Errorf("%s: requireTransaction = %v, want ok=%v or errNotTransaction naming the lease", tc.name, err, tc.ok)
		}
	}
}
