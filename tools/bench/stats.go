package bench

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// Timing of every coordinator the benchmark runs: short, so that a
// measurement of a fixed number of renew ticks takes seconds.
const (
	TTL             = 3 * time.Second
	RenewInterval   = time.Second
	ShutdownTimeout = 10 * time.Second
	// Cluster is the cluster of every identity.
	Cluster = "bench"
)

// Timing of the coordinators in the parts that wait for leases to expire
// (the handoff section's crash and pause, the rebalance section): a TTL
// short enough that ten failovers take seconds, with the RenewInterval
// and RetryInterval coordination derives from it (TTL/3, TTL/4).
const (
	FastTTL           = time.Second
	FastRenewInterval = FastTTL / 3
	FastRetryInterval = FastTTL / 4
)

// maxFirstErrors is how many error texts EventCounts keeps.
const maxFirstErrors = 5

// EventCounts counts a coordinator's events. Its methods may be called
// from several goroutines.
type EventCounts struct {
	mu          sync.Mutex
	errors      int
	joinErrors  int
	lost        int
	dropped     int
	firstErrors []string
	lostAt      []time.Time
	errorAt     []time.Time
}

// Add counts one event.
func (c *EventCounts) Add(e coordination.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropped += e.Dropped
	switch e.Kind {
	case coordination.EventError:
		c.errors++
		c.errorAt = append(c.errorAt, e.Time)
		if IsJoinError(e.Err) {
			c.joinErrors++
		}
		if len(c.firstErrors) < maxFirstErrors && e.Err != nil {
			c.firstErrors = append(c.firstErrors, e.Err.Error())
		}
	case coordination.EventLost:
		c.lost++
		c.lostAt = append(c.lostAt, e.Time)
	}
}

// Report returns the totals as a Report's fields.
func (c *EventCounts) Report() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Report{Errors: c.errors, JoinErrors: c.joinErrors, Lost: c.lost, Dropped: c.dropped,
		FirstErrors: slices.Clone(c.firstErrors)}
}

// LostBetween counts the EventLost events stamped in [from, to).
func (c *EventCounts) LostBetween(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return countBetween(c.lostAt, from, to)
}

// ErrorsBetween counts the EventError events stamped in [from, to).
func (c *EventCounts) ErrorsBetween(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return countBetween(c.errorAt, from, to)
}

func countBetween(ts []time.Time, from, to time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// ds, or false when ds is empty. With fewer than 100 values the 99th
// percentile is the largest.
func percentile(ds []time.Duration, p float64) (time.Duration, bool) {
	if len(ds) == 0 {
		return 0, false
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)], true
}

// fmtDur prints a duration with a precision that suits its size.
func fmtDur(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// p50p99 formats the median and the 99th percentile of ds, and returns the
// 99th percentile.
func p50p99(ds []time.Duration) (string, time.Duration, error) {
	p50, ok := percentile(ds, 50)
	if !ok {
		return "", 0, errors.New("no samples")
	}
	p99, _ := percentile(ds, 99)
	return fmt.Sprintf("%s / %s (n=%d)", fmtDur(p50), fmtDur(p99), len(ds)), p99, nil
}

// p50p99max formats the median, the 99th percentile and the largest of
// ds, and returns the 99th percentile.
func p50p99max(ds []time.Duration) (string, time.Duration, error) {
	p50, ok := percentile(ds, 50)
	if !ok {
		return "", 0, errors.New("no samples")
	}
	p99, _ := percentile(ds, 99)
	most, _ := percentile(ds, 100)
	return fmt.Sprintf("%s / %s / %s (n=%d)", fmtDur(p50), fmtDur(p99), fmtDur(most), len(ds)), p99, nil
}

// ratiosOf formats the median, the 99th percentile and the largest of ds
// as multiples of unit.
func ratiosOf(ds []time.Duration, unit time.Duration) string {
	r := func(p float64) float64 {
		d, _ := percentile(ds, p)
		return float64(d) / float64(unit)
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", r(50), r(99), r(100))
}
