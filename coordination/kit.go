package coordination

import (
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/kitlink"
)

// The seam of package leaseholdtest (through internal/kitlink): its
// coordinators run on an in-process store (internal/memstore), which
// offers the methods of every slice of leaseStore.
func init() {
	kitlink.NewCoordinator = func(st any, id identity.Identity, cfg any) (any, error) {
		c, err := checkNew(id, cfg.(Config))
		if err != nil {
			return nil, err
		}
		return newCoordinator(st.(leaseStore), id, c), nil
	}
	kitlink.NewAdmin = func(st any) any {
		return &Admin{store: st.(adminStore), log: zap.NewNop(), ttl: DefaultTTL}
	}
	kitlink.GenerationRow = func(key string) string { return poolRowsFor(key).Generation }
}
