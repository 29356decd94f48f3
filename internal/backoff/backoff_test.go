package backoff

import (
	"testing"
	"time"
)

func TestWaitNeverBelowIntervalNorAboveCap(t *testing.T) {
	p := Policy{Interval: 100 * time.Millisecond, Max: time.Second}
	for n := 1; n <= 40; n++ {
		want := min(100*time.Millisecond<<min(n-1, 20), time.Second)
		for range 50 {
			if d := p.Wait(n); d < want || d > want+want/2 {
				t.Fatalf("Wait(%d) = %v, want within [%v, %v]", n, d, want, want+want/2)
			}
		}
	}
}

func TestWaitWithoutMaxIsTheInterval(t *testing.T) {
	p := Policy{Interval: time.Second}
	for n := 1; n <= 5; n++ {
		if d := p.Wait(n); d < time.Second || d > 1500*time.Millisecond {
			t.Fatalf("Wait(%d) = %v, want within [1s, 1.5s]", n, d)
		}
	}
}

func TestRetryTellsTheFirstFailureOfAnOutage(t *testing.T) {
	r := Retry{Policy: Policy{Interval: time.Millisecond, Max: time.Second}}
	if n, _ := r.Succeeded(); n != 0 {
		t.Fatalf("Succeeded before any failure = %d, want 0", n)
	}
	var firsts int
	for range 5 {
		if _, first := r.Failed(); first {
			firsts++
		}
	}
	if firsts != 1 || r.Failures() != 5 {
		t.Fatalf("firsts %d, failures %d; want 1 and 5", firsts, r.Failures())
	}
	if n, _ := r.Succeeded(); n != 5 {
		t.Fatalf("Succeeded = %d, want 5", n)
	}
	if _, first := r.Failed(); !first {
		t.Fatal("the first failure after a success does not begin an outage")
	}
}
