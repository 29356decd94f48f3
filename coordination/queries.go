package coordination

import (
	"context"
	"sort"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// Held returns the tokens of the leases this process holds and trusts now.
func (c *Coordinator) Held() []Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Token, 0, len(c.held))
	for _, l := range c.held {
		if l.validLocked() {
			out = append(out, l.Token())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LeaseInfo is a lease as the database sees it.
type LeaseInfo struct {
	Name   string // full lease name
	Holder string // "" when free
	Epoch  int64
	// AcquiredAt is when the current (or last) term began. RenewedAt and
	// ExpiresAt are those of the holder's session: the lease is live until
	// ExpiresAt unless its session is renewed again. All are
	// database-clock times in UTC; zero for a lease never acquired.
	AcquiredAt, RenewedAt, ExpiresAt time.Time
	// DatabaseTime is the database clock at the read.
	DatabaseTime time.Time
	// Live reports whether the lease was held and unexpired at the read.
	Live bool
	// Mine reports whether the holder is this process: the coordinator's
	// process. Always false from an Admin, which has no identity.
	Mine bool
}

// info is the lease of row r; Mine reports whether this process holds
// it.
func (c *Coordinator) info(r store.Row) LeaseInfo { return leaseInfo(r, c.holder) }

// readOne reads the row of one lease; it reports false when there is none.
func (c *Coordinator) readOne(ctx context.Context, name string) (store.Row, bool, error) {
	rows, err := c.store.Get(ctx, []string{name})
	if err != nil || len(rows) == 0 {
		return store.Row{}, false, err
	}
	return rows[0], true, nil
}
