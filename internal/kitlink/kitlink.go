// Package kitlink gives package leaseholdtest what packages coordination
// and workers keep for it alone, without making it public API: a
// coordinator and a host built on an in-process store instead of a
// database. coordination and workers set the functions when they are
// initialised.
package kitlink

import "github.com/leasehold/leasehold/identity"

var (
	// NewCoordinator returns a *coordination.Coordinator for id on the
	// store st (an *internal/memstore.Conn), after the checks
	// coordination.New makes of id and cfg (a coordination.Config).
	NewCoordinator func(st any, id identity.Identity, cfg any) (any, error)

	// NewAdmin returns a *coordination.Admin on the store st.
	NewAdmin func(st any) any

	// GenerationRow returns the name of the row that holds the
	// generation of the pool with the given key.
	GenerationRow func(poolKey string) string

	// NewHost returns a *workers.Host that runs the workers ws (a
	// []workers.Worker) on coord (a *coordination.Coordinator built with
	// cfg.Coordination), after the checks workers.NewHost makes of cfg (a
	// workers.Config) and ws.
	NewHost func(coord any, cfg any, ws any) (any, error)
)
