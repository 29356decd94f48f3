package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// snapshot is one read of the leases and pools; its JSON encoding is the
// output of status -json. Times are by the database clock, in UTC.
type snapshot struct {
	DatabaseTime time.Time `json:"database_time,omitzero"` // absent when the tables are empty
	Leases       []lease   `json:"leases"`
	Pools        []pool    `json:"pools"`
}

// lease is one election lease.
type lease struct {
	Name       string    `json:"name"`
	Holder     string    `json:"holder"` // "" when free
	Epoch      int64     `json:"epoch"`
	Live       bool      `json:"live"`
	Left       float64   `json:"left_seconds"` // until ExpiresAt by the database clock; 0 when not live
	AcquiredAt time.Time `json:"acquired_at,omitzero"`
	RenewedAt  time.Time `json:"renewed_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
}

// pool is one pool.
type pool struct {
	Key        string `json:"pool"`
	Generation int64  `json:"generation"`
	// Members lists the members of the generation in index order, then
	// the member rows outside it (joining, or left and not yet pruned).
	Members []member `json:"members"`
}

// member is one member of a pool.
type member struct {
	Index  *int    `json:"index"` // its index in the generation; null outside it
	ID     string  `json:"id"`
	Holder string  `json:"holder"` // "" when its row is free or missing
	Live   bool    `json:"live"`
	Ack    int64   `json:"ack"`   // the newest generation it acknowledged
	Acked  bool    `json:"acked"` // Ack is the pool's generation
	Left   float64 `json:"left_seconds"`
}

// poolRowPrefix starts the name of every pool row in Coordinator.Leases;
// pools are read with Coordinator.Pools instead.
const poolRowPrefix = "pool|"

// read reads every lease and pool.
func read(ctx context.Context, c *coordination.Coordinator) (snapshot, error) {
	s := snapshot{Leases: []lease{}, Pools: []pool{}}
	infos, err := c.Leases(ctx)
	if err != nil {
		return snapshot{}, err
	}
	for _, li := range infos {
		s.DatabaseTime = li.DatabaseTime
		if strings.HasPrefix(li.Name, poolRowPrefix) {
			continue
		}
		l := lease{Name: li.Name, Holder: li.Holder, Epoch: li.Epoch, Live: li.Live,
			AcquiredAt: li.AcquiredAt, RenewedAt: li.RenewedAt, ExpiresAt: li.ExpiresAt}
		if li.Live {
			l.Left = seconds(li.ExpiresAt.Sub(li.DatabaseTime))
		}
		s.Leases = append(s.Leases, l)
	}
	states, err := c.Pools(ctx)
	if err != nil {
		return snapshot{}, err
	}
	for _, st := range states {
		s.Pools = append(s.Pools, poolOf(st))
		if s.DatabaseTime.IsZero() {
			s.DatabaseTime = st.DBNow
		}
	}
	return s, nil
}

// poolOf lays out one pool: the generation's members in index order, then
// the rows outside it.
func poolOf(st coordination.PoolState) pool {
	p := pool{Key: st.Pool, Generation: st.Generation, Members: []member{}}
	rows := make(map[string]coordination.Member, len(st.Members))
	for _, m := range st.Members {
		rows[m.ID] = m
	}
	add := func(index *int, id string) {
		m := member{Index: index, ID: id}
		if r, ok := rows[id]; ok {
			m.Holder, m.Live, m.Ack, m.Acked = r.Holder, r.Live, r.Ack, r.Ack == st.Generation
			if r.Live {
				m.Left = seconds(r.ExpiresAt.Sub(st.DBNow))
			}
		}
		p.Members = append(p.Members, m)
	}
	listed := make(map[string]bool, len(st.List))
	for i, id := range st.List {
		listed[id] = true
		add(&i, id)
	}
	for _, m := range st.Members {
		if !listed[m.ID] {
			add(nil, m.ID)
		}
	}
	return p
}

// seconds returns d in seconds, to the millisecond, never below zero.
func seconds(d time.Duration) float64 {
	return max(d, 0).Round(time.Millisecond).Seconds()
}

func statusFlags(fs *flag.FlagSet) func(context.Context, *env, []string) error {
	asJSON := fs.Bool("json", false, "print the leases and pools as one JSON object")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q: status takes flags only", args[0])
		}
		c, closeDB, err := e.coordinator(ctx)
		if err != nil {
			return err
		}
		defer closeDB()
		s, err := read(ctx, c)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}
		var b bytes.Buffer
		writeSnapshot(&b, s, nil)
		_, err = e.stdout.Write(b.Bytes())
		return err
	}
}

// writeSnapshot prints s as tables. With changes (from watch), a first
// column says what changed since the last refresh, by lease name and pool
// key.
func writeSnapshot(w io.Writer, s snapshot, changes *changeSet) {
	when := "no rows"
	if !s.DatabaseTime.IsZero() {
		when = s.DatabaseTime.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "database time %s\n\n", when)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "LEASE\tHOLDER\tEPOCH\tLIVE\tLEFT\tACQUIRED\tRENEWED"
	if changes != nil {
		head = "CHANGE\t" + head
	}
	fmt.Fprintln(tw, head)
	if len(s.Leases) == 0 && (changes == nil || len(changes.goneLeases) == 0) {
		fmt.Fprintln(tw, "(none)")
	}
	for _, l := range s.Leases {
		row := fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s\t%s", l.Name, orDash(l.Holder), l.Epoch, yesNo(l.Live),
			left(l.Live, l.Left), stamp(l.AcquiredAt), stamp(l.RenewedAt))
		if changes != nil {
			row = orDash(changes.leases[l.Name]) + "\t" + row
		}
		fmt.Fprintln(tw, row)
	}
	if changes != nil {
		for _, name := range changes.goneLeases {
			fmt.Fprintf(tw, "gone\t%s\t-\t-\t-\t-\t-\t-\n", name)
		}
	}
	_ = tw.Flush()

	for _, p := range s.Pools {
		mark := ""
		if changes != nil && changes.pools[p.Key] != "" {
			mark = "  [" + changes.pools[p.Key] + "]"
		}
		fmt.Fprintf(w, "\nPOOL %s  generation %d%s\n", p.Key, p.Generation, mark)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  INDEX\tMEMBER\tHOLDER\tLIVE\tACK\tLEFT")
		if len(p.Members) == 0 {
			fmt.Fprintln(tw, "  (no members)")
		}
		for _, m := range p.Members {
			index := "-"
			if m.Index != nil {
				index = strconv.Itoa(*m.Index)
			}
			ack := strconv.FormatInt(m.Ack, 10)
			if m.Acked {
				ack += " (current)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", index, m.ID, orDash(m.Holder), yesNo(m.Live), ack, left(m.Live, m.Left))
		}
		_ = tw.Flush()
	}
	if changes != nil {
		for _, key := range changes.gonePools {
			fmt.Fprintf(w, "\nPOOL %s  [gone]\n", key)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func left(live bool, secs float64) string {
	if !live {
		return "-"
	}
	return strconv.FormatFloat(secs, 'f', 1, 64) + "s"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
