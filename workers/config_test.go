package workers

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.RestartBackoff != defaultRestartBackoff || c.MaxRestartBackoff != defaultMaxRestartBackoff {
		t.Fatalf("defaults = %v / %v, want %v / %v", c.RestartBackoff, c.MaxRestartBackoff, defaultRestartBackoff, defaultMaxRestartBackoff)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("zero config invalid: %v", err)
	}
	if err := (Config{MaxRestartBackoff: -1}).withDefaults().validate(); !errors.Is(err, coordination.ErrInvalidConfig) {
		t.Fatalf("negative MaxRestartBackoff: %v", err)
	}
}

func TestKindNames(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{kindClusterSingleton.String(), "cluster-singleton"},
		{kindGlobalSingleton.String(), "global-singleton"},
		{kindPartitioned.String(), "partitioned"},
		{kind(0).String(), "kind(0)"},
		{EventStartedLeading.String(), "started-leading"},
		{EventStoppedLeading.String(), "stopped-leading"},
		{EventAssignmentStarted.String(), "assignment-started"},
		{EventAssignmentStopped.String(), "assignment-stopped"},
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
