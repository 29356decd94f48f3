package membership

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PartitionMap is the owner of every partition of a sticky pool in one
// generation.
type PartitionMap struct {
	// Owner is, by partition, the member id that owns it; "" for none
	// (a pool without members).
	Owner []string
	// Since is, by partition, the generation that last moved it to Owner.
	// Work on a partition is identified by (Owner, Since), so a member
	// that loses a partition and gets it back never mistakes old work for
	// new.
	Since []int64
	// Prev is, by partition, the members other than Owner that may still
	// work on it: its owners before Since that had not acknowledged
	// their loss of it when the map was published, and were live. Owner
	// starts the partition once each of them that is still live has
	// acknowledged Since; nil for none.
	Prev [][]string
}

// NewMap returns the map of a pool of p partitions without members.
func NewMap(p int) PartitionMap {
	return PartitionMap{Owner: make([]string, p), Since: make([]int64, p), Prev: make([][]string, p)}
}

// Balance returns the owners of the partitions after a change of the
// members that take part, from the owners before it (prev, by partition;
// an owner not among members counts as none). It is a pure function of
// prev and the set of members (their order and duplicates do not matter):
//
//   - every member owns floor(P/n) or ceil(P/n) of the P partitions;
//   - a member keeps as many of its partitions as its share allows, the
//     lowest-numbered first; the ceil(P/n) shares go to the members that
//     own the most (then by id), so from a balanced prev a join of the
//     (N+1)-th member moves only the joiner's share, at most
//     ceil(P/(N+1)), and a leave moves only the leaver's partitions;
//   - partitions that are free go, lowest first, to the members short of
//     their share, by id;
//   - Balance(Balance(prev, m), m) = Balance(prev, m): a balanced map
//     stays as it is.
//
// Without members every partition is owned by none.
func Balance(prev []string, members []string) []string {
	out := make([]string, len(prev))
	ids := slices.Clone(members)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return out
	}
	owned := make(map[string][]int, len(ids))
	for _, id := range ids {
		owned[id] = nil
	}
	for p, o := range prev {
		if ps, ok := owned[o]; ok {
			owned[o] = append(ps, p)
		}
	}
	// Shares: the larger ones to the members that own the most.
	byOwned := slices.Clone(ids)
	slices.SortStableFunc(byOwned, func(a, b string) int { return cmp.Compare(len(owned[b]), len(owned[a])) })
	base, extra := len(prev)/len(ids), len(prev)%len(ids)
	need := make(map[string]int, len(ids))
	for i, id := range byOwned {
		share := base
		if i < extra {
			share++
		}
		keep := owned[id][:min(share, len(owned[id]))]
		for _, p := range keep {
			out[p] = id
		}
		need[id] = share - len(keep)
	}
	i := 0
	for p := range out {
		if out[p] != "" {
			continue
		}
		for need[ids[i]] == 0 {
			i++
		}
		out[p] = ids[i]
		need[ids[i]]--
	}
	return out
}

// Next returns the map of generation gen whose owners are owners, given
// the acknowledgement of each live member (acks, by id). A partition that
// changed owner has Since gen, and its Prev is its owner before, if live,
// and those of its Prev that are live and had not acknowledged its Since.
// The others keep their Since, and their Prev less the members that
// acknowledged it or are not live.
func (m PartitionMap) Next(owners []string, gen int64, acks map[string]int64) PartitionMap {
	n := PartitionMap{Owner: slices.Clone(owners), Since: make([]int64, len(owners)), Prev: make([][]string, len(owners))}
	for p, o := range owners {
		var old string
		var since int64
		var prev []string
		if p < len(m.Owner) {
			old, since, prev = m.Owner[p], m.Since[p], m.Prev[p]
		}
		var keep []string
		for _, id := range prev {
			if ack, live := acks[id]; live && ack < since && id != o {
				keep = append(keep, id)
			}
		}
		if old == o {
			n.Since[p], n.Prev[p] = since, keep
			continue
		}
		if o != "" {
			n.Since[p] = gen
		}
		if _, live := acks[old]; live && old != "" && old != o && !slices.Contains(keep, old) {
			keep = append(keep, old)
		}
		slices.Sort(keep)
		n.Prev[p] = keep
	}
	return n
}

// ids returns every member id the map names, as an owner or in a Prev,
// sorted.
func (m PartitionMap) ids() []string {
	ids := m.Members()
	for _, prev := range m.Prev {
		ids = append(ids, prev...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Owned returns the partitions id owns, in order.
func (m PartitionMap) Owned(id string) []int {
	var out []int
	for p, o := range m.Owner {
		if o == id {
			out = append(out, p)
		}
	}
	return out
}

// Members returns the ids that own at least one partition, sorted.
func (m PartitionMap) Members() []string {
	var ids []string
	for _, o := range m.Owner {
		if o != "" {
			ids = append(ids, o)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// mapPrefix starts the data of a sticky pool's generation row.
const mapPrefix = "sticky:"

// IsMap reports whether a generation row's data is a partition map
// rather than a member list.
func IsMap(data string) bool { return strings.HasPrefix(data, mapPrefix) }

// EncodeMap returns the generation row's data for m:
//
//	sticky:<P>;<id 0>,<id 1>,...;<run>,<run>,...
//
// where the ids are those the map names and each run is
// "<i>@<since>[^<j>.<k>...]*<count>": count consecutive partitions owned
// by the i-th id since one generation, with the j-th, k-th... ids as
// their Prev; the owner is "-" for partitions owned by none. Member ids
// never contain ';', ',', '@', '^' or '*' (they are instance ids, or
// static ids of letters, digits, '.', '_', '-' after a "s:").
func EncodeMap(m PartitionMap) string {
	ids := m.ids()
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	var b strings.Builder
	b.WriteString(mapPrefix + strconv.Itoa(len(m.Owner)) + ";" + strings.Join(ids, ",") + ";")
	for p := 0; p < len(m.Owner); {
		q := p + 1
		for q < len(m.Owner) && m.Owner[q] == m.Owner[p] && m.Since[q] == m.Since[p] && slices.Equal(m.Prev[q], m.Prev[p]) {
			q++
		}
		if p > 0 {
			b.WriteByte(',')
		}
		if m.Owner[p] == "" {
			b.WriteString("-")
		} else {
			b.WriteString(strconv.Itoa(index[m.Owner[p]]) + "@" + strconv.FormatInt(m.Since[p], 10))
		}
		for i, id := range m.Prev[p] {
			if i == 0 {
				b.WriteByte('^')
			} else {
				b.WriteByte('.')
			}
			b.WriteString(strconv.Itoa(index[id]))
		}
		b.WriteString("*" + strconv.Itoa(q-p))
		p = q
	}
	return b.String()
}

// DecodeMap parses data written by EncodeMap.
func DecodeMap(data string) (PartitionMap, error) {
	bad := func(why string) (PartitionMap, error) {
		return PartitionMap{}, fmt.Errorf("partition map %.40q: %s", data, why)
	}
	body, ok := strings.CutPrefix(data, mapPrefix)
	if !ok {
		return bad("no " + mapPrefix + " prefix")
	}
	parts := strings.Split(body, ";")
	if len(parts) != 3 {
		return bad("not three ';'-separated parts")
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 0 {
		return bad("bad partition count")
	}
	var ids []string
	if parts[1] != "" {
		ids = strings.Split(parts[1], ",")
	}
	m := PartitionMap{Owner: make([]string, 0, n), Since: make([]int64, 0, n), Prev: make([][]string, 0, n)}
	if parts[2] != "" {
		for _, run := range strings.Split(parts[2], ",") {
			head, count, ok := strings.Cut(run, "*")
			c, err := strconv.Atoi(count)
			if !ok || err != nil || c <= 0 || len(m.Owner)+c > n {
				return bad("bad run " + strconv.Quote(run))
			}
			head, prevs, hasPrev := strings.Cut(head, "^")
			var prev []string
			if hasPrev {
				for _, i := range strings.Split(prevs, ".") {
					idx, err := strconv.Atoi(i)
					if err != nil || idx < 0 || idx >= len(ids) {
						return bad("bad run " + strconv.Quote(run))
					}
					prev = append(prev, ids[idx])
				}
			}
			owner, since := "", int64(0)
			if head != "-" {
				i, s, ok := strings.Cut(head, "@")
				idx, err1 := strconv.Atoi(i)
				g, err2 := strconv.ParseInt(s, 10, 64)
				if !ok || err1 != nil || err2 != nil || idx < 0 || idx >= len(ids) {
					return bad("bad run " + strconv.Quote(run))
				}
				owner, since = ids[idx], g
			}
			for range c {
				m.Owner = append(m.Owner, owner)
				m.Since = append(m.Since, since)
				m.Prev = append(m.Prev, prev)
			}
		}
	}
	if len(m.Owner) != n {
		return bad("runs cover " + strconv.Itoa(len(m.Owner)) + " partitions")
	}
	return m, nil
}
