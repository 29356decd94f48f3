package store

import (
	"strings"
	"time"
)

// Term identifies one term of one lease: the name and the epoch it was
// acquired with.
type Term struct {
	Name  string
	Epoch int64
}

// stmt is one statement and its bound arguments; an empty one is a step
// a database does not take (execStep).
type stmt struct {
	q    string
	args []any
}

// counted is a statement that changes rows, with how it reports their
// count: as its affected rows, or (byRow) as the first of the two columns
// of its one row.
type counted struct {
	stmt
	byRow bool
}

// Chunk sizes: how many names or terms one statement carries, within SQL
// Server's 2,100 bound parameters (the smallest limit of the four).
const (
	// ReadChunk is how many names one read carries (one parameter each).
	ReadChunk = 1000
	// WriteChunk is how many names or terms one insert, acquire or release
	// carries (at most two parameters each, plus a few).
	WriteChunk = 500
)

// Row is one lease as the database sees it, read together with the
// database clock. Times are on the database clock, in UTC; zero for a
// lease never acquired.
type Row struct {
	Name    string
	Holder  string // the holder's identity; "" when free
	Session string // the session holding it; "" when free or held by a build before sessions
	Epoch   int64
	// AcquiredAt is when the current (or last) term began.
	AcquiredAt time.Time
	// RenewedAt and ExpiresAt are the holder's session's (the row's own
	// when it has none); ExpiresAt is zero when the session is gone.
	RenewedAt, ExpiresAt time.Time
	Data                 string
	// ResignEpoch is the epoch of the term a resign request was recorded
	// for (0 for none); it asks only while it equals Epoch.
	ResignEpoch int64
	// PreferredHolder names the process a resign request prefers as the
	// next holder (a holder string, node or instance id), until
	// PreferredUntil; "" for none.
	PreferredHolder string
	PreferredUntil  time.Time
	// Now is the database clock at the read.
	Now time.Time
	// HoldUntil is when leases may be taken again after a failover of the
	// database; zero when there is no hold-off.
	HoldUntil time.Time
	// EpochFloor is the floor every new epoch goes above (incarnation.go):
	// a pool whose generation is below it publishes its next one.
	EpochFloor int64

	// incarnationStale: the incarnation row was missing or named another
	// incarnation.
	incarnationStale bool
}

// HeldOff reports whether no lease could be taken at the read, after a
// failover of the database.
func (r Row) HeldOff() bool { return r.HoldUntil.After(r.Now) }

// Live reports whether the lease was held and unexpired at the read, as
// heldExpr decides in SQL.
func (r Row) Live() bool { return r.Holder != "" && !r.ExpiresAt.Before(r.Now) }

// ReservedAgainst reports whether an unexpired resign preference named
// another process than holder at the read.
func (r Row) ReservedAgainst(holder string) bool {
	return r.PreferredHolder != "" && !r.PreferredUntil.Before(r.Now) && !Prefers(r.PreferredHolder, holder)
}

// Takeable reports whether an acquire by holder under session ("" for
// none) would take the lease, as the acquire statement decides: it is not
// live or is session's, not reserved against holder, and not held off.
func (r Row) Takeable(session, holder string) bool {
	return (!r.Live() || (session != "" && r.Session == session)) && !r.ReservedAgainst(holder) && !r.HeldOff()
}

// Prefers reports whether a resign preference names the process with this
// holder string: as its holder string, its node or its instance id.
func Prefers(preference, holder string) bool {
	f := HolderForms(holder)
	return preference == f[0] || preference == f[1] || preference == f[2]
}

// Session is the database's view of one session.
type Session struct {
	RenewedAt, ExpiresAt, Now time.Time
}

// SessionRow is one row of the session table, as ListSessions reads it.
type SessionRow struct {
	ID, Holder string
	// WakeAddrs is the wake.Advert.Addrs of a row that advertises where
	// its process receives peer wake-ups, which holds no lease; "" for a
	// session of leases.
	WakeAddrs string
	Session
}

// Live reports whether the session was unexpired at the read.
func (s Session) Live() bool { return !s.ExpiresAt.Before(s.Now) }

// HolderForms returns the three names a resign preference may give the
// process of holder ("node/cluster/instance"): holder, its node and its
// instance id.
func HolderForms(holder string) [3]string {
	node, instance := holder, holder
	if i := strings.IndexByte(holder, '/'); i >= 0 {
		node = holder[:i]
	}
	if i := strings.LastIndexByte(holder, '/'); i >= 0 {
		instance = holder[i+1:]
	}
	return [3]string{holder, node, instance}
}
