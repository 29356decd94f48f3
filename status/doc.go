// Package status serves a read-only status page of the leases, pools,
// keyed locks, semaphores and processes in a coordinator's database, as
// an http.Handler.
//
// The page has a section each for:
//
//   - every election lease: name, holder, epoch, when its term began and
//     its session was last renewed, the time left by the database clock,
//     whether it is live and whether this process holds it. The rows of
//     pool members, keyed locks and semaphore slots, and those the keyed
//     locks keep for their epochs, are not leases and not listed here;
//   - every pool: its generation, the members of that generation in index
//     order with their acknowledgements, and member rows outside it; a
//     member whose process's session is gone or expired is dead;
//   - every namespace of keyed locks (coordination.Locks) and semaphore
//     (coordination.Semaphore): the keys or slots held, with holder,
//     epoch and expiry. A semaphore's limit is not stored: the page shows
//     its highest slot tried, plus one;
//   - every process with a session (coordination.Admin.Sessions): its
//     holder, the last renewal, expiry and time left of its session by
//     the database clock, and where it receives peer wake-ups;
//   - every scheduled worker (workers.Scheduled): its next slot, the run
//     in progress and its recent runs, from the progress its lease row
//     keeps;
//
// and, above them, this process's renewal state and health: whether its
// health checks (coordination.Config.HealthCheck) keep it from
// campaigning, and for how long, without the checks' error text. Long
// holder strings and lock keys are cut to a width, in full in their
// title. It is plain HTML from html/template, with every value escaped,
// and reloads itself every few seconds with a meta refresh; no script
// runs.
//
// The same data is served as JSON when the path ends in ".json", the query
// has format=json, or the request accepts application/json: mount the
// handler at "/status" and "/status.json". Every request reads the
// database with three statements (Admin.Leases, Admin.Pools and
// Admin.Sessions of the coordinator's Admin), on the primary. When that
// fails the handler answers 503 with a short message and logs the error;
// the message never contains the error's text.
//
// The JSON is a Snapshot: the library's own types (coordination.LeaseInfo,
// coordination.PoolState, coordination.SessionInfo,
// coordination.RenewalState, workers.ScheduleState) in their JSON
// encoding, and Locks. Times are RFC 3339 in UTC, by the database clock
// but for the renewal state's, which are by the serving process's clock.
// What the page derives is not in it: a lease's or session's time left is
// its expires_at less its database_time while it is live, a pool member's
// index is its position in the pool's list, it has acknowledged the
// generation when its ack equals the pool's generation, and it is dead
// when it is not live and has a holder or no row. Read returns the same
// data without a handler, from a coordination.Admin, which needs no
// identity and no running coordinator: the leasehold command's "status
// -json" prints it, so a script reads one format from either.
//
// The handler serves what the database shows to anyone who can reach it:
// mount it where only operators can.
package status
