package wake

import (
	"context"
	"sync"
)

// maxLateNames bounds the names lateWakes keeps: past it, the pending
// wake-up is for any name.
const maxLateNames = 256

// lateWakes are the wake-ups whose read of the peers failed (Peer.sendAll):
// they reached only the peers this process already knew, so a process
// that started listening since was not woken. Listen sends them again
// once a read succeeds (resendLate). Its zero value is not ready: poke
// must be made.
type lateWakes struct {
	poke chan struct{} // buffered 1: some are pending

	mu    sync.Mutex
	any   bool // a pending wake-up is for any name
	names map[string]struct{}
}

// add makes names (nil: any) pending.
func (l *lateWakes) add(names []string) {
	l.mu.Lock()
	switch {
	case l.any:
	case names == nil || len(l.names)+len(names) > maxLateNames:
		l.any, l.names = true, nil
	default:
		if l.names == nil {
			l.names = make(map[string]struct{}, len(names))
		}
		for _, n := range names {
			l.names[n] = struct{}{}
		}
	}
	l.mu.Unlock()
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// take returns the pending names (nil: any) and whether there were any,
// and leaves none pending.
func (l *lateWakes) take() (names []string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.any && len(l.names) == 0 {
		return nil, false
	}
	if !l.any {
		names = make([]string, 0, len(l.names))
		for n := range l.names {
			names = append(names, n)
		}
	}
	l.any, l.names = false, nil
	return names, true
}

// resendLate sends the late wake-ups again until ctx is done: to every
// peer, read again, so the ones that had been reached are woken twice
// (a spurious wake-up only moves a read). While the read fails it tries
// again helloRetry later, doubling up to Refresh.
func (p *Peer) resendLate(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.late.poke:
		}
		for wait := helloRetry; ; wait = p.nextRetry(wait) {
			names, ok := p.late.take()
			if !ok {
				break
			}
			sctx, cancel := context.WithTimeout(ctx, sendTimeout)
			read, _ := p.sendAll(sctx, kindWake, names) // a failed read makes them pending again
			cancel()
			if read == nil {
				continue // sent; others may have become pending meanwhile
			}
			if !sleepCtx(ctx, wait) {
				return
			}
		}
	}
}
