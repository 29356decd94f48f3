package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

func init() {
	conformanceCases = append(conformanceCases, conformanceCase{"AdminReadsChecksAndFences", caseAdminReadsChecksAndFences})
}

// caseAdminReadsChecksAndFences: an admin client, with no identity, lists
// the leases (none of them its own), checks a preferred holder against the
// live ones, and checks a term inside a transaction whoever holds it.
func caseAdminReadsChecksAndFences(t *testing.T, b *bundle) {
	ctx := context.Background()
	a := start(t, b.db, "node-a", resignConfig())
	bb := start(t, b.db, "node-b", resignConfig())
	l := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "admin"))
	lb := mustCampaign(t, election(t, bb.Coordinator, coordination.GlobalScope, "admin-b"))
	defer release(t, lb)
	admin := operator(t, b)

	infos, err := admin.Leases(ctx)
	if err != nil {
		t.Fatalf("Leases: %v", err)
	}
	if len(infos) != 2 || infos[0].Key != l.Key() || infos[1].Key != lb.Key() {
		t.Fatalf("Leases = %+v, want %s and %s, by name", infos, l.Key(), lb.Key())
	}
	if i := infos[0]; i.Holder != a.Holder() || i.Epoch != l.Epoch() || !i.Live || i.DatabaseTime.IsZero() {
		t.Fatalf("Leases()[0] = %+v, want live, held by %s at epoch %d", i, a.Holder(), l.Epoch())
	}
	// A coordinator's Admin reads the same; whose a lease is, is its
	// Holder compared with Coordinator.Holder.
	mine, err := a.Admin().Leases(ctx)
	if err != nil || len(mine) != 2 || mine[0].Holder != a.Holder() || mine[1].Holder == a.Holder() {
		t.Fatalf("Coordinator.Admin().Leases = %+v, %v; want the first held by %s only", mine, err, a.Holder())
	}
	if pools, err := admin.Pools(ctx); err != nil || len(pools) != 0 {
		t.Fatalf("Pools = %+v, %v; want none", pools, err)
	}

	for _, good := range []string{"", "node-b", bb.Identity().Instance, bb.Holder()} {
		if err := admin.CheckPreferred(ctx, l.Key(), good); err != nil {
			t.Errorf("CheckPreferred(%q) = %v, want nil: a live process answers to it", good, err)
		}
	}
	err = admin.CheckPreferred(ctx, l.Key(), "node-c")
	if !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), `"node-c"`) || !strings.Contains(err.Error(), bb.Holder()) ||
		strings.Contains(err.Error(), "are "+a.Holder()) {
		t.Errorf("CheckPreferred(node-c) = %v, want ErrInvalidConfig naming it and listing %s but not the current holder", err, bb.Holder())
	}
	if err := admin.CheckPreferred(ctx, "global/no-such-lease", "node-c"); err != nil {
		t.Errorf("CheckPreferred for a lease with no row = %v, want nil (Resign reports it)", err)
	}

	fence := func(tk coordination.Token) error {
		return b.db.Transaction(func(tx *gorm.DB) error { return admin.CheckFence(tx, tk) })
	}
	if err := fence(l.Token()); err != nil {
		t.Fatalf("CheckFence of the current term: %v", err)
	}
	for _, tc := range []struct {
		tk     coordination.Token
		reason string
	}{
		{coordination.Token{Key: l.Key(), Epoch: l.Epoch() + 1}, "the epoch is now"},
		{coordination.Token{Key: "global/no-such-lease", Epoch: 1}, "no such lease"},
	} {
		if err := fence(tc.tk); !isFenced(err, fmt.Sprintf("lease %q epoch %d", tc.tk.Key, tc.tk.Epoch), tc.reason) {
			t.Errorf("CheckFence(%s) = %v, want ErrFenced saying %q", tc.tk, err, tc.reason)
		}
	}
	if err := admin.CheckFence(nil, l.Token()); !isNotInTransaction(err) {
		t.Errorf("CheckFence(nil) = %v, want ErrInvalidConfig for a handle outside a transaction", err)
	}
	if err := admin.CheckFence(b.db, l.Token()); !isNotInTransaction(err) {
		t.Errorf("CheckFence outside a transaction = %v, want ErrInvalidConfig for a handle outside a transaction", err)
	}
	release(t, l)
	if err := fence(l.Token()); !isFenced(err, fmt.Sprintf("lease %q epoch %d", l.Key(), l.Epoch()), "free") {
		t.Errorf("CheckFence after release = %v, want ErrFenced saying the lease is free", err)
	}
}
