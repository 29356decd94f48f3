// Package ctxtime holds the one timing helper the coordination and
// workers packages share.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done, and reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
