package coordination

import "time"

// LeaseInfo is a lease as the database sees it.
type LeaseInfo struct {
	Key    string `json:"key"`    // full lease name
	Holder string `json:"holder"` // "" when free
	Epoch  int64  `json:"epoch"`
	// AcquiredAt is when the current (or last) term began; RenewedAt and
	// ExpiresAt, the last renewal and the expiry of the holder's session.
	// All are database-clock times in UTC, zero for a lease never acquired.
	AcquiredAt time.Time `json:"acquired_at,omitzero"`
	RenewedAt  time.Time `json:"renewed_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	// DatabaseTime is the database clock at the read.
	DatabaseTime time.Time `json:"database_time,omitzero"`
	// Live reports whether the lease was held and unexpired at the read.
	Live bool `json:"live"`
	// Data is what the lease's holders wrote with Lease.SetData, such as a
	// scheduled worker's progress; "" when none.
	Data string `json:"data,omitempty"`
}

// SessionInfo is one process as the session table shows it
// (Admin.Sessions): the session its leases and pool memberships ride on,
// and where it receives peer wake-ups.
type SessionInfo struct {
	Holder string `json:"holder"` // node/cluster/instance
	// RenewedAt and ExpiresAt are the last renewal and the expiry of the
	// session, by the database clock, in UTC; every lease and membership
	// of the process ends at ExpiresAt unless it renews. DatabaseTime is
	// the database clock at the read.
	RenewedAt    time.Time `json:"renewed_at,omitzero"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
	DatabaseTime time.Time `json:"database_time,omitzero"`
	// Live reports whether the session was unexpired at the read.
	Live bool `json:"live"`
	// WakeAddrs lists the UDP addresses at which the process receives
	// peer wake-ups (Config.WakeAddress); empty when it receives none
	// there.
	WakeAddrs []string `json:"wake_addrs,omitempty"`
}
