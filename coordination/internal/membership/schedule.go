package membership

import (
	"math/rand/v2"
	"time"
)

// ExpiryMargin is added to a member row's expiry, converted from the
// database clock to this process's clock, before the read that is to see
// it expired. It covers SQLite's clock, which has millisecond resolution.
const ExpiryMargin = 2 * time.Millisecond

// noteExpiry records when the first other live member row of st expires
// unless renewed, on this process's clock. readEnd is taken after the
// read returned, so the converted moment is never early.
func (m *Member) noteExpiry(st State, readEnd time.Time) {
	for _, mb := range st.Members {
		if !mb.Live || mb.ID == m.me || mb.ExpiresAt.IsZero() {
			continue
		}
		at := readEnd.Add(mb.ExpiresAt.Sub(st.DBNow) + ExpiryMargin)
		if m.expiry.IsZero() || at.Before(m.expiry) {
			m.expiry = at
		}
	}
}

// NextRead returns when the read after the step that began at began
// starts, given whether it left the member settled: one poll later when
// settled, a quarter poll while a rebalance is pending, or as soon as
// another member's row would expire. After a failed step it is the end of
// the step's backoff, at least one poll after the step ended.
func (m *Member) NextRead(began time.Time, settled bool) time.Time {
	if m.Failing() {
		return m.outage.until
	}
	return nextRead(m.cfg.Poll, began, settled, m.expiry)
}

// Failing reports whether the last step failed. The next one then waits
// for its backoff, which a wake-up does not cut short.
func (m *Member) Failing() bool { return !m.outage.until.IsZero() }

// nextRead returns when the read after a step that began at began starts:
// a poll later when settled, a quarter poll while a rebalance is pending,
// less a random 0-10%; or at expiry, if not zero, when that comes first.
func nextRead(poll time.Duration, began time.Time, settled bool, expiry time.Time) time.Time {
	wait := poll
	if !settled {
		wait = poll / 4
	}
	next := began.Add(jitterBelow(wait))
	if !expiry.IsZero() && expiry.Before(next) {
		next = expiry
	}
	return next
}

// jitterBelow returns d less a random 0-10% of d: within [0.9d, d].
func jitterBelow(d time.Duration) time.Duration { return d - rand.N(d/10+1) }
