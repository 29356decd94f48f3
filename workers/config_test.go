package workers

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold/identity"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.RestartBackoff != DefaultRestartBackoff || c.MaxRestartBackoff != DefaultMaxRestartBackoff {
		t.Fatalf("defaults = %v / %v, want %v / %v", c.RestartBackoff, c.MaxRestartBackoff, DefaultRestartBackoff, DefaultMaxRestartBackoff)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("zero config invalid: %v", err)
	}
	if err := (Config{MaxRestartBackoff: -1}).withDefaults().validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative MaxRestartBackoff: %v", err)
	}
}

func TestKindNames(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{KindClusterSingleton.String(), "cluster-singleton"},
		{KindGlobalSingleton.String(), "global-singleton"},
		{KindPartitioned.String(), "partitioned"},
		{Kind(0).String(), "Kind(0)"},
		{EventStartedLeading.String(), "started-leading"},
		{EventStoppedLeading.String(), "stopped-leading"},
		{EventAssignmentChanged.String(), "assignment-changed"},
		{EventWorkerError.String(), "worker-error"},
		{EventShutdownOverrun.String(), "shutdown-overrun"},
		{EventKind(99).String(), "EventKind(99)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}

func testIdentity(t testing.TB, node, cluster string) identity.Identity {
	t.Helper()
	id, err := identity.New(node, cluster)
	if err != nil {
		t.Fatalf("identity.New(%q, %q): %v", node, cluster, err)
	}
	return id
}
