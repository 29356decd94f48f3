package coordination_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
)

// caseLeaseData: an election's holder writes data into the lease row, on
// its own or inside its fenced transaction; the data outlives the term;
// once another term began, neither write of the old term lands, and a
// rolled-back transaction leaves the data as it was.
func caseLeaseData(t *testing.T, b *bundle) {
	ctx := context.Background()
	a := start(t, b.db, "node-a", b.fastConfig())
	l1 := mustCampaign(t, election(t, a.Coordinator, coordination.GlobalScope, "job"))
	if err := l1.SetData(ctx, "one"); err != nil {
		t.Fatalf("SetData: %v", err)
	}
	if data, now, err := l1.Data(ctx); err != nil || data != "one" || now.IsZero() {
		t.Fatalf("Data = %q, %v, %v; want one with the database clock", data, now, err)
	}
	if err := b.db.Transaction(func(tx *gorm.DB) error { return l1.SetDataIn(tx, "two") }); err != nil {
		t.Fatalf("SetDataIn: %v", err)
	}
	rollback := errors.New("roll back")
	if err := b.db.Transaction(func(tx *gorm.DB) error {
		if err := l1.SetDataIn(tx, "rolled back"); err != nil {
			return err
		}
		return rollback
	}); !errors.Is(err, rollback) {
		t.Fatalf("rolled-back transaction: %v", err)
	}
	if got := row(t, b.db, l1.Key()).Data; got != "two" {
		t.Fatalf("data = %q, want two", got)
	}
	if err := l1.SetDataIn(b.db, "x"); !isNotInTransaction(err) {
		t.Fatalf("SetDataIn outside a transaction: %v, want ErrInvalidConfig for a handle outside a transaction", err)
	}
	if err := l1.SetData(ctx, strings.Repeat("x", coordination.MaxDataLen+1)); !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), "MaxDataLen") {
		t.Fatalf("SetData of too much data: %v, want ErrInvalidConfig naming MaxDataLen", err)
	}

	// Another process takes over after the session expired; the old term
	// writes nothing, whichever way it tries.
	expireNow(t, b.db, l1.Key())
	c := start(t, b.db, "node-c", b.fastConfig())
	l2 := mustCampaign(t, election(t, c.Coordinator, coordination.GlobalScope, "job"))
	if data, _, err := l2.Data(ctx); err != nil || data != "two" {
		t.Fatalf("new term reads %q, %v; want the data of the last term, two", data, err)
	}
	if err := l1.SetData(ctx, "stale"); !errors.Is(err, coordination.ErrFenced) {
		t.Fatalf("old term's SetData: %v, want ErrFenced", err)
	}
	if err := b.db.Transaction(func(tx *gorm.DB) error { return l1.SetDataIn(tx, "stale") }); !errors.Is(err, coordination.ErrFenced) {
		t.Fatalf("old term's SetDataIn: %v, want ErrFenced", err)
	}
	if err := l2.SetData(ctx, "three"); err != nil {
		t.Fatalf("new term's SetData: %v", err)
	}
	if got := row(t, b.db, l1.Key()).Data; got != "three" {
		t.Fatalf("data = %q, want three", got)
	}
}
