package leaseholdtest

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// Cut takes the database away from every process, as a database that
// stops answering: every statement fails until Restore, also those of
// processes started meanwhile and the DB's own helpers. The holders ride
// out the failures until their trust deadlines, then step down.
func (d *DB) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	d.admin.Cut()
	for _, p := range d.procs {
		p.conn.Cut()
	}
}

// Restore brings the database back after Cut: statements succeed again,
// except those of processes cut by Process.Cut or crashed.
func (d *DB) Restore() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = false
	d.admin.Restore()
	for _, p := range d.procs {
		p.mu.Lock()
		crashed := p.crashed
		p.mu.Unlock()
		if !crashed {
			p.conn.Restore()
		}
	}
}

// Expire ends the lease name now as far as its holder can keep it: the
// holding process is cut off the database until the lease has expired by
// the database clock, then restored. The holder stops trusting the lease
// at its trust deadline, before the expiry, so no other process can take
// it while the holder still trusts it, as on a real database. Every other
// lease and pool membership of that process rides on the same session and
// expires with it. Expire returns once the lease has expired, at most TTL
// later (at once on fake time); the holder then takes part again, and
// may campaign for the lease like anyone else. It fails the test when
// the lease is not held by a process of this DB.
func (d *DB) Expire(name string) {
	d.t.Helper()
	row, ok := d.store.Row(name)
	if !ok || row.Holder == "" {
		d.t.Fatalf("leaseholdtest: Expire(%q): the lease is not held", name)
	}
	var holder *Process
	d.mu.Lock()
	for _, p := range d.procs {
		if p.coord.Holder() == row.Holder {
			holder = p
		}
	}
	d.mu.Unlock()
	if holder == nil {
		d.t.Fatalf("leaseholdtest: Expire(%q): its holder %s is no process of this DB", name, row.Holder)
	}
	holder.conn.Cut()
	defer holder.Restore()
	for {
		r, _ := d.store.Row(name)
		if r.Session != row.Session || r.Epoch != row.Epoch || !r.ExpiresAt.After(r.Now) {
			return
		}
		time.Sleep(r.ExpiresAt.Sub(r.Now) + time.Millisecond)
	}
}

// Resign asks the holder of the lease key to step down, as Admin.Resign
// does (`leasehold resign`), preferring the process preferred names, if
// any: its work's context is cancelled with ErrResigned, it releases the
// lease once the work has returned, and another process takes it. It
// returns what Admin.Resign returns.
func (d *DB) Resign(ctx context.Context, key, preferred string) (coordination.LeaseInfo, error) {
	d.t.Helper()
	db, err := d.admin.Open()
	if err != nil {
		d.t.Fatalf("leaseholdtest: %v", err)
	}
	admin, err := coordination.NewAdmin(db, coordination.Config{})
	if err != nil {
		d.t.Fatalf("leaseholdtest: %v", err)
	}
	return admin.Resign(ctx, key, preferred)
}

// Rebalance makes the pool with the given key (Pool.Key, such as
// "global/orders") go through a rebalance with the members it has: it
// publishes the next generation with the same member list, so every
// member's work is cancelled, every member acknowledges it, and every
// member's function is called again with an Assignment of the new
// generation once the barrier has passed. It returns the new generation.
// It fails the test when the pool has no generation yet (no member has
// joined) or the database is cut.
func (d *DB) Rebalance(poolKey string) int64 {
	d.t.Helper()
	name := "pool|" + poolKey + "|generation" // the pool's generation row (coordination's "Names and rows")
	for {
		row, ok := d.store.Row(name)
		if !ok {
			d.t.Fatalf("leaseholdtest: Rebalance(%q): the pool has no generation yet", poolKey)
		}
		published, err := d.admin.Publish(context.Background(), name, row.Epoch, row.Data)
		if err != nil {
			d.t.Fatalf("leaseholdtest: Rebalance(%q): %v", poolKey, err)
		}
		if published {
			return row.Epoch + 1
		}
		// A member published one meanwhile: publish over it.
	}
}
