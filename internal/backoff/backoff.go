// Package backoff is the one retry policy of leasehold's loops. After a
// failure a loop waits at least its configured interval, doubling with
// each consecutive failure up to a cap, stretched by a random 0-50% so
// that processes that failed together do not retry together. No loop
// retries faster than its interval, whatever the error.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy is the wait schedule of one retry loop.
type Policy struct {
	// Interval is the loop's configured interval: the shortest wait.
	Interval time.Duration
	// Max caps the doubling; a Max below Interval means Interval.
	Max time.Duration
}

// Wait returns the wait after the n-th consecutive failure (n >= 1):
// Interval doubled n-1 times, at most Max, plus a random 0-50% of it.
func (p Policy) Wait(n int) time.Duration {
	d := max(p.Interval, time.Nanosecond)
	limit := max(p.Max, d)
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d + rand.N(d/2+1)
}

// Retry counts the consecutive failures of one loop, says how long to
// wait after each, and tells an outage's first failure from the rest, so
// that a loop warns once per outage rather than once per attempt.
type Retry struct {
	Policy
	failures int
	since    time.Time
}

// Failed records a failure and returns the wait before the next attempt,
// and whether this failure began an outage: the first since the last
// success.
func (r *Retry) Failed() (wait time.Duration, first bool) {
	r.failures++
	if r.failures == 1 {
		r.since = time.Now()
	}
	return r.Wait(r.failures), r.failures == 1
}

// Succeeded records a success. It returns how many failures in a row it
// ends, 0 when none, and how long ago the first of them happened.
func (r *Retry) Succeeded() (failures int, lasted time.Duration) {
	failures, r.failures = r.failures, 0
	if failures == 0 {
		return 0, 0
	}
	return failures, time.Since(r.since)
}

// Failures returns the number of consecutive failures so far.
func (r *Retry) Failures() int { return r.failures }
