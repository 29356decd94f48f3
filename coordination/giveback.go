package coordination

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/store"
)

// An acquire that reports failure may have committed all the same. For one
// TTL after it, each round gives back the rows of its names that its
// session holds at an epoch no term of this process has and nothing
// campaigns for; the release names that epoch, so it touches that grant
// only.

// unsureAcquire is an acquire that reported failure but may have
// committed: its session, and until when a late commit is looked for.
type unsureAcquire struct {
	session string
	until   time.Time
}

// noteUnsure records that an acquire of names under session reported
// failure but may have committed.
func (st *termState) noteUnsure(session string, names []string) {
	until := time.Now().Add(st.t.cfg.TTL)
	for _, name := range names {
		st.unsure[name] = unsureAcquire{session: session, until: until}
	}
}

// claimGiveBacks returns the names to give back, with their sessions:
// those nothing campaigns for and no acquire attempts, marked attempted
// until the give-back is done.
func (st *termState) claimGiveBacks() map[string]string {
	now := time.Now()
	var names []string
	for name, a := range st.unsure {
		if now.After(a.until) {
			delete(st.unsure, name)
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil
	}
	back := make(map[string]string)
	for _, name := range st.attempt(names, uncampaignedLease) {
		back[name] = st.unsure[name].session
	}
	return back
}

// giveBack releases the rows an acquire that reported failure took anyway.
// A failed read or release is tried again after the next round.
func (t *termSet) giveBack(ctx context.Context, back map[string]string) {
	names := make([]string, 0, len(back))
	for name := range back {
		names = append(names, name)
	}
	defer t.call(func(st *termState) { st.unattempt(names) })
	opCtx, cancel := context.WithTimeout(ctx, t.cfg.roundTimeout(len(names)))
	defer cancel()
	rows, err := t.store.Get(opCtx, names)
	if err != nil {
		return
	}
	release := make(map[string][]store.Term)
	t.call(func(st *termState) {
		for _, r := range rows {
			session := back[r.Name]
			if r.Session != session || !r.Live() || st.holds(r.Name, r.Epoch) {
				continue
			}
			release[session] = append(release[session], store.Term{Name: r.Name, Epoch: r.Epoch})
		}
	})
	for session, terms := range release {
		if _, err := t.store.Release(opCtx, session, terms); err != nil {
			t.log.Warn("could not give back leases an acquire took though it reported failure; retrying",
				zap.Int("leases", len(terms)), zap.Error(err))
			continue
		}
		for _, tm := range terms {
			t.log.Info("gave back a lease an acquire took though it reported failure",
				zap.String("lease", tm.Name), zap.Int64("epoch", tm.Epoch))
		}
	}
}
