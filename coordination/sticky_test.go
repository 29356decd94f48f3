package coordination

import (
	"errors"
	"strings"
	"testing"
)

// TestPoolConfigPartitions checks the validation of Partitions and
// MemberID.
func TestPoolConfigPartitions(t *testing.T) {
	for _, tc := range []struct {
		cfg  PoolConfig
		want string // "" for valid
	}{
		{PoolConfig{}, ""},
		{PoolConfig{Partitions: 256}, ""},
		{PoolConfig{Partitions: maxPartitions, MemberID: "web-0.eu_1"}, ""},
		{PoolConfig{Partitions: -1}, "Partitions (-1) must not be negative"},
		{PoolConfig{Partitions: maxPartitions + 1}, "Partitions (4097) must be at most 4096"},
		{PoolConfig{MemberID: "web-0"}, `MemberID ("web-0") needs Partitions`},
		{PoolConfig{Partitions: 8, MemberID: "web:0"}, `MemberID ("web:0") has ':' at byte 3`},
		{PoolConfig{Partitions: 8, MemberID: strings.Repeat("x", maxMemberIDLen+1)}, "is 65 bytes long; the limit is 64"},
	} {
		err := tc.cfg.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want ErrInvalidConfig with %q", tc.cfg, err, tc.want)
		}
	}
}
