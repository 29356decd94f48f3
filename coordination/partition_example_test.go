package coordination_test

import (
	"fmt"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
)

// Order is a row of the application's table, with a bucket column
// computed from its string key when it is inserted.
type Order struct {
	ID       int64
	Customer string
	Bucket   int    `gorm:"index:orders_state_bucket,priority:2"`
	State    string `gorm:"index:orders_state_bucket,priority:1"`
}

// BeforeCreate stores the bucket of the order's key.
func (o *Order) BeforeCreate(*gorm.DB) error {
	o.Bucket = coordination.Bucket(o.Customer)
	return nil
}

// The scopes of an assignment select the rows it owns: Scope by an integer
// key, BucketScope by a stored, indexed bucket column. Here the queries of
// member 1 of 3 are only rendered, on SQLite.
func ExampleAssignment_Scope() {
	db, err := gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: "file::memory:"}), &gorm.Config{DryRun: true, Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	a := coordination.Assignment{Key: "global/orders", Index: 1, Count: 3}

	var batch []Order
	q := db.Scopes(a.Scope("id")).Where("state = ?", "pending").Find(&batch)
	fmt.Println(q.Statement.SQL.String())
	q = db.Scopes(a.BucketScope("bucket")).Where("state = ?", "pending").Limit(100).Find(&batch)
	fmt.Println(q.Statement.SQL.String())
	fmt.Println(a.Owns(-5), a.OwnsBucket(coordination.Bucket("customer-42")))
	// Output:
	// SELECT * FROM `orders` WHERE state = ? AND (("id" % 3) + 3) % 3 = 1
	// SELECT * FROM `orders` WHERE state = ? AND (("bucket" >= 1365 AND "bucket" < 2730)) LIMIT 100
	// true false
}

// In a pool with Partitions, an assignment is one partition, with the
// same scopes: Scope selects the keys whose floor modulo the pool's
// Partitions is the partition, BucketScope its range of the buckets. Here
// the queries of partition 5 of 256 are only rendered, on SQLite; in a
// pool, pt is the argument of the pool's function.
func ExampleAssignment_Scope_partition() {
	db, err := gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: "file::memory:"}), &gorm.Config{DryRun: true, Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	pt := coordination.Assignment{Key: "global/orders", Index: 5, Count: 256}

	var batch []Order
	q := db.Scopes(pt.Scope("id")).Where("state = ?", "pending").Find(&batch)
	fmt.Println(q.Statement.SQL.String())
	q = db.Scopes(pt.BucketScope("bucket")).Where("state = ?", "pending").Limit(100).Find(&batch)
	fmt.Println(q.Statement.SQL.String())
	fmt.Println(pt.Owns(-251), pt.Owns(6), pt.OwnsBucket(80), pt.OwnsBucket(96))
	// Output:
	// SELECT * FROM `orders` WHERE state = ? AND (("id" % 256) + 256) % 256 = 5
	// SELECT * FROM `orders` WHERE state = ? AND (("bucket" >= 80 AND "bucket" < 96)) LIMIT 100
	// true false true false
}
