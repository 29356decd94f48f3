package history

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Grants of keyed locks and semaphore slots, sticky partitions and
// scheduled slots, in hand-made histories.

func gstart(s float64, h, lease string, epoch int64) Event {
	return on(h, s, Event{Kind: GrantStart, Lease: lease, Epoch: epoch})
}

func gstop(s float64, h, lease string, epoch int64) Event {
	return on(h, s, Event{Kind: GrantStop, Lease: lease, Epoch: epoch})
}

// semSlot is the lease of slot i of the semaphore "S", whose limit is 2.
func semSlot(i int) string { return "sem|S|" + string(rune('0'+i)) }

func semStart(s float64, h string, slot int, epoch int64) Event {
	e := gstart(s, h, semSlot(slot), epoch)
	e.Semaphore, e.Limit = "S", 2
	return e
}

func semStop(s float64, h string, slot int, epoch int64) Event {
	e := gstop(s, h, semSlot(slot), epoch)
	e.Semaphore, e.Limit = "S", 2
	return e
}

func sstart(s float64, h, pool string, since int64, partition, count int) Event {
	return on(h, s, Event{Kind: StickyStart, Pool: pool, Generation: since, Index: partition, Count: count, Epoch: 1})
}

func sstop(s float64, h, pool string, since int64, partition, count int) Event {
	return on(h, s, Event{Kind: StickyStop, Pool: pool, Generation: since, Index: partition, Count: count, Epoch: 1})
}

func stickyWrite(s float64, h, pool string, since int64, partition int, accepted bool) Event {
	e := poolWrite(s, h, pool, "sticky", since, accepted)
	e.Index = partition
	return e
}

// slotBase is the database clock's time of slot 0 of the job "J", whose
// slots are a second apart: slot k is due at history time k.
const slotBase = int64(1_700_000_000 * time.Second)

func slotDone(s float64, h string, k int, epoch int64) Event {
	return on(h, s, Event{Kind: SlotCompleted, Lease: "J", Slot: slotBase + int64(k)*int64(time.Second), Epoch: epoch})
}

// slotLost is recorded by the harness, for the holder that completed it.
func slotLost(s float64, h string, k int, epoch int64) Event {
	e := on("chaos", s, Event{Kind: SlotLost, Lease: "J", Slot: slotBase + int64(k)*int64(time.Second), Epoch: epoch})
	e.Holder = h
	return e
}

// slotsEvery completes the slots from..to (inclusive) of "J", each 10ms
// after its time, by h with epoch 1, leaving out those in skip.
func slotsEvery(h string, from, to int, skip ...int) []Event {
	var evs []Event
	for k := from; k <= to; k++ {
		if !slices.Contains(skip, k) {
			evs = append(evs, slotDone(float64(k)+0.01, h, k, 1))
		}
	}
	return evs
}

// runs runs the slots from..to (inclusive) of "J" by h under epoch, each
// as a grant of the job's lease that completes the slot 10ms after its
// time, leaving out those in skip.
func runs(h string, epoch int64, from, to int, skip ...int) []Event {
	var evs []Event
	for k := from; k <= to; k++ {
		if !slices.Contains(skip, k) {
			s := float64(k)
			evs = append(evs, gstart(s+0.001, h, "J", epoch), slotDone(s+0.01, h, k, epoch), gstop(s+0.02, h, "J", epoch))
		}
	}
	return evs
}

var slotReq = []SlotRequirement{{Lease: "J", Every: time.Second, Margin: time.Second}}

// TestCheckJobsCatches: each history breaks one promise of a keyed lock,
// a semaphore, a sticky pool or a scheduled job, and the checker reports
// exactly that violation.
func TestCheckJobsCatches(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		cfg    Config
		want   []ViolationKind
		msg    []string
	}{
		{
			name: "a lock key held by two processes at once",
			events: []Event{
				gstart(0, "a", "lock|K|k1", 1),
				gstart(2, "b", "lock|K|k1", 2),
				gstop(3, "a", "lock|K|k1", 1),
				gstop(4, "b", "lock|K|k1", 2),
			},
			want: []ViolationKind{GrantOverlap},
			msg:  []string{`grant of "lock|K|k1": holder "a" (epoch 1, +0.000000s to +3.000000s, its grant-stop) and holder "b" (epoch 2, +2.000000s to +4.000000s, its grant-stop) overlap for 1s`, `"a" was not paused`},
		},
		{
			name: "a paused lock holder whose write was accepted after its successor took the key",
			events: []Event{
				gstart(0, "a", "lock|K|k1", 1),
				fault(1, FaultPause, "a", PhaseStart),
				gstart(4, "b", "lock|K|k1", 2),
				fault(5, FaultPause, "a", PhaseHeal),
				withLease(write(5.1, "a", "lock/k1", 1, true), "lock|K|k1"),
				gstop(5.2, "a", "lock|K|k1", 1),
				gstop(6, "b", "lock|K|k1", 2),
			},
			// The write also went back in epoch after b took the key.
			want: []ViolationKind{GrantOverlap, StaleWrite},
			msg:  []string{`"a" was paused at +1.000000s but 1 of its writes were accepted after "b" started at +4.000000s`},
		},
		{
			name: "a lock key's epoch given to two holders",
			events: []Event{
				gstart(0, "a", "lock|K|k1", 1),
				gstop(1, "a", "lock|K|k1", 1),
				gstart(2, "b", "lock|K|k1", 1),
				gstop(3, "b", "lock|K|k1", 1),
			},
			want: []ViolationKind{ReusedEpoch},
			msg:  []string{`grant of "lock|K|k1" epoch 1 was held by holders "a", "b"`},
		},
		{
			name: "a write under a lock key accepted after a newer grant started",
			events: []Event{
				gstart(0, "a", "lock|K|k1", 1),
				gstop(1, "a", "lock|K|k1", 1),
				gstart(2, "b", "lock|K|k1", 2),
				withLease(write(2.5, "a", "lock/k1", 1, true), "lock|K|k1"),
				gstop(3, "b", "lock|K|k1", 2),
			},
			want: []ViolationKind{StaleWrite},
			msg:  []string{`resource "lock/k1": 1 accepted writes were superseded when made; first: holder "a" wrote with epoch 1 at +2.500000s, after holder "b" started a term with epoch 2 at +2.000000s`},
		},
		{
			name: "three grants of a semaphore of limit 2",
			events: []Event{
				semStart(0, "a", 0, 1),
				semStart(1, "b", 1, 1),
				semStart(2, "c", 2, 1),
				semStop(3, "c", 2, 1),
				semStop(4, "a", 0, 1),
				semStop(4, "b", 1, 1),
			},
			want: []ViolationKind{SemaphoreOverflow},
			msg:  []string{`semaphore "S" (limit 2): 3 grants were live at once at +2.000000s: "sem|S|0" holder "a"`, `over the limit 1 times, with at most 3 grants at once`},
		},
		{
			name: "a sticky partition worked on by two members at once",
			events: []Event{
				sstart(0, "a", "T", 1, 3, 16),
				sstart(0, "a", "T", 1, 4, 16),
				sstart(2, "b", "T", 2, 3, 16),
				sstop(3, "a", "T", 1, 3, 16),
				sstop(5, "a", "T", 1, 4, 16),
				sstop(5, "b", "T", 2, 3, 16),
			},
			want: []ViolationKind{PartitionOverlap},
			msg:  []string{`sticky pool "T" partition 3: holder "a" (partition 3 of 16 since generation 1, +0.000000s to +3.000000s, its sticky-stop) and holder "b" (partition 3 of 16 since generation 2`, "overlap for 1s"},
		},
		{
			name: "a write to a sticky partition accepted after it moved",
			events: []Event{
				sstart(0, "a", "T", 1, 3, 16),
				sstop(1, "a", "T", 1, 3, 16),
				sstart(2, "b", "T", 2, 3, 16),
				stickyWrite(2.5, "a", "T", 1, 3, true),
				sstop(3, "b", "T", 2, 3, 16),
			},
			want: []ViolationKind{StaleWrite},
			msg:  []string{`holder "a" wrote with generation 1 at +2.500000s, after holder "b" started a term with generation 2 at +2.000000s`},
		},
		{
			name: "a slot completed twice",
			events: []Event{
				slotDone(1, "a", 1, 1),
				slotDone(2, "a", 2, 1),
				slotDone(2.5, "b", 2, 2),
			},
			want: []ViolationKind{DuplicateSlots},
			msg:  []string{`job "J": 1 slots completed more than once: 2023-11-14T22:13:22Z (2 times: "a" epoch 1 at +1.000000s, "b" epoch 2 at +1.500000s)`},
		},
		{
			name:   "a due slot never completed",
			events: append(slotsEvery("a", 0, 12, 5, 6), note(12, "chaos", "stopping")),
			cfg:    Config{Slots: slotReq, ObserveUntil: at(12)},
			want:   []ViolationKind{MissedSlots},
			msg:    []string{`job "J": 2 of 11 slots due from +0.000000s to +10.990000s were never completed: 2023-11-14T22:13:25Z (+5.000000s), 2023-11-14T22:13:26Z (+6.000000s)`},
		},
		{
			name: "a slot missed after the faults' recovery bounds",
			events: append(slotsEvery("a", 0, 20, 2, 3, 4, 5, 6, 15),
				fault(1.5, FaultPause, "a", PhaseStart),
				fault(2, FaultPause, "a", PhaseHeal)),
			cfg:  Config{Slots: slotReq, Bound: bounds},
			want: []ViolationKind{MissedSlots},
			msg:  []string{`job "J": 1 of 13 slots due from +6.990000s to +19.000000s were never completed: 2023-11-14T22:13:35Z (+15.000000s)`},
		},
		{
			name: "a slot missed once the job's final term ran again after the fault, before the bound",
			events: slices.Concat(runs("a", 1, 0, 1), runs("b", 2, 3, 20, 5),
				[]Event{fault(1.5, FaultPause, "a", PhaseStart), fault(2, FaultPause, "a", PhaseHeal)}),
			cfg:  Config{Slots: slotReq, Bound: bounds},
			want: []ViolationKind{MissedSlots},
			msg:  []string{`job "J": 1 of 17 slots due from +3.000000s to +19.019000s were never completed: 2023-11-14T22:13:25Z (+5.009000s)`},
		},
		{
			name:   "a job that completed nothing while slots were due",
			events: []Event{note(0, "chaos", "start"), note(10, "chaos", "stop")},
			cfg:    Config{Slots: slotReq},
			want:   []ViolationKind{MissedSlots},
			msg:    []string{`job "J" completed no slot at all, though slots were due from +0.000000s to +9.000000s`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Check(History{Events: tt.events}, tt.cfg)
			if got := kinds(res.Violations); !slices.Equal(got, tt.want) {
				t.Fatalf("violations %v, want %v:\n%s", got, tt.want, dump(res))
			}
			all := dump(res)
			for _, m := range tt.msg {
				if !strings.Contains(all, m) {
					t.Errorf("no violation says %q; got:\n%s", m, all)
				}
			}
		})
	}
}

// TestCheckJobsAccepts: histories of keyed locks, semaphores, sticky
// pools and scheduled jobs that kept their promises.
func TestCheckJobsAccepts(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		cfg    Config
		exempt int
		due    int
	}{
		{
			name: "a lock key handed over, its old holder's late write rejected",
			events: []Event{
				gstart(0, "a", "lock|K|k1", 1),
				withLease(write(0.5, "a", "lock/k1", 1, true), "lock|K|k1"),
				gstop(1, "a", "lock|K|k1", 1),
				gstart(1, "b", "lock|K|k1", 2),
				withLease(write(1.5, "a", "lock/k1", 1, false), "lock|K|k1"),
				withLease(write(1.6, "b", "lock/k1", 2, true), "lock|K|k1"),
				gstop(2, "b", "lock|K|k1", 2),
				gstart(2, "b", "lock|K|k2", 1),
				gstart(2, "a", "lock|K|k3", 1),
				gstop(3, "b", "lock|K|k2", 1),
				gstop(3, "a", "lock|K|k3", 1),
			},
		},
		{
			name: "a paused semaphore holder overtaken on its slot does not count past its successor's start",
			events: []Event{
				semStart(0, "a", 0, 1),
				semStart(0, "c", 1, 1),
				fault(1, FaultPause, "a", PhaseStart),
				semStart(4, "b", 0, 2),
				fault(6, FaultPause, "a", PhaseHeal),
				withLease(write(6.1, "a", "sem/0", 1, false), semSlot(0)),
				semStop(6.2, "a", 0, 1),
				semStop(8, "b", 0, 2),
				semStop(8, "c", 1, 1),
				semStart(8, "a", 1, 2),
				semStop(9, "a", 1, 2),
			},
			exempt: 1,
		},
		{
			name: "a sticky member works on several partitions, a write to one that did not move",
			events: []Event{
				sstart(0, "a", "T", 1, 3, 16),
				sstart(0, "a", "T", 1, 4, 16),
				sstop(1, "a", "T", 1, 3, 16),
				sstart(1.5, "b", "T", 2, 3, 16),
				stickyWrite(2, "a", "T", 1, 4, true),
				stickyWrite(2, "b", "T", 2, 3, true),
				sstop(5, "a", "T", 1, 4, 16),
				sstop(5, "b", "T", 2, 3, 16),
			},
		},
		{
			name: "a paused sticky member overtaken on one partition writes to another it still owns",
			events: []Event{
				sstart(0, "a", "T", 1, 3, 16),
				sstart(0, "a", "T", 1, 4, 16),
				fault(1, FaultPause, "a", PhaseStart),
				sstart(4, "b", "T", 2, 3, 16),
				fault(6, FaultPause, "a", PhaseHeal),
				stickyWrite(6.1, "a", "T", 1, 3, false),
				stickyWrite(6.1, "a", "T", 1, 4, true),
				sstop(6.2, "a", "T", 1, 3, 16),
				sstop(8, "a", "T", 1, 4, 16),
				sstop(8, "b", "T", 2, 3, 16),
			},
			exempt: 1,
		},
		{
			name: "a slot lost with the old primary and completed again",
			events: []Event{
				slotDone(1, "a", 1, 1),
				slotLost(2, "a", 1, 1),
				slotDone(3, "b", 1, 2),
			},
		},
		{
			name: "a run of the old term after the fault, then a new term: the slots before the new term's first run are not due",
			events: slices.Concat(runs("a", 1, 0, 2), runs("b", 2, 5, 20),
				[]Event{fault(1.5, FaultPause, "a", PhaseStart), fault(2, FaultPause, "a", PhaseHeal)}),
			cfg: Config{Slots: slotReq, Bound: bounds},
			due: 15,
		},
		{
			name: "slots missed during a fault are not due; every slot after its bound is completed",
			events: append(slotsEvery("a", 0, 20, 2, 3, 4, 5, 6),
				fault(1.5, FaultPause, "a", PhaseStart),
				fault(2, FaultPause, "a", PhaseHeal)),
			cfg: Config{Slots: slotReq, Bound: bounds},
			due: 13,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Check(History{Events: tt.events}, tt.cfg)
			if !res.OK() {
				t.Fatalf("violations:\n%s", dump(res))
			}
			if res.Stats.ExemptOverlaps != tt.exempt {
				t.Errorf("ExemptOverlaps = %d, want %d", res.Stats.ExemptOverlaps, tt.exempt)
			}
			if res.Stats.SlotsDue != tt.due {
				t.Errorf("SlotsDue = %d, want %d", res.Stats.SlotsDue, tt.due)
			}
		})
	}
}
