package coordination_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
)

// openExampleDB opens a throw-away SQLite database, as the package's
// examples do.
func openExampleDB() (*gorm.DB, func()) {
	dir, err := os.MkdirTemp("", "leasehold-example")
	if err != nil {
		panic(err)
	}
	db, err := dbopen.Open(dbopen.SQLitePure, dbopen.SQLiteDSN(dbopen.SQLitePure, filepath.Join(dir, "coord.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	return db, func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
		_ = os.RemoveAll(dir)
	}
}

// Metrics through the OpenTelemetry SDK: the MeterProvider of the SDK in
// Config, with a ManualReader standing in for the exporter a service would
// configure (OTLP, Prometheus). The package's own example
// (coordination.ExampleConfig_meterProvider) passes the global provider;
// this one reads back what the coordinator recorded.
func Example_meterProvider() {
	db, cleanup := openExampleDB()
	defer cleanup()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = provider.Shutdown(context.Background()) }()

	id, _ := identity.New("node-a", "eu-1")
	coord, _ := coordination.New(db, id, coordination.Config{MeterProvider: provider})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = coord.Run(ctx) }()
	e, _ := coord.Election(coordination.GlobalScope, "outbox")
	lease, _ := e.Campaign(ctx)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "leasehold.lease.held" {
				for _, dp := range g.DataPoints {
					name, _ := dp.Attributes.Value("leasehold.lease.name")
					fmt.Println(m.Name, name.AsString(), dp.Value)
				}
			}
		}
	}

	_ = lease.Release(ctx)
	cancel()
	<-coord.Done()
	// Output: leasehold.lease.held global/outbox 1
}
