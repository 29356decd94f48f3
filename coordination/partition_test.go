package coordination

import (
	"math"
	"testing"
)

// TestBucketIsStable pins Bucket and IntBucket: a bucket stored with a row
// must stay right across releases. Bucket("") is worked by hand: FNV-1a
// of no bytes is its offset basis 0x811c9dc5, and 0xdc5 ^ 0x1c9 = 3084.
func TestBucketIsStable(t *testing.T) {
	for key, want := range map[string]int{"": 3084, "a": 2542, "order-1": 2705, "日本語のキー": 2070} {
		if got := Bucket(key); got != want {
			t.Errorf("Bucket(%q) = %d, want %d", key, got, want)
		}
	}
	for key, want := range map[int64]int{0: 0, 1: 1, -1: 4095, 4096: 0, -4097: 4095, math.MinInt64: 0, math.MaxInt64: 4095} {
		if got := IntBucket(key); got != want {
			t.Errorf("IntBucket(%d) = %d, want %d", key, got, want)
		}
	}
}
