// Package shapecheck holds a test that keeps the code in the shape
// docs/design.md describes, and prints each figure of it:
//
//	go test -v -run TestShape ./internal/shapecheck
//
// No non-test file of coordination/, workers/ or internal/store/ is over
// 500 lines; no type of the library has more than 25 methods; no interface
// of coordination or internal/store declares more than 8; no condition of
// internal/store branches on a database's name (the dialect is picked once,
// by name, from a map); and it reports how many direct requirements the root
// go.mod has.
//
// It has no code of its own.
package shapecheck
