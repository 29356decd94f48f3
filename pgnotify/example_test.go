package pgnotify_test

import (
	"context"
	"os"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/pgnotify"
)

// A coordinator on PostgreSQL whose followers take over a released lease
// at once.
func Example() {
	db, err := gorm.Open(postgres.Open(os.Getenv("DATABASE_URL")), &gorm.Config{})
	if err != nil {
		panic(err)
	}
	id, err := identity.FromEnv()
	if err != nil {
		panic(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{
		Notifications: pgnotify.New(),
	})
	if err != nil {
		panic(err)
	}
	_ = coord.Run(context.Background())
}
