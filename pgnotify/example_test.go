package pgnotify_test

import (
	"context"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/pgnotify"
)

// db is the service's PostgreSQL handle, opened with gorm's PostgreSQL
// driver as usual:
//
//	db, err := gorm.Open(postgres.Open(os.Getenv("DATABASE_URL")), &gorm.Config{})
var db *gorm.DB

// A coordinator on PostgreSQL whose followers take over a released lease
// at once.
func Example() {
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
