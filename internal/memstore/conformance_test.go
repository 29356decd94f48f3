package memstore_test

import (
	"testing"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
	"github.com/leasehold/leasehold/internal/storetest"
)

// TestStoreConformance runs the store conformance suite on the in-process
// store, each case in a synctest bubble, where the store's clock is fake
// time: the same cases internal/store runs on every database.
func TestStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Target{
		Open:   func(*testing.T) storetest.Store { return memstore.New() },
		Bubble: faketime.Test,
	})
}
