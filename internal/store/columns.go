package store

// The columns of the coordination tables, as the migration steps of
// schema.go create or add them.

// leaseColumns1 are the columns of the lease table as version 1 created it.
var leaseColumns1 = []column{
	{name: "name", typ: nameCol},
	{name: "holder", typ: nameCol, def: "''"},
	{name: "epoch", typ: bigintCol, def: "0"},
	{name: "acquired_at_us", typ: bigintCol, def: "0"},
	{name: "renewed_at_us", typ: bigintCol, def: "0"},
	{name: "expires_at_us", typ: bigintCol, def: "0"},
}

// resignColumns carry a resign request on a lease row: resign_epoch is the
// epoch of the term asked to resign (0 for none; a request for an older
// term is ignored, and an acquire clears it), prefer_holder names the
// process that should take the lease next (a holder string, node or
// instance id; ” for any), and prefer_until_us is when that preference
// ends by the database clock (0 for none).
var resignColumns = []column{
	{name: "resign_epoch", typ: bigintCol, def: "0"},
	{name: "prefer_holder", typ: nameCol, def: "''"},
	{name: "prefer_until_us", typ: bigintCol, def: "0"},
}

// noticeColumn counts the resign requests made to a session's leases. The
// renewal statement returns it, so a holder learns of a request at its next
// renewal and reads its pending requests only when the count changed.
var noticeColumn = column{name: "notice", typ: bigintCol, def: "0"}

// sessionColumns are the columns of the session table: one row per
// running process that holds or is acquiring leases. A tick of the
// holder renews this one row, and every lease whose session_id names it is
// live while it is.
var sessionColumns = []column{
	{name: "id", typ: nameCol},
	{name: "holder", typ: nameCol, def: "''"},
	{name: "created_at_us", typ: bigintCol, def: "0"},
	{name: "renewed_at_us", typ: bigintCol, def: "0"},
	{name: "expires_at_us", typ: bigintCol, def: "0"},
}

// sessionIDColumn names the session that holds a lease; ” when the lease
// is free, or held by a build before sessions (with its own expiry).
var sessionIDColumn = column{name: "session_id", typ: nameCol, def: "''"}

// incarnationColumns are the columns of the incarnation table, which has
// one row (id 1) once a process has looked (incarnation.go): the database
// incarnation the lease rows were last known to live in, the one before
// it, when the change was noticed and until when no lease may be taken
// (by the database clock), and the floor every new epoch goes above.
var incarnationColumns = []column{
	{name: "id", typ: intCol},
	{name: "incarnation", typ: nameCol, def: "''"},
	{name: "previous", typ: nameCol, def: "''"},
	{name: "adopted_at_us", typ: bigintCol, def: "0"},
	{name: "hold_until_us", typ: bigintCol, def: "0"},
	{name: "epoch_floor", typ: bigintCol, def: "0"},
}

// sessionIncarnationColumn is the database incarnation a session was last
// checked against: its renewal succeeds only in that incarnation, so a
// process learns of a failover at its next renewal and checks its terms
// before it trusts them again.
var sessionIncarnationColumn = column{name: "incarnation", typ: nameCol, def: "''"}

// wakeColumns advertise how to wake a session's process over the network
// (package internal/wake, Peer): wake_addrs is where it receives, a token
// of its host and its addresses (wake.Advert), and wake_key the key its
// wake-ups are authenticated with, 32 random bytes in hex; both empty where
// it receives none. Only those who can read the table can wake it.
var wakeColumns = []column{
	{name: "wake_addrs", typ: nameCol, def: "''"},
	{name: "wake_key", typ: nameCol, def: "''"},
}
