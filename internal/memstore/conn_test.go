package memstore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/internal/faketime"
	"github.com/leasehold/leasehold/internal/memstore"
	"github.com/leasehold/leasehold/internal/storetest"
)

// TestConnConformance runs the store conformance suite through a
// connection without faults: it forwards every statement unchanged.
func TestConnConformance(t *testing.T) {
	storetest.Run(t, storetest.Target{
		Open:   func(*testing.T) storetest.Store { return memstore.New().Conn() },
		Bubble: faketime.Test,
	})
}

// TestConnFaults: a cut connection's statements fail and a stalled one's
// wait, while another connection to the same store goes on.
func TestConnFaults(t *testing.T) {
	faketime.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := memstore.New()
		a, b := st.Conn(), st.Conn()
		if err := a.CreateSession(ctx, "s1", "node-a/eu/1", time.Minute); err != nil {
			t.Fatal(err)
		}

		a.Cut()
		if _, _, err := a.RenewSession(ctx, "s1", time.Minute); !errors.Is(err, memstore.ErrCut) {
			t.Errorf("renewal on a cut connection: %v, want ErrCut", err)
		}
		if err := b.EnsureRows(ctx, []string{"global/x"}); err != nil {
			t.Errorf("another connection: %v", err)
		}
		a.Restore()
		if ok, _, err := a.RenewSession(ctx, "s1", time.Minute); !ok || err != nil {
			t.Errorf("renewal after Restore: %v, %v", ok, err)
		}

		resume := a.Stall()
		done := make(chan error, 1)
		go func() {
			_, _, err := a.RenewSession(ctx, "s1", time.Minute)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("a stalled renewal returned %v", err)
		default:
		}
		if _, err := b.Get(ctx, []string{"global/x"}); err != nil {
			t.Errorf("another connection during a stall: %v", err)
		}
		resume()
		if err := <-done; err != nil {
			t.Errorf("the stalled renewal after resume: %v", err)
		}

		resume = a.Stall()
		defer resume()
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := a.Get(short, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a stalled statement whose context ends: %v", err)
		}
	})
}
