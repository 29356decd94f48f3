// Package doccheck holds tests that keep the documentation true to the
// code: every Markdown table is well formed, every field a configuration
// table documents exists in the type it names, every test docs/design.md
// names exists, and every test it says runs on fake time runs inside a
// testing/synctest bubble.
//
// It has no code of its own.
package doccheck
