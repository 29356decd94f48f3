// Package hostlink gives package workers what package coordination keeps
// for it alone, without making it public API: a host merges the events of
// its coordinator into its own stream, in the order they happened.
package hostlink

// Tap makes tap see every event of the *coordination.Coordinator c from
// now on, as a coordination.Event (package coordination sets Tap when it
// is initialised): synchronously, in the order the events happen and
// before c's subscribers get them. tap runs on the goroutine that emits
// the event, perhaps under c's locks: it must not block or call c. Call
// Tap once, before c runs.
var Tap func(c any, tap func(ev any))
