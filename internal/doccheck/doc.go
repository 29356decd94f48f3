// Package doccheck holds tests that keep the documentation true to the
// code: every Markdown table is well formed, every field a configuration
// table documents exists in the type it names, every test docs/design.md
// names exists, and every test it says runs on fake time runs inside a
// testing/synctest bubble. It also reads the Go source: the counts of
// worker constructors and kinds the docs state are package workers',
// the README's "tested here" claims are the test targets of
// internal/testdb, and every pkg.Name the docs write in backticks is
// exported by that package.
//
// It has no code of its own.
package doccheck
