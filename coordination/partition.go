package coordination

import (
	"fmt"
	"hash/fnv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/leasehold/leasehold/internal/store"
)

// buckets is the number of buckets of Bucket and IntBucket: a stored
// bucket column holds a value in [0, 4096).
const buckets = 4096

// Bucket returns the bucket of a string key, in [0, 4096): the 32-bit
// FNV-1a hash of its UTF-8 bytes xor-folded to 12 bits, ((h >> 12) ^ h) &
// 4095, the same in every release. Store it in an indexed bucket column
// when the row is inserted, and select with Assignment.BucketScope.
func Bucket(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	s := h.Sum32()
	return int((s>>12 ^ s) & (buckets - 1))
}

// IntBucket returns the bucket of an integer key, in [0, 4096): its
// floor modulo 4096, which every database computes as
// ((k % 4096) + 4096) % 4096, so the bucket column can be a stored
// generated column (docs/workers.md, "Partitioned queries").
func IntBucket(key int64) int {
	return int(floorMod(key, buckets))
}

func floorMod(k int64, m int) int64 {
	r := k % int64(m)
	if r < 0 {
		r += int64(m)
	}
	return r
}

// share is what a member owns of a pool's keys: the keys whose floor
// modulo mod is one of parts, and the buckets [r*buckets/mod,
// (r+1)*buckets/mod) of each r in parts. The shares of one generation
// partition every key and every bucket.
type share struct {
	mod   int
	parts []int // sorted, distinct, each in [0, mod)
}

// share returns the assignment's share, or an error naming the field
// that makes it none.
func (a Assignment) share() (share, error) {
	switch {
	case a.Count < 1:
		return share{}, fmt.Errorf("assignment of pool %q: Count (%d) must be at least 1", a.Key, a.Count)
	case a.Index < 0 || a.Index >= a.Count:
		return share{}, fmt.Errorf("assignment of pool %q: Index (%d) must lie in [0, Count (%d))", a.Key, a.Index, a.Count)
	}
	return share{mod: a.Count, parts: []int{a.Index}}, nil
}

// owns reports whether the share holds key.
func (s share) owns(key int64) bool {
	r := int(floorMod(key, s.mod))
	for _, p := range s.parts {
		if p == r {
			return true
		}
	}
	return false
}

// bucketRanges returns the buckets of the share as half-open ranges,
// sorted, with adjacent ones merged.
func (s share) bucketRanges() [][2]int {
	var out [][2]int
	for _, p := range s.parts {
		lo, hi := p*buckets/s.mod, (p+1)*buckets/s.mod
		if lo == hi {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == lo {
			out[n-1][1] = hi
			continue
		}
		out = append(out, [2]int{lo, hi})
	}
	return out
}

// ownsBucket reports whether the share holds the bucket: it lies in the
// range of one of its parts (bucketRanges, without building them).
func (s share) ownsBucket(bucket int) bool {
	for _, p := range s.parts {
		if bucket >= p*buckets/s.mod && bucket < (p+1)*buckets/s.mod {
			return true
		}
	}
	return false
}

// Owns reports whether key is this assignment's under Scope's rule: its
// floor modulo Count is Index (-7 belongs to index 2 of 3). It is false
// for an assignment with no valid Index and Count.
func (a Assignment) Owns(key int64) bool {
	s, err := a.share()
	return err == nil && s.owns(key)
}

// OwnsBucket reports whether the bucket (from Bucket or IntBucket) is
// this assignment's under BucketScope's rule: it lies in
// [Index*4096/Count, (Index+1)*4096/Count).
func (a Assignment) OwnsBucket(bucket int) bool {
	s, err := a.share()
	return err == nil && s.ownsBucket(bucket)
}

// Scope is a gorm scope that selects the rows this assignment owns by the
// integer column named column (a name or table.name): those whose key's
// floor modulo Count is Index, as Owns decides. The scopes of the members
// of one generation select every row with a non-NULL key exactly once:
//
//	db.Scopes(a.Scope("id")).Where("state = ?", "pending").Find(&orders)
//
// The predicate cannot use an index on the column; for a large table use
// BucketScope. An invalid column, a database leasehold does not support,
// or an assignment with no valid Index and Count makes the query fail with
// an error naming it, before anything is sent.
func (a Assignment) Scope(column string) func(*gorm.DB) *gorm.DB {
	return modScope(column, a.share)
}

// BucketScope is a gorm scope that selects the rows this assignment owns
// by a bucket column, which holds Bucket(key) or IntBucket(key): those
// whose bucket lies in [Index*4096/Count, (Index+1)*4096/Count), as
// OwnsBucket decides. The predicate is a range, so an index on the query's
// equality columns and then the bucket column makes it a range scan:
//
//	CREATE INDEX orders_state_bucket ON orders (state, bucket);
//	db.Scopes(a.BucketScope("bucket")).Where("state = ?", "pending").Find(&orders)
//
// The scopes of the members of one generation select every row whose
// bucket lies in [0, 4096) exactly once. Errors are Scope's.
func (a Assignment) BucketScope(column string) func(*gorm.DB) *gorm.DB {
	return bucketScope(column, a.share)
}

// modScope is the scope of Scope: the keys of column whose floor modulo
// the share's mod is one of its parts.
func modScope(column string, of func() (share, error)) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		return where(db, "Scope", column, of, func(p store.PartitionSQL, col string, s share) string {
			return p.ModIn(col, s.mod, s.parts)
		})
	}
}

// bucketScope is the scope of BucketScope: the buckets of column in the
// share's ranges.
func bucketScope(column string, of func() (share, error)) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		return where(db, "BucketScope", column, of, func(p store.PartitionSQL, col string, s share) string {
			return p.Ranges(col, s.bucketRanges())
		})
	}
}

// where adds the predicate pred builds for the share of on column to db,
// or the error that prevents it.
func where(db *gorm.DB, what, column string, of func() (share, error), pred func(store.PartitionSQL, string, share) string) *gorm.DB {
	s, err := of()
	if err != nil {
		return addError(db, fmt.Errorf("coordination: %s: %w", what, err))
	}
	var name string
	if db.Config != nil && db.Dialector != nil {
		name = db.Name()
	}
	p, err := store.Partitions(name)
	if err != nil {
		return addError(db, fmt.Errorf("coordination: %s(%q): %w", what, column, err))
	}
	col, err := p.Column(column)
	if err != nil {
		return addError(db, fmt.Errorf("coordination: %s: %w", what, err))
	}
	return db.Where(clause.Expr{SQL: pred(p, col, s)})
}

// addError records err on db, so that the query it belongs to fails with
// it and sends nothing.
func addError(db *gorm.DB, err error) *gorm.DB {
	_ = db.AddError(err)
	return db
}
