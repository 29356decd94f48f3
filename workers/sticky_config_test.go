package workers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// TestStickyConfigChecked: NewHost refuses a sticky worker with no
// partitions, too many, a nil function or a bad MemberID, naming the
// field and its value.
func TestStickyConfigChecked(t *testing.T) {
	fn := func(context.Context, coordination.Partition) error { return nil }
	for _, tc := range []struct {
		w    Worker
		want string
	}{
		{GlobalSticky("s", fn, StickyConfig{}), "StickyConfig.Partitions is 0"},
		{GlobalSticky("s", fn, StickyConfig{Partitions: coordination.MaxPartitions + 1}), "Partitions (4097) must be at most 4096"},
		{ClusterSticky("s", nil, StickyConfig{Partitions: 4}), "has a nil function"},
		{ClusterSticky("s", fn, StickyConfig{Partitions: 4, MemberID: "a b"}), `MemberID ("a b") has ' ' at byte 1`},
		{ClusterSticky("s", fn, StickyConfig{Partitions: 4, PollInterval: time.Microsecond}), "PollInterval (1µs) must be at least"},
	} {
		err := checkWorker(0, tc.w)
		if !errors.Is(err, ErrInvalidWorker) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkWorker(%+v) = %v, want ErrInvalidWorker naming %q", tc.w, err, tc.want)
		}
	}
	if err := checkWorker(0, GlobalSticky("s", fn, StickyConfig{Partitions: 4, MemberID: "web-0"})); err != nil {
		t.Errorf("a valid sticky worker: %v", err)
	}
}
