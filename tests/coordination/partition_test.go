package coordination_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// TestPartitionConformance checks on every database that the scopes of
// the members of a generation, and those of the partitions of a sticky
// pool, partition a table exactly, by an integer key (negative keys and
// both ends of int64 included) and by a bucket column of string keys, and
// that each selects what Owns and OwnsBucket say in Go.
func TestPartitionConformance(t *testing.T) {
	t.Parallel() // see runCasesOn
	runCases(t, []conformanceCase{
		{"ScopesPartitionRows", casePartitionRows},
		{"ScopeErrorsSendNothing", casePartitionErrors},
	})
}

// partitionItem is a row of the user's table in these tests.
type partitionItem struct {
	ID     int64 `gorm:"primaryKey;autoIncrement:false"`
	Name   string
	Bucket int `gorm:"index"`
}

func partitionItems() []partitionItem {
	var items []partitionItem
	add := func(id int64, name string) {
		items = append(items, partitionItem{ID: id, Name: name, Bucket: coordination.Bucket(name)})
	}
	for id := int64(-60); id <= 60; id++ {
		add(id, fmt.Sprintf("order-%d", id))
	}
	add(math.MinInt64, "")
	add(math.MinInt64+1, "ünïcödé")
	add(math.MaxInt64, "日本語のキー")
	add(math.MaxInt64-1, strings.Repeat("x", 200))
	for i := range 200 {
		add(int64(1000+i*7919), fmt.Sprintf("customer/%x", i*2654435761))
	}
	return items
}

// scoped is what selects a share of a pool's rows: an Assignment of a
// pool of index and count, or an Assignment of a pool with Partitions.
type scoped interface {
	Scope(column string) func(*gorm.DB) *gorm.DB
	BucketScope(column string) func(*gorm.DB) *gorm.DB
	Owns(key int64) bool
	OwnsBucket(bucket int) bool
}

func casePartitionRows(t *testing.T, b *bundle) {
	if err := b.db.AutoMigrate(&partitionItem{}); err != nil {
		t.Fatal(err)
	}
	items := partitionItems()
	if err := b.db.CreateInBatches(items, 100).Error; err != nil {
		t.Fatal(err)
	}
	// The members of a generation of index and count, and the
	// partitions of a sticky pool (up to MaxPartitions, where each
	// partition owns one bucket).
	type shares struct {
		what  string
		count int
		of    func(i int) scoped
	}
	var all []shares
	for _, count := range []int{1, 2, 3, 5, 7, 64} {
		all = append(all, shares{"member", count, func(i int) scoped {
			return coordination.Assignment{Key: "global/orders", Index: i, Count: count, Generation: 9}
		}})
	}
	for _, count := range []int{1, 3, 16, 256, maxPartitions} {
		all = append(all, shares{"partition", count, func(i int) scoped {
			return coordination.Assignment{Key: "global/orders", Index: i, Count: count, Generation: 9}
		}})
	}
	for _, sh := range all {
		count := sh.count
		byID := map[int64]int{}
		byBucket := map[int64]int{}
		for index := range count {
			a := sh.of(index)
			queries := []struct {
				name  string
				scope func(*gorm.DB) *gorm.DB
				seen  map[int64]int
				owns  func(it partitionItem) bool
			}{
				{"Scope(id)", a.Scope("partition_items.id"), byID, func(it partitionItem) bool { return a.Owns(it.ID) }},
				{"BucketScope(bucket)", a.BucketScope("bucket"), byBucket, func(it partitionItem) bool { return a.OwnsBucket(it.Bucket) }},
			}
			if count == maxPartitions && index%64 != 0 {
				// Of the 4096 partitions, one in 64 is queried; Owns and
				// OwnsBucket still account for every row below.
				for _, q := range queries {
					for _, it := range items {
						if q.owns(it) {
							q.seen[it.ID]++
						}
					}
				}
				continue
			}
			for _, q := range queries {
				var ids []int64
				if err := b.db.Model(&partitionItem{}).Scopes(q.scope).Order("id").Pluck("id", &ids).Error; err != nil {
					t.Fatalf("%s of %s %d/%d: %v", q.name, sh.what, index, count, err)
				}
				var want []int64
				for _, it := range items {
					if q.owns(it) {
						want = append(want, it.ID)
					}
				}
				slices.Sort(want)
				if !slices.Equal(ids, want) {
					t.Errorf("%s of %s %d of %d selected %v, Go says %v", q.name, sh.what, index, count, ids, want)
				}
				for _, id := range ids {
					q.seen[id]++
				}
			}
		}
		for name, seen := range map[string]map[int64]int{"Scope": byID, "BucketScope": byBucket} {
			for _, it := range items {
				if seen[it.ID] != 1 {
					t.Errorf("%s with %d %ss: row %d (bucket %d) selected %d times, want 1", name, count, sh.what, it.ID, it.Bucket, seen[it.ID])
				}
			}
		}
	}
	// A scope composes with the rest of the query.
	a := coordination.Assignment{Index: 1, Count: 3}
	var n int64
	if err := b.db.Model(&partitionItem{}).Where("id >= ?", 0).Scopes(a.Scope("id")).Where("id <= ?", 60).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 20 { // 1, 4, ..., 58
		t.Errorf("ids in [0, 60] of member 1 of 3: %d, want 20", n)
	}
}

func casePartitionErrors(t *testing.T, b *bundle) {
	if err := b.db.AutoMigrate(&partitionItem{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s       scoped
		column  string
		want    string
		invalid bool // no valid share: owns nothing
	}{
		{coordination.Assignment{Key: "global/orders"}, "id", "Count (0) must be at least 1", true},
		{coordination.Assignment{Key: "global/orders", Index: 3, Count: 3}, "id", "Index (3) must lie in [0, Count (3))", true},
		{coordination.Assignment{Key: "global/orders", Index: -1, Count: 3}, "id", "Index (-1) must lie in [0, Count (3))", true},
		{coordination.Assignment{Index: 0, Count: 2}, "", `column "": "" is not a plain identifier`, false},
		{coordination.Assignment{Index: 0, Count: 2}, "id; DROP TABLE partition_items", `column "id; DROP TABLE partition_items"`, false},
		{coordination.Assignment{Index: 0, Count: 2}, "a.b.c", `column "a.b.c": want a name or table.name`, false},
		{coordination.Assignment{Index: 0, Count: 2}, "1d", `"1d" is not a plain identifier`, false},
		// An Assignment of a pool with Partitions: its errors name the pool
		// as an index pool's do.
		{coordination.Assignment{Key: "global/orders"}, "id", `assignment of pool "global/orders": Count (0) must be at least 1`, true},
		{coordination.Assignment{Key: "global/orders", Index: 16, Count: 16}, "id", `assignment of pool "global/orders": Index (16) must lie in [0, Count (16))`, true},
		{coordination.Assignment{Key: "global/orders", Index: -1, Count: 16}, "id", `assignment of pool "global/orders": Index (-1) must lie in [0, Count (16))`, true},
		{coordination.Assignment{Index: 0, Count: 16}, "id; DROP TABLE partition_items", `column "id; DROP TABLE partition_items"`, false},
	} {
		for _, scope := range []func(string) func(*gorm.DB) *gorm.DB{tc.s.Scope, tc.s.BucketScope} {
			var ids []int64
			err := b.db.Model(&partitionItem{}).Scopes(scope(tc.column)).Pluck("id", &ids).Error
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%T %+v on column %q: error %v, want one containing %q", tc.s, tc.s, tc.column, err, tc.want)
			}
		}
		if tc.invalid && (tc.s.Owns(0) || tc.s.OwnsBucket(0)) {
			t.Errorf("%T %+v owns key 0 or bucket 0", tc.s, tc.s)
		}
	}
}
