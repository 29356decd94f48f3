package history

import "time"

// Hand-made histories: times are seconds after a base that looks like a
// CLOCK_MONOTONIC reading; processes "a", "b", "c" are workers and "chaos"
// is the harness that records faults.

const base = int64(1_000 * time.Second)

var pids = map[string]int{"a": 101, "b": 102, "c": 103, "chaos": 1}

func at(s float64) int64 { return base + int64(s*float64(time.Second)) }

func on(process string, s float64, e Event) Event {
	e.Time, e.Process, e.PID = at(s), process, pids[process]
	if e.Holder == "" && e.Kind.holderKind() {
		e.Holder = process
	}
	return e
}

func lstart(s float64, h, lease string, epoch int64) Event {
	return on(h, s, Event{Kind: LeaderStart, Lease: lease, Epoch: epoch})
}

func lstop(s float64, h, lease string, epoch int64) Event {
	return on(h, s, Event{Kind: LeaderStop, Lease: lease, Epoch: epoch})
}

func pstart(s float64, h, pool string, gen int64, index, count int) Event {
	return on(h, s, Event{Kind: PartitionStart, Pool: pool, Generation: gen, Index: index, Count: count, Epoch: 1})
}

func pstop(s float64, h, pool string, gen int64, index, count int) Event {
	return on(h, s, Event{Kind: PartitionStop, Pool: pool, Generation: gen, Index: index, Count: count, Epoch: 1})
}

func write(s float64, h, resource string, epoch int64, accepted bool) Event {
	e := Event{Kind: Write, Resource: resource, Epoch: epoch, Accepted: accepted}
	if !accepted {
		e.Err = "leasehold: fenced"
	}
	return on(h, s, e)
}

func poolWrite(s float64, h, pool, resource string, gen int64, accepted bool) Event {
	e := write(s, h, resource, 0, accepted)
	e.Pool, e.Generation = pool, gen
	return e
}

func item(s float64, h string, n, gen int64) Event {
	return on(h, s, Event{Kind: ItemProcessed, Item: n, Generation: gen})
}

// lostItem is recorded by the harness, for the holder that processed it.
func lostItem(s float64, h string, n, gen int64) Event {
	e := on("chaos", s, Event{Kind: ItemLost, Item: n, Generation: gen})
	e.Holder = h
	return e
}

// goneItem is recorded by the harness for an item whose insert a
// failover lost.
func goneItem(s float64, n int64) Event {
	return on("chaos", s, Event{Kind: ItemGone, Item: n})
}

func fault(s float64, kind FaultKind, target string, phase Phase) Event {
	return on("chaos", s, Event{Kind: Fault, FaultKind: kind, Target: target, Phase: phase})
}

func withMembers(e Event, pool string, n int) Event {
	e.Members = map[string]int{pool: n}
	return e
}

func note(s float64, process, text string) Event {
	return on(process, s, Event{Kind: Note, Text: text})
}

var bounds = map[FaultKind]time.Duration{
	FaultKill:      16 * time.Second, // TTL 15s + one retry
	FaultPause:     5 * time.Second,
	FaultCut:       5 * time.Second,
	FaultDBRestart: 5 * time.Second,
}
