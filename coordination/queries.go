package coordination

import "time"

// Held returns the tokens of the leases this process holds and trusts now.
func (c *Coordinator) Held() []Token {
	var out []Token
	c.terms.query(func(st *termState) { out = st.tokens() })
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
	// Data is the data the lease row carries (Lease.SetData): for an
	// election, what its holders wrote, such as a scheduled worker's
	// progress and history; "" when none.
	Data string
}
