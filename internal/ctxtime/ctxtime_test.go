package ctxtime

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/faketime"
)

func TestSleep(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), time.Second) || time.Since(start) != time.Second {
			t.Fatalf("Sleep did not wait exactly 1s")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if Sleep(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Fatalf("Sleep on a cancelled context waited")
		}
	})
}
