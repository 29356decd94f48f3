package workers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/memstore"
)

// TestPartitionedConfigChecked: NewHost refuses a partitioned worker with
// too many partitions, a nil function or a bad MemberID, naming the field
// and its value.
func TestPartitionedConfigChecked(t *testing.T) {
	db, err := memstore.New().Conn().Open()
	if err != nil {
		t.Fatal(err)
	}
	coord, err := coordination.New(db, testIdentity(t, "node-a", "test"), coordination.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context, coordination.Assignment) error { return nil }
	for _, tc := range []struct {
		w    Worker
		want string
	}{
		{GlobalPartitioned("s", fn, coordination.PoolConfig{Partitions: 4097}), "Partitions (4097) must be at most 4096"},
		{ClusterPartitioned("s", nil, coordination.PoolConfig{Partitions: 4}), "has a nil function"},
		{ClusterPartitioned("s", fn, coordination.PoolConfig{Partitions: 4, MemberID: "a b"}), `MemberID ("a b") has ' ' at byte 1`},
		{ClusterPartitioned("s", fn, coordination.PoolConfig{Partitions: 4, PollInterval: time.Microsecond}), "PollInterval (1µs) must be at least"},
	} {
		_, err := NewHost(coord, Config{}, tc.w)
		if !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewHost(%+v) = %v, want ErrInvalidConfig naming %q", tc.w, err, tc.want)
		}
	}
	if _, err := NewHost(coord, Config{}, GlobalPartitioned("s", fn, coordination.PoolConfig{Partitions: 4, MemberID: "web-0"})); err != nil {
		t.Errorf("a valid partitioned worker: %v", err)
	}
}
