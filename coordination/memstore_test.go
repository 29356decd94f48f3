package coordination

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// memStore is an in-memory leaseStore whose "database clock" is time.Now,
// so inside a testing/synctest bubble the whole lease protocol runs on fake
// time. It implements the same conditions as the SQL statements.
type memStore struct {
	mu   sync.Mutex
	rows map[string]*store.Row

	// renewDelay, when set, is how long Renew takes before it executes
	// (the statement runs at the end of the delay, like a slow network).
	renewDelay time.Duration
	// renewErr, when set, makes Renew fail.
	renewErr error
	renews   int
	// releaseGate, when set, blocks Release until it is closed.
	releaseGate chan struct{}
	// serialWriters is what SerializesWriters reports, as for SQLite.
	serialWriters bool
}

func newMemStore() *memStore { return &memStore{rows: make(map[string]*store.Row)} }

func nowUS() int64 { return time.Now().UnixMicro() }

func (m *memStore) Dialect() string { return "memory" }

func (m *memStore) EnsureRow(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows[name] == nil {
		m.rows[name] = &store.Row{Name: name}
	}
	return nil
}

func (m *memStore) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[name]
	now := nowUS()
	if r == nil || (r.Holder != "" && r.Holder != holder && r.ExpiresAtUS >= now) {
		return 0, false, nil
	}
	r.Holder, r.Epoch = holder, r.Epoch+1
	r.AcquiredAtUS, r.RenewedAtUS, r.ExpiresAtUS = now, now, now+ttl.Microseconds()
	return r.Epoch, true, nil
}

func (m *memStore) Renew(ctx context.Context, holder string, terms []store.Term, ttl time.Duration) ([]store.Term, error) {
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
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	var lost []store.Term
	for _, t := range terms {
		r := m.rows[t.Name]
		if r == nil || r.Holder != holder || r.Epoch != t.Epoch || r.ExpiresAtUS < now {
			lost = append(lost, t)
			continue
		}
		r.RenewedAtUS, r.ExpiresAtUS = now, now+ttl.Microseconds()
	}
	return lost, nil
}

func (m *memStore) Release(ctx context.Context, holder string, terms []store.Term) (int64, error) {
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
		if r := m.rows[t.Name]; r != nil && r.Holder == holder && r.Epoch == t.Epoch {
			r.Holder, r.ExpiresAtUS = "", nowUS()
			n++
		}
	}
	return n, nil
}

func (m *memStore) Get(ctx context.Context, names []string) ([]store.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Row
	for _, n := range names {
		if r := m.rows[n]; r != nil {
			c := *r
			c.NowUS = nowUS()
			out = append(out, c)
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

func (m *memStore) RenewIn(tx *gorm.DB, holder string, terms []store.Term, ttl time.Duration) (int64, error) {
	return 0, nil
}

func (m *memStore) SetData(ctx context.Context, holder string, t store.Term, data string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[t.Name]
	if r == nil || r.Holder != holder || r.Epoch != t.Epoch || r.ExpiresAtUS < nowUS() {
		return false, nil
	}
	r.Data = data
	return true, nil
}

func (m *memStore) Publish(ctx context.Context, name string, from int64, data string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[name]
	if r == nil || r.Holder != "" || r.Epoch != from {
		return false, nil
	}
	r.Epoch, r.Data, r.RenewedAtUS = from+1, data, nowUS()
	return true, nil
}

func (m *memStore) PruneDead(ctx context.Context, prefix string, grace time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	var n int64
	for name, r := range m.rows {
		if strings.HasPrefix(name, prefix) && r.ExpiresAtUS < now && (r.Holder == "" || r.ExpiresAtUS < now-grace.Microseconds()) {
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

// expire makes a row expired now, as if its holder stopped renewing.
func (m *memStore) expire(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[name].ExpiresAtUS = nowUS() - 1
}

func (m *memStore) set(f func(m *memStore)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

func (m *memStore) row(name string) store.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.rows[name]
}
