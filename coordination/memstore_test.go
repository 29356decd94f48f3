package coordination

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/internal/wake"
)

// memStore is an in-memory leaseStore whose "database clock" is time.Now,
// so inside a testing/synctest bubble the whole lease protocol runs on fake
// time. It implements the same conditions as the SQL statements; whether a
// lease can be taken it decides with store.Row.Takeable, the Go statement
// of the acquire statement's rule.
type memStore struct {
	mu       sync.Mutex
	rows     map[string]*memRow
	sessions map[string]*memSession

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

// memRow is a lease row; times are microseconds on the fake clock.
type memRow struct {
	name, holder, session, data string
	epoch                       int64
	acquired, expires           int64 // expires: of unheld rows, when released or created
	resignEpoch                 int64
	prefer                      string
	preferUntil                 int64
}

type memSession struct {
	holder           string
	renewed, expires int64
	notice           int64
}

func newMemStore() *memStore {
	return &memStore{rows: make(map[string]*memRow), sessions: make(map[string]*memSession)}
}

func nowUS() int64 { return time.Now().UnixMicro() }

// liveLocked is heldExpr of the SQL dialects.
func (m *memStore) liveLocked(r *memRow, now int64) bool {
	if r.holder == "" {
		return false
	}
	if r.session == "" {
		return r.expires >= now
	}
	s := m.sessions[r.session]
	return s != nil && s.expires >= now
}

func (m *memStore) rowLocked(r *memRow, now int64) store.Row {
	out := store.Row{Name: r.name, Holder: r.holder, Session: r.session, Epoch: r.epoch, Data: r.data,
		AcquiredAt: usTime(r.acquired), Now: usTime(now),
		ResignEpoch: r.resignEpoch, PreferredHolder: r.prefer, PreferredUntil: usTime(r.preferUntil)}
	switch s := m.sessions[r.session]; {
	case r.session == "":
		out.ExpiresAt = usTime(r.expires)
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

func (m *memStore) Dialect() string { return "memory" }

func (m *memStore) CreateSession(ctx context.Context, id, holder string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	m.sessions[id] = &memSession{holder: holder, renewed: now, expires: now + ttl.Microseconds()}
	return nil
}

// ProbeFailover finds nothing to probe: the in-memory database has one
// incarnation.
func (m *memStore) ProbeFailover(ctx context.Context) (error, error) { return nil, nil }

// Rebind finds no failover: the in-memory database has one incarnation.
func (m *memStore) Rebind(ctx context.Context, id string) ([]store.Term, bool, error) {
	return nil, false, nil
}

func (m *memStore) RenewSession(ctx context.Context, id string, ttl time.Duration) (bool, int64, error) {
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

func (m *memStore) RequestResign(ctx context.Context, name, prefer string,
	check func(store.Row) (time.Duration, error)) (store.Row, bool, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[name]
	if r == nil {
		return store.Row{}, false, false, nil
	}
	now := nowUS()
	row := m.rowLocked(r, now)
	window, err := check(row)
	if err != nil {
		return row, true, false, err
	}
	s := m.sessions[r.session]
	if s == nil {
		return row, true, false, nil
	}
	r.resignEpoch, r.prefer, r.preferUntil = r.epoch, prefer, 0
	if prefer != "" {
		r.preferUntil = now + window.Microseconds()
	}
	s.notice++
	return row, true, true, nil
}

func (m *memStore) PendingResigns(ctx context.Context, session string, names []string) ([]store.Term, error) {
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

func (m *memStore) RenewSessionIn(tx *gorm.DB, id string, ttl time.Duration) (bool, int64, error) {
	return false, 0, nil
}

func (m *memStore) ReadSession(ctx context.Context, id string) (store.Session, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return store.Session{}, false, nil
	}
	return store.Session{RenewedAt: usTime(s.renewed), ExpiresAt: usTime(s.expires), Now: usTime(nowUS())}, true, nil
}

func (m *memStore) EndSession(ctx context.Context, id string, pruneAfter time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	return nil
}

func (m *memStore) EnsureRows(ctx context.Context, names []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range names {
		if r := m.rows[name]; r == nil {
			m.rows[name] = &memRow{name: name, expires: nowUS()}
		} else if r.holder == "" {
			r.expires = nowUS()
		}
	}
	return nil
}

func (m *memStore) Acquire(ctx context.Context, session, holder string, names []string) ([]store.Term, error) {
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
		r.holder, r.session, r.epoch, r.acquired = holder, session, r.epoch+1, now
		r.resignEpoch, r.prefer, r.preferUntil = 0, "", 0
		out = append(out, store.Term{Name: name, Epoch: r.epoch})
	}
	return out, nil
}

// AcquireEach is Acquire in statements of store.WriteChunk names, as the
// store sends them.
func (m *memStore) AcquireEach(ctx context.Context, session, holder string, names []string, took func([]store.Term)) ([]string, error) {
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

func (m *memStore) Release(ctx context.Context, session string, terms []store.Term) (int64, error) {
	m.mu.Lock()
	gate := m.releaseGate
	m.mu.Unlock()
	if gate != nil {
		<-gate
	}
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

func (m *memStore) Get(ctx context.Context, names []string) ([]store.Row, error) {
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

func (m *memStore) List(ctx context.Context, prefix string) ([]store.Row, error) {
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

func (m *memStore) Fence(tx *gorm.DB, name string) (store.Row, bool, error) {
	rows, _ := m.Get(context.Background(), []string{name})
	if len(rows) == 0 {
		return store.Row{}, false, nil
	}
	return rows[0], true, nil
}

func (m *memStore) SerializesWriters() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serialWriters
}

func (m *memStore) SetData(ctx context.Context, session string, t store.Term, data string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[t.Name]
	if r == nil || r.session != session || r.epoch != t.Epoch || !m.liveLocked(r, nowUS()) {
		return false, nil
	}
	r.data = data
	return true, nil
}

func (m *memStore) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[name]
	if r == nil || r.holder != "" || r.epoch != from {
		return false, nil
	}
	r.epoch, r.data = from+1, data
	return true, nil
}

func (m *memStore) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := nowUS() - grace.Microseconds()
	var n int64
	for name, r := range m.rows {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		s := m.sessions[r.session]
		if (r.session == "" && r.expires < old) || (r.session != "" && (s == nil || s.expires < old)) {
			delete(m.rows, name)
			n++
		}
	}
	return n, nil
}

func (m *memStore) Migrate(ctx context.Context, lockTimeout time.Duration) ([]int, error) {
	return nil, nil
}

func (m *memStore) CheckSchema(ctx context.Context) error { return nil }

// expireSession makes the session holding a row expired now, as if its
// holder stopped renewing.
func (m *memStore) expireSession(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[m.rows[name].session].expires = nowUS() - 1
}

func (m *memStore) set(f func(m *memStore)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

func (m *memStore) row(name string) store.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rowLocked(m.rows[name], nowUS())
}

// Wakeups: the memory store has no wake-ups; its coordinators poll.
func (m *memStore) Wakeups() wake.Database { return nil }
