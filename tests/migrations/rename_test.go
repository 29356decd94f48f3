package migrations_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/migrations"
)

// leaseRow is every column of a lease row.
type leaseRow struct {
	Name                                   string
	Holder                                 string
	Epoch                                  int64
	AcquiredAtUS, RenewedAtUS, ExpiresAtUS int64
	Data                                   string
}

func (r leaseRow) String() string {
	return fmt.Sprintf("%s{holder %q epoch %d acquired %d renewed %d expires %d data %q}",
		r.Name, r.Holder, r.Epoch, r.AcquiredAtUS, r.RenewedAtUS, r.ExpiresAtUS, r.Data)
}

func leaseRows(t *testing.T, db *gorm.DB) map[string]leaseRow {
	t.Helper()
	rs, err := db.Raw("SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, '') FROM leasehold_leases").Rows()
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]leaseRow{}
	for rs.Next() {
		var r leaseRow
		if err := rs.Scan(&r.Name, &r.Holder, &r.Epoch, &r.AcquiredAtUS, &r.RenewedAtUS, &r.ExpiresAtUS, &r.Data); err != nil {
			t.Fatal(err)
		}
		out[r.Name] = r
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// casePoolRowsRenamed writes rows with the pool row keys of schema version
// 2, including pools whose names nest, then migrates from several
// goroutines at once. Exactly one applies version 3; every pool row gets
// its new key with every other column kept, a tombstone takes its old key,
// and elections are left alone. A coordinator of this build then reads the
// renamed pool as it was.
func casePoolRowsRenamed(t *testing.T, tg testdb.Target) {
	db := tg.Open(t)
	ctx := context.Background()
	if _, err := migrations.Migrate(ctx, db, migrations.Options{}); err != nil {
		t.Fatal(err)
	}
	// Version 3 changes no table, so dropping its record gives a version 2
	// schema; the later versions (the session table, its columns and the
	// resign columns) apply again without effect.
	if err := db.Exec("DELETE FROM leasehold_schema_migrations WHERE version >= 3").Error; err != nil {
		t.Fatal(err)
	}
	if v, err := migrations.Version(ctx, db, migrations.Options{}); err != nil || v != 2 {
		t.Fatalf("Version = %d, %v; want 2", v, err)
	}

	var now int64
	if err := db.Raw("SELECT " + map[string]string{
		"postgres":  "CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)",
		"mysql":     "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))",
		"sqlite":    "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)",
		"sqlserver": "DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())",
	}[db.Name()]).Row().Scan(&now); err != nil {
		t.Fatal(err)
	}
	const (
		i1 = "0123456789abcdef0123456789abcdef"
		i2 = "fedcba9876543210fedcba9876543210"
	)
	live := now + time.Hour.Microseconds()
	member := func(name, holder string, epoch int64, ack string) leaseRow {
		return leaseRow{name, holder, epoch, now - 3000, now - 1000, live, ack}
	}
	gen := func(name string, epoch int64, list string) leaseRow {
		return leaseRow{name, "", epoch, 0, now - 2000, 0, list}
	}
	// old key -> (row, new key); an empty new key means the row is kept.
	rows := []struct {
		row    leaseRow
		newKey string
	}{
		// Pool "a".
		{gen("pool/global/a/generation", 7, i1+","+i2), "pool|global/a|generation"},
		{member("pool/global/a/member/"+i1, "node-a/test/"+i1, 3, "7"), "pool|global/a|member|" + i1},
		{member("pool/global/a/member/"+i2, "node-b/test/"+i2, 5, "6"), "pool|global/a|member|" + i2},
		// Pool "a/member/x": its generation row is under pool "a"'s old member prefix.
		{gen("pool/global/a/member/x/generation", 4, i2), "pool|global/a/member/x|generation"},
		{member("pool/global/a/member/x/member/"+i2, "node-b/test/"+i2, 2, "4"), "pool|global/a/member/x|member|" + i2},
		// Pool "a/member": its generation row looks like a member "generation"
		// of pool "a", and it has a released member whose instance is "generation".
		{gen("pool/global/a/member/generation", 5, ""), "pool|global/a/member|generation"},
		{leaseRow{"pool/global/a/member/member/generation", "", 9, now - 9000, now - 8000, now - 7000, "5"}, "pool|global/a/member|member|generation"},
		// Pool "a/generation" and a cluster-scoped pool.
		{gen("pool/global/a/generation/generation", 2, ""), "pool|global/a/generation|generation"},
		{gen("pool/cluster/eu-1/orders/generation", 11, i1), "pool|cluster/eu-1/orders|generation"},
		{member("pool/cluster/eu-1/orders/member/"+i1, "node-a/eu-1/"+i1, 1, "11"), "pool|cluster/eu-1/orders|member|" + i1},
		// Elections, including ones named like pool rows, stay as they are.
		{member("global/billing", "node-a/test/"+i1, 12, ""), ""},
		{member("cluster/eu-1/reports", "node-a/eu-1/"+i1, 8, ""), ""},
		{member("global/pool/global/a/generation", "node-a/test/"+i1, 6, ""), ""},
	}
	for _, r := range rows {
		w := r.row
		if err := db.Exec("INSERT INTO leasehold_leases (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
			w.Name, w.Holder, w.Epoch, w.AcquiredAtUS, w.RenewedAtUS, w.ExpiresAtUS, w.Data).Error; err != nil {
			t.Fatal(err)
		}
	}

	// Migrate from several goroutines at once.
	const runs = 6
	var wg sync.WaitGroup
	results := make([][]int, runs)
	errs := make([]error, runs)
	gate := make(chan struct{})
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			mctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			results[i], errs[i] = migrations.Migrate(mctx, db, migrations.Options{})
		}()
	}
	close(gate)
	wg.Wait()
	var appliedBy []int
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("Migrate run %d: %v", i, errs[i])
		}
		if len(results[i]) > 0 {
			appliedBy = append(appliedBy, i)
			if want := versionsFrom(3); !slices.Equal(results[i], want) {
				t.Errorf("Migrate run %d applied %v, want %v", i, results[i], want)
			}
		}
	}
	if len(appliedBy) != 1 {
		t.Fatalf("%d runs applied version 3 (%v), want exactly 1", len(appliedBy), appliedBy)
	}

	check := func() {
		t.Helper()
		got := leaseRows(t, db)
		want := map[string]leaseRow{}
		for _, r := range rows {
			if r.newKey == "" {
				want[r.row.Name] = r.row
				continue
			}
			renamed := r.row
			renamed.Name = r.newKey
			want[r.newKey] = renamed
			tomb := r.row
			tomb.Holder, tomb.ExpiresAtUS = "leasehold:renamed", 253402300799999999
			want[tomb.Name] = tomb
		}
		for name, w := range want {
			if g, ok := got[name]; !ok {
				t.Errorf("row %s is missing", w)
			} else if g != w {
				t.Errorf("row %s, want %s", g, w)
			}
		}
		for name, g := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("unexpected row %s", g)
			}
		}
	}
	check()

	// Running it again changes nothing.
	if applied, err := migrations.Migrate(ctx, db, migrations.Options{}); err != nil || len(applied) != 0 {
		t.Fatalf("Migrate again applied %v, %v; want nothing", applied, err)
	}
	check()

	// This build reads the renamed pools as they were.
	id, err := identity.New("node-c", "test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Pool(coordination.GlobalScope, "a", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Generation != 7 || !slices.Equal(st.List, []string{i1, i2}) || len(st.Members) != 2 ||
		st.Members[0].ID != i1 || st.Members[0].Ack != 7 || !st.Members[0].Live ||
		st.Members[1].ID != i2 || st.Members[1].Ack != 6 || !st.Members[1].Live {
		t.Errorf("pool %q after the migration: %+v", p.Key(), st)
	}
	p, err = c.Pool(coordination.GlobalScope, "a/member", coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err = p.State(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Generation != 5 || len(st.Members) != 1 || st.Members[0].ID != "generation" || st.Members[0].Live {
		t.Errorf("pool %q after the migration: %+v", p.Key(), st)
	}
}
