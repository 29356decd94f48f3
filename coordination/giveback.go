package coordination

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// An acquire that reports failure may have committed all the same: the
// connection broke after COMMIT, or the statement's context ended while a
// pooler or the server still ran it. Its rows are then held by this
// process's session, which renews them with every other lease of the
// process, yet no term of the process knows them. A campaign takes such a
// row again on its next round (a row held by the process's own session is
// takeable), but a row nothing campaigns for would stay held for as long
// as the session lives: a keyed lock or a semaphore slot whose caller gave
// up, a TryAcquire that is not repeated, a pool member row whose join is
// retried under a new member id, which would sit in the pool's member list
// without ever acknowledging a generation, so no generation would start
// its work.
//
// So the campaigner notes the names of such an acquire (unsureAcquires)
// and, on each round of its loop for one TTL after the attempt (a late
// commit comes within that), gives back those its session holds at an
// epoch no term of this process has and no campaign of it wants. The
// release names the epoch it read, so it touches that grant only.

// unsureAcquire is an acquire that reported failure but may have
// committed: its session, and until when a late commit is looked for.
type unsureAcquire struct {
	session string
	until   time.Time
}

// unsureAcquires owns the names of the acquires that reported failure but
// may have committed, and gives back what they took. The campaigner notes
// them (note) and runs giveBack from its loop.
type unsureAcquires struct {
	*shared
	store leaseOps
	terms *termSet

	mu    sync.Mutex
	names map[string]unsureAcquire
}

func newUnsureAcquires(sh *shared, st leaseOps, t *termSet) *unsureAcquires {
	return &unsureAcquires{shared: sh, store: st, terms: t, names: make(map[string]unsureAcquire)}
}

// note records that an acquire of names under session reported failure
// but may have committed.
func (u *unsureAcquires) note(session string, names []string) {
	until := time.Now().Add(u.cfg.TTL)
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, name := range names {
		u.names[name] = unsureAcquire{session: session, until: until}
	}
}

// pending returns the names noted, with their sessions, and forgets those
// whose time has passed.
func (u *unsureAcquires) pending(now time.Time) map[string]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out map[string]string
	for name, a := range u.names {
		if now.After(a.until) {
			delete(u.names, name)
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[name] = a.session
	}
	return out
}

// giveBack releases the rows that an acquire which reported failure took
// anyway: held, at the read, by the session it was made under, with no
// term of this process at that epoch. claim keeps the names that nothing
// campaigns for and no other acquire of this process attempts, and keeps
// them from being attempted until done (campaigner.acquiring), so a term
// of the read epoch would already be in the term set. A failed read or release is tried again on
// the next round.
func (u *unsureAcquires) giveBack(ctx context.Context, claim func(names []string) (kept []string, done func())) {
	sessions := u.pending(time.Now())
	if len(sessions) == 0 {
		return
	}
	names := make([]string, 0, len(sessions))
	for name := range sessions {
		names = append(names, name)
	}
	names, done := claim(names)
	defer done()
	if len(names) == 0 {
		return
	}
	opCtx, cancel := context.WithTimeout(ctx, u.cfg.roundTimeout(len(names)))
	defer cancel()
	rows, err := u.store.Get(opCtx, names)
	if err != nil {
		return
	}
	back := make(map[string][]store.Term)
	for _, r := range rows {
		session := sessions[r.Name]
		if r.Session != session || !r.Live() || u.terms.holds(r.Name, r.Epoch) {
			continue
		}
		back[session] = append(back[session], store.Term{Name: r.Name, Epoch: r.Epoch})
	}
	for session, terms := range back {
		if _, err := u.store.Release(opCtx, session, terms); err != nil {
			u.log.Warn("could not give back leases an acquire took though it reported failure; retrying",
				zap.Int("leases", len(terms)), zap.Error(err))
			continue
		}
		for _, t := range terms {
			u.log.Info("gave back a lease an acquire took though it reported failure",
				zap.String("lease", t.Name), zap.Int64("epoch", t.Epoch))
		}
	}
}
