// Package version tells which version of the leasehold module a program
// was built with, for the instrumentation scope of its metrics and spans.
package version

import (
	"runtime/debug"
	"sync"
)

// modulePath is the path of the leasehold module.
const modulePath = "github.com/leasehold/leasehold"

// Module returns the version of the leasehold module in the running
// binary: the tag or pseudo-version go.mod required (that of a replace's
// target if it has one), or "(devel)" inside the module itself, for a
// local replace, and in a binary without build information.
var Module = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return devel
	}
	return of(bi)
})

const devel = "(devel)"

// of is the leasehold module's version in bi.
func of(bi *debug.BuildInfo) string {
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path != modulePath {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		if m.Version == "" {
			return devel
		}
		return m.Version
	}
	return devel
}
