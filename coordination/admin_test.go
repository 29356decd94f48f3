package coordination

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"
	"gorm.io/gorm"
)

func init() {
	conformanceCases = append(conformanceCases, conformanceCase{"AdminReadsChecksAndFences", caseAdminReadsChecksAndFences})
}

// TestNewAdminValidates: a nil db and a bad prefix are refused with errors
// that name them.
func TestNewAdminValidates(t *testing.T) {
	if _, err := NewAdmin(nil, AdminConfig{}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "db is nil") {
		t.Errorf("NewAdmin(nil) = %v, want ErrInvalidConfig saying db is nil", err)
	}
	for _, prefix := range []string{"1bad", "has-dash_", strings.Repeat("x", 41)} {
		_, err := NewAdmin(&gorm.DB{}, AdminConfig{TablePrefix: prefix})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "TablePrefix") || !strings.Contains(err.Error(), prefix) {
			t.Errorf("NewAdmin(TablePrefix %q) = %v, want ErrInvalidConfig naming the field and the value", prefix, err)
		}
	}
}

// caseAdminReadsChecksAndFences: an admin client, with no identity, lists
// the leases (none of them its own), checks a preferred holder against the
// live ones, and checks a term inside a transaction whoever holds it.
func caseAdminReadsChecksAndFences(t *testing.T, b *bundle) {
	ctx := context.Background()
	a := start(t, b.db, "node-a", resignConfig())
	bb := start(t, b.db, "node-b", resignConfig())
	l := mustCampaign(t, election(t, a.Coordinator, GlobalScope, "admin"))
	lb := mustCampaign(t, election(t, bb.Coordinator, GlobalScope, "admin-b"))
	defer release(t, lb)
	admin := operator(t, b)

	infos, err := admin.Leases(ctx)
	if err != nil {
		t.Fatalf("Leases: %v", err)
	}
	if len(infos) != 2 || infos[0].Name != l.Key() || infos[1].Name != lb.Key() {
		t.Fatalf("Leases = %+v, want %s and %s, by name", infos, l.Key(), lb.Key())
	}
	if i := infos[0]; i.Holder != a.Holder() || i.Epoch != l.Epoch() || !i.Live || i.Mine || i.DatabaseTime.IsZero() {
		t.Fatalf("Leases()[0] = %+v, want live, held by %s at epoch %d, not Mine", i, a.Holder(), l.Epoch())
	}
	mine, err := a.Leases(ctx)
	if err != nil || len(mine) != 2 || !mine[0].Mine || mine[1].Mine {
		t.Fatalf("Coordinator.Leases = %+v, %v; want the first Mine only", mine, err)
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
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `"node-c"`) || !strings.Contains(err.Error(), bb.Holder()) ||
		strings.Contains(err.Error(), "are "+a.Holder()) {
		t.Errorf("CheckPreferred(node-c) = %v, want ErrInvalidConfig naming it and listing %s but not the current holder", err, bb.Holder())
	}
	if err := admin.CheckPreferred(ctx, "global/no-such-lease", "node-c"); err != nil {
		t.Errorf("CheckPreferred for a lease with no row = %v, want nil (Resign reports it)", err)
	}

	fence := func(tk Token) error {
		return b.db.Transaction(func(tx *gorm.DB) error { return admin.CheckFence(tx, tk) })
	}
	if err := fence(l.Token()); err != nil {
		t.Fatalf("CheckFence of the current term: %v", err)
	}
	for _, tc := range []struct {
		tk     Token
		reason string
	}{
		{Token{Name: l.Key(), Epoch: l.Epoch() + 1}, "the epoch is now"},
		{Token{Name: "global/no-such-lease", Epoch: 1}, "no such lease"},
	} {
		var fe *FenceError
		if err := fence(tc.tk); !errors.Is(err, ErrFenced) || !errors.As(err, &fe) || !strings.Contains(fe.Reason, tc.reason) {
			t.Errorf("CheckFence(%s) = %v, want ErrFenced saying %q", tc.tk, err, tc.reason)
		}
	}
	if err := admin.CheckFence(nil, l.Token()); !errors.Is(err, ErrNotInTransaction) {
		t.Errorf("CheckFence(nil) = %v, want ErrNotInTransaction", err)
	}
	if err := admin.CheckFence(b.db, l.Token()); !errors.Is(err, ErrNotInTransaction) {
		t.Errorf("CheckFence outside a transaction = %v, want ErrNotInTransaction", err)
	}
	release(t, l)
	var fe *FenceError
	if err := fence(l.Token()); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "free") {
		t.Errorf("CheckFence after release = %v, want ErrFenced saying the lease is free", err)
	}
}

// TestAdminOfCoordinator: the admin client of a coordinator logs with the
// coordinator's logger, and a preference window falls back to its TTL.
func TestAdminOfCoordinator(t *testing.T) {
	cfg := resignConfig()
	cfg.Logger = zaptest.NewLogger(t)
	c := newCoordinator(nil, testIdentity(t, "node-a"), cfg.withDefaults())
	a := c.Admin()
	if a.ttl != cfg.TTL || a.log != c.log {
		t.Fatalf("Coordinator.Admin() = ttl %v, want %v, and the coordinator's logger", a.ttl, cfg.TTL)
	}
}
