package history

import (
	"context"
	"sync"
)

// Term records start through record, and returns the function to defer
// that records stop. stop is recorded once: when ctx is done (the library
// ended the term: its trust deadline passed, or it was lost, revoked or
// released) or when the returned function is called (the work returned),
// whichever comes first. A fenced write still in flight after that is no
// longer the term's; rule C judges it.
func Term(ctx context.Context, record func(Event), start, stop Event) (end func()) {
	record(start)
	var once sync.Once
	recordStop := func() { once.Do(func() { record(stop) }) }
	unregister := context.AfterFunc(ctx, recordStop)
	return func() {
		unregister()
		recordStop()
	}
}
