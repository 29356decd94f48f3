// Command sqlite runs a host of workers on SQLite, importing coordination and
// workers as such a service does. TestPGXOnlyByChoice lists the packages
// it links.
package main

import (
	"context"
	"log"
	"os"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/workers"
)

func main() {
	db, err := gorm.Open(sqlite.Open(os.Getenv("DSN")), &gorm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	id, err := identity.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		log.Fatal(err)
	}
	h, err := workers.NewHost(coord, workers.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	go func() { log.Fatal(coord.Run(ctx)) }()
	log.Fatal(h.Run(ctx))
}
