package memstore

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

// Store is an in-memory coordination store whose database clock is
// time.Now. It offers the methods *store.Store and its owners
// (Sessions, Schema, Failover) offer the coordinator, and fault knobs. It
// is made of owners as the SQL store is, each a view of the one state:
// Sessions (the session rows), Leases (the lease rows, their data and
// resign requests), Floored (the rows of keyed locks, floored.go), Schema
// (the schema and what the database can do) and Faults (the fault knobs,
// knobs.go). It is safe for concurrent use.
type Store struct {
	*state
	Sessions
	Leases
	Floored
	Schema
	Faults
}

// state is the store's rows, behind one lock, as a database's are.
type state struct {
	mu       sync.Mutex
	rows     map[string]*row
	sessions map[string]*session

	// renewDelay, when set, is how long RenewSession takes before it
	// executes (the statement runs at the end of the delay, like a slow
	// network).
	renewDelay time.Duration
	// renewErr, when set, makes RenewSession fail.
	renewErr error
	renews   int
	// releaseGate, when set, blocks Release until it is closed.
	releaseGate chan struct{}
	// acquireDelay, when set, is how long each Acquire takes before it
	// executes, as for a large batch on a loaded database.
	acquireDelay time.Duration
	// serialWriters is what SerializesWriters reports, as for SQLite.
	serialWriters bool
}

// Sessions is the store's session rows: their start, renewal, reading and
// end, and the check of a session's terms (Rebind).
type Sessions struct{ *state }

// Leases is the store's lease rows: their creation, acquisition, release
// and reading, the fencing read, the rows' data and pool generations, and
// the resign requests.
type Leases struct{ *state }

// Floored is the rows of keyed locks (floored.go).
type Floored struct{ *state }

// Schema is the store's schema, always current, and what its database
// can do: no failovers, no wake-ups.
type Schema struct{ *state }

// Faults is the store's fault knobs (knobs.go).
type Faults struct{ *state }

// row is a lease row; times are microseconds on the clock.
type row struct {
	name, holder, session, data string
	epoch                       int64
	acquired, expires           int64 // expires: of unheld rows, when released or created
	renewed                     int64 // when the last term began or the last generation was published
	resignEpoch                 int64
	prefer                      string
	preferUntil                 int64
}

type session struct {
	holder           string
	renewed, expires int64
	notice           int64
}

// New returns an empty store.
func New() *Store {
	st := &state{rows: make(map[string]*row), sessions: make(map[string]*session)}
	return &Store{state: st, Sessions: Sessions{st}, Leases: Leases{st}, Floored: Floored{st}, Schema: Schema{st}, Faults: Faults{st}}
}

// waitReleaseGate waits, before a release, until the gate set by
// GateReleases, if any, is open.
func (m *state) waitReleaseGate() {
	m.mu.Lock()
	gate := m.releaseGate
	m.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

// nowUS is the store's clock: time.Now in microseconds, as the SQL
// databases' clocks resolve.
func nowUS() int64 { return time.Now().UnixMicro() }

// liveLocked is heldExpr of the SQL dialects.
func (m *state) liveLocked(r *row, now int64) bool {
	if r.holder == "" {
		return false
	}
	if r.session == "" {
		return r.expires >= now
	}
	s := m.sessions[r.session]
	return s != nil && s.expires >= now
}

func (m *state) rowLocked(r *row, now int64) store.Row {
	out := store.Row{Name: r.name, Holder: r.holder, Session: r.session, Epoch: r.epoch, Data: r.data,
		AcquiredAt: usTime(r.acquired), Now: usTime(now),
		ResignEpoch: r.resignEpoch, PreferredHolder: r.prefer, PreferredUntil: usTime(r.preferUntil)}
	switch s := m.sessions[r.session]; {
	case r.session == "":
		out.RenewedAt, out.ExpiresAt = usTime(r.renewed), usTime(r.expires)
	case s != nil:
		out.RenewedAt, out.ExpiresAt = usTime(s.renewed), usTime(s.expires)
	}
	return out
}

func usTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// Dialect returns "memory".
func (m Schema) Dialect() string { return "memory" }

// CreateSession starts session id of holder, live for ttl.
func (m Sessions) CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	m.sessions[id] = &session{holder: holder, renewed: now, expires: now + ttl.Microseconds()}
	return nil
}

// ProbeFailover finds nothing to probe: the in-memory database has one
// incarnation.
func (m Schema) ProbeFailover(ctx context.Context) (unsupported, err error) { return nil, nil }

// CheckBusyTimeout has nothing to advise: the in-memory database has no
// locks to wait for.
func (m Schema) CheckBusyTimeout(ctx context.Context) (advice, err error) { return nil, nil }

// Rebind finds no failover: the in-memory database has one incarnation.
func (m Sessions) Rebind(ctx context.Context, id string) (terms []store.Term, ok bool, err error) {
	return nil, false, nil
}

// RenewSession extends session id to now plus ttl, if it has not expired,
// and returns its notice counter, as store.Sessions.RenewSession does.
// SetRenewDelay and FailRenewals slow it down or make it fail.
func (m Sessions) RenewSession(ctx context.Context, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	m.mu.Lock()
	delay, fail := m.renewDelay, m.renewErr
	m.renews++
	m.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, 0, ctx.Err()
		}
	}
	if fail != nil {
		return false, 0, fail
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	s := m.sessions[id]
	if s == nil || s.expires < now {
		return false, 0, nil
	}
	s.renewed, s.expires = now, now+ttl.Microseconds()
	return true, s.notice, nil
}

// RequestResign records a resign request for the current term of the
// lease name, as store.Store.RequestResign does.
func (m Leases) RequestResign(ctx context.Context, name, prefer string,
	check func(store.Row) (time.Duration, error)) (r store.Row, found, notified bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lr := m.rows[name]
	if lr == nil {
		return store.Row{}, false, false, nil
	}
	now := nowUS()
	r = m.rowLocked(lr, now)
	window, err := check(r)
	if err != nil {
		return r, true, false, err
	}
	s := m.sessions[lr.session]
	if s == nil {
		return r, true, false, nil
	}
	lr.resignEpoch, lr.prefer, lr.preferUntil = lr.epoch, prefer, 0
	if prefer != "" {
		lr.preferUntil = now + window.Microseconds()
	}
	s.notice++
	return r, true, true, nil
}

// PendingResigns returns the terms, among the named leases held by
// session, for which a resign request is recorded.
func (m Leases) PendingResigns(ctx context.Context, session string, names []string) ([]store.Term, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Term
	for _, n := range names {
		if r := m.rows[n]; r != nil && r.session == session && r.resignEpoch == r.epoch && r.resignEpoch > 0 {
			out = append(out, store.Term{Name: n, Epoch: r.epoch})
		}
	}
	return out, nil
}

// RenewSessionIn renews nothing: the store has no transactions.
func (m Sessions) RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (ok bool, notice int64, err error) {
	return false, 0, nil
}

// ReadSession reads session id; ok is false when it is gone.
func (m Sessions) ReadSession(ctx context.Context, id string) (store.Session, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return store.Session{}, false, nil
	}
	return store.Session{RenewedAt: usTime(s.renewed), ExpiresAt: usTime(s.expires), Now: usTime(nowUS())}, true, nil
}

// ListSessions reads every session row, by holder and id, as
// store.Sessions.ListSessions does; none advertises wake-ups.
func (m Sessions) ListSessions(ctx context.Context) ([]store.SessionRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := usTime(nowUS())
	out := make([]store.SessionRow, 0, len(m.sessions))
	for id, s := range m.sessions {
		out = append(out, store.SessionRow{ID: id, Holder: s.holder,
			Session: store.Session{RenewedAt: usTime(s.renewed), ExpiresAt: usTime(s.expires), Now: now}})
	}
	slices.SortFunc(out, func(a, b store.SessionRow) int {
		return cmp.Or(strings.Compare(a.Holder, b.Holder), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// EndSession deletes session id: every lease it still holds is free at
// once. Sessions expired for longer than pruneAfter are pruned on the way.
func (m Sessions) EndSession(ctx context.Context, id string, pruneAfter time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	old := nowUS() - pruneAfter.Microseconds()
	for sid, s := range m.sessions {
		if s.expires < old {
			delete(m.sessions, sid)
		}
	}
	return nil
}

// EnsureRows creates the rows of the named leases that do not exist yet;
// an existing unheld row counts as released now, as in the SQL stores.
func (m Leases) EnsureRows(ctx context.Context, names []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range names {
		if r := m.rows[name]; r == nil {
			m.rows[name] = &row{name: name, expires: nowUS()}
		} else if r.holder == "" {
			r.expires = nowUS()
		}
	}
	return nil
}

// Acquire takes, for the live session, every named lease that is
// takeable (store.Row.Takeable) and starts a new term of each with the
// next epoch. SetAcquireDelay slows it down.
func (m Leases) Acquire(ctx context.Context, session, holder string, names []string) ([]store.Term, error) {
	m.mu.Lock()
	delay := m.acquireDelay
	m.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	if s := m.sessions[session]; s == nil || s.expires < now {
		return nil, nil
	}
	var out []store.Term
	for _, name := range names {
		r := m.rows[name]
		if r == nil || !m.rowLocked(r, now).Takeable(session, holder) {
			continue
		}
		r.holder, r.session, r.epoch, r.acquired, r.renewed = holder, session, r.epoch+1, now, now
		r.resignEpoch, r.prefer, r.preferUntil = 0, "", 0
		out = append(out, store.Term{Name: name, Epoch: r.epoch})
	}
	return out, nil
}

// AcquireEach is Acquire in statements of store.WriteChunk names, as the
// SQL store sends them.
func (m Leases) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) (failed []string, err error) {
	for len(names) > 0 {
		chunk := names[:min(len(names), store.WriteChunk)]
		names = names[len(chunk):]
		terms, err := m.Acquire(ctx, session, holder, chunk)
		if err != nil {
			return chunk, err
		}
		took(terms)
	}
	return nil, nil
}

// Release gives up the given terms of session and returns how many were
// still held; a term not the session's at that epoch is left untouched.
// GateReleases holds it back.
func (m Leases) Release(ctx context.Context, session string, terms []store.Term) (int64, error) {
	m.waitReleaseGate()
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, t := range terms {
		if r := m.rows[t.Name]; r != nil && r.session == session && r.epoch == t.Epoch {
			r.holder, r.session, r.expires = "", "", nowUS()
			n++
		}
	}
	return n, nil
}

// Get reads the named leases; names without a row are absent.
func (m Leases) Get(ctx context.Context, names []string) ([]store.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	var out []store.Row
	for _, n := range names {
		if r := m.rows[n]; r != nil {
			out = append(out, m.rowLocked(r, now))
		}
	}
	return out, nil
}

// List reads every lease whose name starts with prefix ("" for all),
// ordered by name.
func (m Leases) List(ctx context.Context, prefix string) ([]store.Row, error) {
	m.mu.Lock()
	var names []string
	for n := range m.rows {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	m.mu.Unlock()
	sort.Strings(names)
	return m.Get(ctx, names)
}

// Fence reads the lease row; tx is not used.
func (m Leases) Fence(tx *gorm.DB, name string) (store.Row, bool, error) {
	rows, _ := m.Get(context.Background(), []string{name})
	if len(rows) == 0 {
		return store.Row{}, false, nil
	}
	return rows[0], true, nil
}

// FenceGeneration reads a pool's generation row, as Fence does.
func (m Leases) FenceGeneration(tx *gorm.DB, name string) (store.Row, bool, error) {
	return m.Fence(tx, name)
}

// SerializesWriters reports what SetSerialWriters set (false by default).
func (m Leases) SerializesWriters() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serialWriters
}

// SetData writes data into a row this session holds at this epoch, while
// the session is live. It reports false when the term is over. The
// in-process store carries no wake-ups (Schema.Wakeups): the name of the
// wake-up is not used.
func (m Leases) SetData(ctx context.Context, session string, t store.Term, data, _ string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[t.Name]
	if r == nil || r.session != session || r.epoch != t.Epoch || !m.liveLocked(r, nowUS()) {
		return false, nil
	}
	r.data = data
	return true, nil
}

// SetDataIn is SetData; tx is not used (the in-process store has no
// transactions).
func (m Leases) SetDataIn(tx *gorm.DB, session string, t store.Term, data string) (bool, error) {
	return m.SetData(context.Background(), session, t, data, "")
}

// Publish moves an unheld row from epoch from to from+1 with new data,
// only if it is still at from: a compare-and-set.
func (m Leases) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[name]
	if r == nil || r.holder != "" || r.epoch != from {
		return false, nil
	}
	r.epoch, r.data, r.renewed = from+1, data, nowUS()
	return true, nil
}

// PruneDead deletes the rows whose name starts with prefix that are
// unheld for longer than grace, or held by a session expired (or gone) for
// longer than grace, and returns how many.
func (m Leases) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := nowUS() - grace.Microseconds()
	var n int64
	for name, r := range m.rows {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if m.deadLocked(r, old) {
			delete(m.rows, name)
			n++
		}
	}
	return n, nil
}

// Migrate applies nothing: the store has no schema.
func (m Schema) Migrate(ctx context.Context, lockTimeout time.Duration) ([]int, error) {
	return nil, nil
}

// CheckSchema finds nothing missing.
func (m Schema) CheckSchema(ctx context.Context) error { return nil }

// Wakeups returns nil: the memory store has no wake-ups; its coordinators
// poll.
func (m Schema) Wakeups() wake.Database { return nil }
