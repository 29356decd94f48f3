// Package shapecheck holds a test of the module's boundaries:
//
//	go test -v -run TestShape ./internal/shapecheck
//
// No condition of internal/store branches on a database's name (the
// dialect is picked once, by name, from a map); the root go.mod requires
// only what the library and its own tests import; and the library's
// packages import only the modules listed for them.
//
// It has no code of its own.
package shapecheck
