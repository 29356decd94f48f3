package version

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	dep := func(path, v string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: v, Replace: replace}
	}
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"Dependency", debug.BuildInfo{Main: *dep("example.com/app", "(devel)", nil),
			Deps: []*debug.Module{dep("go.uber.org/zap", "v1.28.0", nil), dep(modulePath, "v0.9.1", nil)}}, "v0.9.1"},
		{"ReplacedByVersion", debug.BuildInfo{Deps: []*debug.Module{dep(modulePath, "v0.9.1", dep("example.com/fork", "v0.9.2", nil))}}, "v0.9.2"},
		{"ReplacedByDirectory", debug.BuildInfo{Deps: []*debug.Module{dep(modulePath, "v0.9.1", dep("../leasehold", "", nil))}}, "(devel)"},
		{"TheModuleItself", debug.BuildInfo{Main: *dep(modulePath, "(devel)", nil)}, "(devel)"},
		{"Absent", debug.BuildInfo{Main: *dep("example.com/app", "v1.0.0", nil)}, "(devel)"},
	}
	for _, tc := range cases {
		if got := of(&tc.bi); got != tc.want {
			t.Errorf("%s: of = %q; want %q", tc.name, got, tc.want)
		}
	}
	if Module() == "" {
		t.Error("Module() is empty")
	}
}
