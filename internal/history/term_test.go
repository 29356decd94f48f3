package history

import (
	"context"
	"sync"
	"testing"
)

func TestTerm(t *testing.T) {
	var mu sync.Mutex
	var got []Kind
	recorded := make(chan struct{}, 4)
	record := func(e Event) {
		mu.Lock()
		got = append(got, e.Kind)
		mu.Unlock()
		recorded <- struct{}{}
	}
	kinds := func() []Kind {
		mu.Lock()
		defer mu.Unlock()
		return append([]Kind(nil), got...)
	}
	start, stop := Event{Kind: LeaderStart}, Event{Kind: LeaderStop}

	t.Run("ends when the context is done, before the work returns", func(t *testing.T) {
		got = nil
		ctx, cancel := context.WithCancel(context.Background())
		end := Term(ctx, record, start, stop)
		<-recorded
		cancel()
		<-recorded // the stop, recorded with the work still running
		if k := kinds(); len(k) != 2 || k[1] != LeaderStop {
			t.Fatalf("after cancel: recorded %v, want start and stop", k)
		}
		end()
		if k := kinds(); len(k) != 2 {
			t.Fatalf("after the work returned: recorded %v, want the stop once", k)
		}
	})
	t.Run("ends when the work returns", func(t *testing.T) {
		got = nil
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		end := Term(ctx, record, start, stop)
		<-recorded
		end()
		<-recorded
		cancel()
		if k := kinds(); len(k) != 2 || k[1] != LeaderStop {
			t.Fatalf("recorded %v, want start and one stop", k)
		}
	})
}
