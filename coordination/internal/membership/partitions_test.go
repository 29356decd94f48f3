package membership

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// checkBalanced fails unless every partition is owned by one of members
// and every member owns floor(P/n) or ceil(P/n) partitions.
func checkBalanced(t *testing.T, owners, members []string) {
	t.Helper()
	counts := make(map[string]int)
	for _, id := range members {
		counts[id] = 0
	}
	for p, o := range owners {
		if len(members) == 0 {
			if o != "" {
				t.Fatalf("partition %d owned by %q in a pool without members", p, o)
			}
			continue
		}
		if _, ok := counts[o]; !ok {
			t.Fatalf("partition %d owned by %q, not a member of %v", p, o, members)
		}
		counts[o]++
	}
	if len(members) == 0 {
		return
	}
	lo := len(owners) / len(members)
	hi := lo
	if len(owners)%len(members) != 0 {
		hi++
	}
	for id, c := range counts {
		if c < lo || c > hi {
			t.Fatalf("member %q owns %d of %d partitions over %d members; want %d..%d", id, c, len(owners), len(members), lo, hi)
		}
	}
}

func moved(a, b []string) int {
	n := 0
	for p := range a {
		if a[p] != b[p] {
			n++
		}
	}
	return n
}

// TestBalanceProperties runs random sequences of joins and leaves (a
// crash is a leave to the function) over pools of several sizes, and
// checks after each step: the partitions are balanced within one; a join
// of the (N+1)-th member moves at most ceil(P/(N+1)) partitions, all to
// the joiner; a leave moves only the leaver's partitions; the result does
// not depend on the order of the members; and balancing again changes
// nothing.
func TestBalanceProperties(t *testing.T) {
	for _, p := range []int{1, 3, 7, 64, 256, 1000} {
		for seed := range uint64(20) {
			t.Run("P"+strconv.Itoa(p)+"/Seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(p)))
				owners := make([]string, p)
				var members []string
				next := 0
				for step := range 200 {
					prev := owners
					switch {
					case len(members) == 0 || (len(members) < 40 && rng.IntN(2) == 0):
						id := "m" + strconv.Itoa(next)
						next++
						members = append(members, id)
						owners = Balance(prev, members)
						bound := (p + len(members) - 1) / len(members)
						if n := moved(prev, owners); n > bound {
							t.Fatalf("step %d: join of %s (N+1=%d) moved %d partitions, bound %d", step, id, len(members), n, bound)
						}
						for q := range owners {
							if owners[q] != prev[q] && owners[q] != id {
								t.Fatalf("step %d: join of %s moved partition %d from %q to %q", step, id, q, prev[q], owners[q])
							}
						}
					default:
						i := rng.IntN(len(members))
						gone := members[i]
						members = slices.Delete(members, i, i+1)
						owners = Balance(prev, members)
						for q := range owners {
							if prev[q] != gone && owners[q] != prev[q] {
								t.Fatalf("step %d: leave of %s moved partition %d of %q to %q", step, gone, q, prev[q], owners[q])
							}
						}
					}
					checkBalanced(t, owners, members)
					shuffled := slices.Clone(members)
					rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
					if again := Balance(prev, append(shuffled, shuffled...)); !slices.Equal(again, owners) {
						t.Fatalf("step %d: Balance depends on the order of the members", step)
					}
					if again := Balance(owners, members); !slices.Equal(again, owners) {
						t.Fatalf("step %d: balancing a balanced map moved %d partitions", step, moved(owners, again))
					}
				}
			})
		}
	}
}

// TestBalanceAnyPrevious checks that from any previous owners, members
// or not and unbalanced, the result is balanced and keeps every partition
// of a member that owns no more than its share.
func TestBalanceAnyPrevious(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 500 {
		p := 1 + rng.IntN(300)
		var members []string
		for i := range 1 + rng.IntN(25) {
			members = append(members, "m"+strconv.Itoa(i))
		}
		prev := make([]string, p)
		for q := range prev {
			if k := rng.IntN(len(members) + 3); k < len(members) {
				prev[q] = members[k]
			} else if k == len(members) {
				prev[q] = "gone"
			}
		}
		owners := Balance(prev, members)
		checkBalanced(t, owners, members)
		counts := make(map[string]int)
		for _, o := range prev {
			counts[o]++
		}
		share := p / len(members)
		for q, o := range prev {
			if slices.Contains(members, o) && counts[o] <= share && owners[q] != o {
				t.Fatalf("P=%d: %s owned %d <= share %d but lost partition %d", p, o, counts[o], share, q)
			}
		}
	}
}

// TestBalanceTwentyMembers is the bench's shape: P=256 over 20 members,
// a 21st joins and one leaves.
func TestBalanceTwentyMembers(t *testing.T) {
	var members []string
	owners := make([]string, 256)
	for i := range 20 {
		members = append(members, "m"+strconv.Itoa(i))
		owners = Balance(owners, members)
	}
	joined := Balance(owners, append(slices.Clone(members), "m20"))
	if n := moved(owners, joined); n > (256+20)/21+1 {
		t.Errorf("join moved %d partitions; bound %d", n, (256+20)/21+1)
	}
	left := Balance(joined, slices.Concat(members[:3], members[4:], []string{"m20"}))
	if n, had := moved(joined, left), len(PartitionMap{Owner: joined}.Owned("m3")); n != had {
		t.Errorf("leave moved %d partitions; the leaver had %d", n, had)
	}
}

// TestMapNextAndEncoding checks Since across generations and that
// EncodeMap and DecodeMap round-trip.
func TestMapNextAndEncoding(t *testing.T) {
	acks := func(ids ...string) map[string]int64 {
		out := make(map[string]int64)
		for _, id := range ids {
			out[id] = 0
		}
		return out
	}
	m := NewMap(8)
	m = m.Next(Balance(m.Owner, []string{"a", "s:b"}), 3, acks("a", "s:b"))
	m = m.Next(Balance(m.Owner, []string{"a", "s:b", "c.2"}), 5, acks("a", "s:b", "c.2"))
	for p, o := range m.Owner {
		want := int64(3)
		if o == "c.2" {
			want = 5
		}
		if m.Since[p] != want {
			t.Errorf("partition %d of %s: Since %d, want %d", p, o, m.Since[p], want)
		}
	}
	for _, tc := range []PartitionMap{NewMap(0), NewMap(5), m, NewMap(3).Next([]string{"x", "", "x"}, 9, nil),
		{Owner: []string{"", "a", "a"}, Since: []int64{0, 4, 4}, Prev: [][]string{{"b"}, {"b", "c"}, {"b", "c"}}}} {
		data := EncodeMap(tc)
		if !IsMap(data) {
			t.Fatalf("IsMap(%q) = false", data)
		}
		got, err := DecodeMap(data)
		if err != nil {
			t.Fatalf("DecodeMap(%q): %v", data, err)
		}
		if !slices.Equal(got.Owner, tc.Owner) || !slices.Equal(got.Since, tc.Since) ||
			!slices.EqualFunc(got.Prev, tc.Prev, slices.Equal[[]string]) {
			t.Fatalf("DecodeMap(EncodeMap(%+v)) = %+v (data %q)", tc, got, data)
		}
	}
	for _, bad := range []string{"a,b", "sticky:", "sticky:2;a;0@1*1", "sticky:2;a;0@1*3", "sticky:1;a;1@1*1", "sticky:1;;x*1", "sticky:x;;",
		"sticky:1;a;0@1^1*1", "sticky:1;a;0@1^x*1"} {
		if _, err := DecodeMap(bad); err == nil {
			t.Errorf("DecodeMap(%q) succeeded", bad)
		}
	}
}

// TestMapPrev checks who a moved partition waits for: its owner before,
// while live, and the earlier owners that are live and have not
// acknowledged their loss; members acknowledged past it or not live are
// dropped, whether the partition moves again or not.
func TestMapPrev(t *testing.T) {
	m := PartitionMap{Owner: []string{"a"}, Since: []int64{2}, Prev: [][]string{nil}}
	// a -> b at 5 while a is live: b waits for a.
	m = m.Next([]string{"b"}, 5, map[string]int64{"a": 4, "b": 4})
	if m.Since[0] != 5 || !slices.Equal(m.Prev[0], []string{"a"}) {
		t.Fatalf("a -> b: %+v", m)
	}
	// b -> c at 6 before a acknowledged 5: b may have started only if a
	// had, so c waits for both.
	m = m.Next([]string{"c"}, 6, map[string]int64{"a": 4, "b": 5, "c": 5})
	if !slices.Equal(m.Prev[0], []string{"a", "b"}) {
		t.Fatalf("b -> c with a behind: %+v", m)
	}
	// Unmoved at 7: a acknowledged 6, b is gone: neither is waited for.
	m = m.Next([]string{"c"}, 7, map[string]int64{"a": 6, "c": 6})
	if m.Since[0] != 6 || len(m.Prev[0]) != 0 {
		t.Fatalf("unmoved after the acknowledgements: %+v", m)
	}
	// c -> a at 8 while c is not live: nobody to wait for.
	m = m.Next([]string{"a"}, 8, map[string]int64{"a": 7})
	if m.Since[0] != 8 || len(m.Prev[0]) != 0 {
		t.Fatalf("c (not live) -> a: %+v", m)
	}
	live := func(acks map[string]int64) map[string]Row {
		out := make(map[string]Row)
		for id, ack := range acks {
			out[id] = Row{ID: id, Ack: ack, Live: true}
		}
		return out
	}
	w := PartitionMap{Owner: []string{"b"}, Since: []int64{5}, Prev: [][]string{{"a"}}}
	if released(w, 0, live(map[string]int64{"a": 4, "b": 5})) {
		t.Error("released before the earlier owner acknowledged the move")
	}
	if !released(w, 0, live(map[string]int64{"a": 5, "b": 5})) {
		t.Error("not released after the earlier owner acknowledged the move")
	}
	if !released(w, 0, live(map[string]int64{"b": 5})) {
		t.Error("not released with the earlier owner's row expired")
	}
}

// TestWaitingFor: a member's acknowledgement concerns only the owners of
// the partitions whose Prev lists it, each once, and never itself.
func TestWaitingFor(t *testing.T) {
	pm := PartitionMap{
		Owner: []string{"j", "j", "b", "c", "a", ""},
		Since: []int64{5, 5, 5, 3, 5, 0},
		Prev:  [][]string{{"a"}, {"a", "b"}, nil, {"a"}, {"c"}, {"a"}},
	}
	for _, tc := range []struct {
		me   string
		want []string
	}{
		{"a", []string{"c", "j"}}, // not the partition without an owner
		{"b", []string{"j"}},
		{"c", []string{"a"}},
		{"j", nil},
	} {
		if got := waitingFor(pm, tc.me); !slices.Equal(got, tc.want) {
			t.Errorf("waitingFor(%s) = %v, want %v", tc.me, got, tc.want)
		}
	}
	rows := Rows{Prefix: "pool|global/p|", Members: "pool|global/p|member|", Wakes: "pool|global/p|wake|"}
	if id, ok := rows.WakeFor(rows.Wake("j")); !ok || id != "j" {
		t.Errorf("WakeFor(Wake(j)) = %q, %v", id, ok)
	}
	for _, name := range []string{rows.Member("j"), "pool|global/p|generation", "pool|global/p|wake|", "global/p"} {
		if id, ok := rows.WakeFor(name); ok {
			t.Errorf("WakeFor(%q) = %q: not a wake-up for one member", name, id)
		}
	}
}
