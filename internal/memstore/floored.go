package memstore

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// The floored rows of keyed locks, as store/floored.go describes them:
// deleted when nobody holds them, their epochs continuing from a floor
// row that is never deleted.

// EnsureFloored creates the floored rows that do not exist yet, unheld,
// each with the epoch of its floor row (created at 0 when missing).
func (m Floored) EnsureFloored(ctx context.Context, rows []store.Floored) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	for _, r := range rows {
		f := m.floorLocked(r.Floor, now)
		if m.rows[r.Name] == nil {
			m.rows[r.Name] = &row{name: r.Name, epoch: f.epoch, expires: now}
		}
	}
	return nil
}

// floorLocked returns the floor row name, created at epoch 0 when missing.
func (m *state) floorLocked(name string, now int64) *row {
	f := m.rows[name]
	if f == nil {
		f = &row{name: name, expires: now}
		m.rows[name] = f
	}
	return f
}

// deleteFlooredLocked raises the floor of r to its epoch and deletes it.
func (m *state) deleteFlooredLocked(r *row, floor string, now int64) {
	f := m.floorLocked(floor, now)
	f.epoch = max(f.epoch, r.epoch)
	delete(m.rows, r.name)
}

// ReleaseFloored gives up the given terms of session and deletes their
// rows, raising their floor rows first; it returns how many were still
// held. GateReleases holds it back, as it does Release.
func (m Floored) ReleaseFloored(ctx context.Context, session string, terms []store.FlooredTerm) (int64, error) {
	m.waitReleaseGate()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	var n int64
	for _, t := range terms {
		f := m.floorLocked(t.Floor, now)
		f.epoch = max(f.epoch, t.Epoch)
		if r := m.rows[t.Name]; r != nil && r.session == session && r.epoch == t.Epoch {
			m.deleteFlooredLocked(r, t.Floor, now)
			n++
		}
	}
	return n, nil
}

// PruneFloored deletes, in name order, up to limit rows under prefix
// that are unheld for longer than grace or held by a session expired (or
// gone) for longer than grace, raising their floor rows first.
func (m Floored) PruneFloored(ctx context.Context, prefix string, floor func(name string) string, grace time.Duration, limit int) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nowUS()
	old := now - grace.Microseconds()
	var dead []string
	for name, r := range m.rows {
		if strings.HasPrefix(name, prefix) && m.deadLocked(r, old) {
			dead = append(dead, name)
		}
	}
	sort.Strings(dead)
	limit = min(max(limit, 1), store.WriteChunk)
	if len(dead) > limit {
		dead = dead[:limit]
	}
	for _, name := range dead {
		m.deleteFlooredLocked(m.rows[name], floor(name), now)
	}
	return int64(len(dead)), nil
}

// deadLocked is the prune's judgement of a row: unheld, or held by a
// session expired or gone, since before old.
func (m *state) deadLocked(r *row, old int64) bool {
	s := m.sessions[r.session]
	return (r.session == "" && r.expires < old) || (r.session != "" && (s == nil || s.expires < old))
}
