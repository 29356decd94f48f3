package membership

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/store"
)

// Rows names the rows of one pool. The coordinator builds it from the
// pool's key.
type Rows struct {
	Prefix     string // every row of this pool starts with it, and no other row does
	Generation string // the generation row
	Members    string // every member row starts with it, and no other row does
	// Wakes starts the name of every wake-up for one member (Wake); no
	// row's name starts with it.
	Wakes string
}

// Member returns the row key of the member with the given member id.
func (r Rows) Member(id string) string { return r.Members + id }

// Wake returns the name of a wake-up for the member with the given id
// alone (Notifier): an acknowledgement it waits for. No row has that
// name; a process wakes this pool for it only if that member is its own.
func (r Rows) Wake(id string) string { return r.Wakes + id }

// WakeFor returns the member id a wake-up name from Wake is for, and
// false for any other name.
func (r Rows) WakeFor(name string) (string, bool) {
	if r.Wakes == "" {
		return "", false
	}
	id, ok := strings.CutPrefix(name, r.Wakes)
	return id, ok && id != ""
}

// MemberID returns the member id of a member row key, and false for a key
// that is not a member row of this pool.
func (r Rows) MemberID(rowKey string) (string, bool) {
	id, ok := strings.CutPrefix(rowKey, r.Members)
	return id, ok && id != ""
}

// Row is one member row as the database sees it.
type Row struct {
	ID        string    // member id
	Holder    string    // node/cluster/instance
	Ack       int64     // the newest generation it acknowledged
	Live      bool      // held and unexpired by the database clock
	ExpiresAt time.Time // by the database clock, in UTC; zero for a row never held
}

// State is a pool as one read of its rows shows it.
type State struct {
	Generation int64
	List       []string // member ids of the current generation, in index order
	Members    []Row    // every member row, live or not, by id
	DBNow      time.Time
	// HoldUntil is, after a failover of the database, when the pool may
	// publish and start work again, by the database clock; zero when
	// there is no hold-off.
	HoldUntil time.Time
	// Floor is the epoch floor of the database's incarnation: a
	// generation below it is republished above it.
	Floor int64
	// Map is the partition map of a sticky pool's generation, nil when
	// the generation row holds a member list; List is then the members
	// that own partitions, by id. MapErr is set, and Map nil, when the
	// row holds a map that does not parse.
	Map    *PartitionMap
	MapErr error
}

// StateOf builds the state of the pool whose rows rows names from its
// rows. The generation row's data is the member list, comma-separated, or
// a partition map (EncodeMap); a member row's is its acknowledgement.
func StateOf(rows Rows, rs []store.Row) State {
	var st State
	for _, r := range rs {
		st.DBNow, st.HoldUntil, st.Floor = r.Now, r.HoldUntil, r.EpochFloor
		if r.Name == rows.Generation {
			st.Generation = r.Epoch
			switch {
			case IsMap(r.Data):
				if pm, err := DecodeMap(r.Data); err != nil {
					st.MapErr = err
				} else {
					st.Map, st.List = &pm, pm.Members()
				}
			case r.Data != "":
				st.List = strings.Split(r.Data, ",")
			}
		} else if id, ok := rows.MemberID(r.Name); ok {
			ack, _ := strconv.ParseInt(r.Data, 10, 64)
			st.Members = append(st.Members, Row{
				ID: id, Holder: r.Holder, Ack: ack, Live: r.Live(), ExpiresAt: r.ExpiresAt,
			})
		}
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	return st
}

// Lister reads rows by prefix: the one statement a read of a pool is.
type Lister interface {
	List(ctx context.Context, prefix string) ([]store.Row, error)
}

// Read reads the pool with the given key, whose rows rows names.
func Read(ctx context.Context, s Lister, pool string, rows Rows) (State, error) {
	rs, err := s.List(ctx, rows.Prefix)
	if err != nil {
		return State{}, fmt.Errorf("coordination: read pool %q: %w", pool, err)
	}
	return StateOf(rows, rs), nil
}

// heldOff reports whether a failover of the database was less than a
// hold-off ago at the read.
func (s State) heldOff() bool { return s.HoldUntil.After(s.DBNow) }

// live returns the live member rows, by id.
func (s State) live() map[string]Row {
	out := make(map[string]Row)
	for _, m := range s.Members {
		if m.Live {
			out[m.ID] = m
		}
	}
	return out
}

// nextList is the member list for a new generation: members of the
// current list that are still live, in their order, then live members not
// in it, by id.
func nextList(list []string, live map[string]Row) []string {
	out := make([]string, 0, len(live))
	in := make(map[string]bool, len(list))
	for _, id := range list {
		in[id] = true
		if _, ok := live[id]; ok {
			out = append(out, id)
		}
	}
	var joiners []string
	for id := range live {
		if !in[id] {
			joiners = append(joiners, id)
		}
	}
	sort.Strings(joiners)
	return append(out, joiners...)
}

// liveListed returns a live member of the current generation's list
// other than me, if there is one: a member that runs the pool in the mode
// the generation row was written in.
func (s State) liveListed(me string) (string, bool) {
	for _, m := range s.Members {
		if m.Live && m.ID != me && slices.Contains(s.List, m.ID) {
			return m.ID, true
		}
	}
	return "", false
}
