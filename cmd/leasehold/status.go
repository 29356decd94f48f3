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
	"github.com/leasehold/leasehold/status"
)

func statusFlags(fs *flag.FlagSet) func(context.Context, *env, []string) error {
	asJSON := fs.Bool("json", false, "print the leases, pools, locks and processes as one JSON object")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q: status takes flags only", args[0])
		}
		adm, closeDB, err := e.admin(ctx, readOnly)
		if err != nil {
			return err
		}
		defer closeDB()
		s, err := status.Read(ctx, adm)
		if err != nil {
			return fmt.Errorf("read %s: %w", e.where(), err)
		}
		if *asJSON {
			// stdout holds the snapshot alone, as the status page serves
			// it; the database it was read from goes to stderr.
			fmt.Fprintf(e.stderr, "leasehold: status of %s\n", e.where())
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "status of %s\n", e.where())
		writeSnapshot(&b, s, nil)
		_, err = e.stdout.Write(b.Bytes())
		return err
	}
}

// writeSnapshot prints s as tables. With changes (from watch), a first
// column says what changed since the last refresh, by lease name and pool
// key.
func writeSnapshot(w io.Writer, s status.Snapshot, changes *changeSet) {
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
		row := fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s\t%s", l.Key, orDash(l.Holder), l.Epoch, yesNo(l.Live),
			left(l.Live, l.ExpiresAt, l.DatabaseTime), stamp(l.AcquiredAt), stamp(l.RenewedAt))
		if changes != nil {
			row = orDash(changes.leases[l.Key]) + "\t" + row
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
		rows := memberRows(p)
		if len(rows) == 0 {
			fmt.Fprintln(tw, "  (no members)")
		}
		for _, m := range rows {
			index := "-"
			if m.index >= 0 {
				index = strconv.Itoa(m.index)
			}
			ack := strconv.FormatInt(m.Ack, 10)
			if m.Ack == p.Generation {
				ack += " (current)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", index, m.ID, orDash(m.Holder), memberLive(m), ack,
				left(m.Live, m.ExpiresAt, p.DatabaseTime))
		}
		_ = tw.Flush()
	}
	if changes != nil {
		for _, key := range changes.gonePools {
			fmt.Fprintf(w, "\nPOOL %s  [gone]\n", key)
		}
	}
	for _, l := range s.Locks {
		writeLocks(w, l)
	}
	writeSessions(w, s.Sessions)
	for _, sc := range s.Schedules {
		writeSchedule(w, sc)
	}
}

// writeLocks prints a namespace of keyed locks or a semaphore with the
// keys or slots held.
func writeLocks(w io.Writer, l status.Locks) {
	what, col := "LOCKS", "KEY"
	if l.Slots > 0 {
		what, col = "SEMAPHORE", "SLOT"
	}
	fmt.Fprintf(w, "\n%s %s", what, l.Key)
	if l.Slots > 0 {
		fmt.Fprintf(w, "  slots>=%d", l.Slots)
	}
	fmt.Fprintf(w, "  %d held\n", len(l.Holders))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\tHOLDER\tEPOCH\tLIVE\tLEFT\tACQUIRED\n", col)
	if len(l.Holders) == 0 {
		fmt.Fprintln(tw, "  (none held)")
	}
	for _, h := range l.Holders {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\n", h.Key, h.Holder, h.Epoch, yesNo(h.Live),
			left(h.Live, h.ExpiresAt, h.DatabaseTime), stamp(h.AcquiredAt))
	}
	_ = tw.Flush()
}

// writeSessions prints the processes of the session table.
func writeSessions(w io.Writer, sessions []coordination.SessionInfo) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tSESSION\tLEFT\tRENEWED\tWAKE-UPS AT")
	if len(sessions) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	for _, si := range sessions {
		state := "expired"
		if si.Live {
			state = "live"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", si.Holder, state, left(si.Live, si.ExpiresAt, si.DatabaseTime),
			stamp(si.RenewedAt), orDash(strings.Join(si.WakeAddrs, ",")))
	}
	_ = tw.Flush()
}

// memberLive says whether a pool member is live, dead (held by a process
// whose session is gone or expired, or without a row) or left (its row
// released).
func memberLive(m memberRow) string {
	switch {
	case m.Live:
		return "yes"
	case m.Holder != "" || !m.hasRow:
		return "dead"
	}
	return "left"
}

// writeSchedule prints a scheduled worker's next slot and its history.
func writeSchedule(w io.Writer, sc status.Schedule) {
	if sc.Error != "" {
		fmt.Fprintf(w, "\nSCHEDULE %s  unreadable: %s\n", sc.Name, sc.Error)
		return
	}
	st := sc.State
	fmt.Fprintf(w, "\nSCHEDULE %s  next %s  done %s  holder %s epoch %d\n", sc.Name, stamp(st.Next), stamp(st.Done),
		orDash(sc.Lease.Holder), sc.Lease.Epoch)
	if r := st.Running; r != nil {
		fmt.Fprintf(w, "  running: slot %s since %s on %s epoch %d\n", stamp(r.Slot), stamp(r.Start), r.Holder, r.Epoch)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SLOT\tOUTCOME\tHOLDER\tEPOCH\tATTEMPT\tSTART\tEND")
	if len(st.History) == 0 {
		fmt.Fprintln(tw, "  (no runs)")
	}
	for _, r := range st.History {
		outcome := string(r.Outcome)
		if r.Skipped > 0 {
			outcome += " (" + strconv.FormatInt(r.Skipped, 10) + ")"
		}
		attempt := "-"
		if r.Attempt > 0 {
			attempt = strconv.Itoa(r.Attempt)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\n", stamp(r.Slot), outcome, r.Holder, r.Epoch, attempt, stamp(r.Start), stamp(r.End))
	}
	_ = tw.Flush()
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

// left is the time a live lease or membership has left, from its expiry
// and the database clock at the read, or "-" when it is not live.
func left(live bool, expires, dbNow time.Time) string {
	if !live {
		return "-"
	}
	secs := max(expires.Sub(dbNow), 0).Round(time.Millisecond).Seconds()
	return strconv.FormatFloat(secs, 'f', 1, 64) + "s"
}

// memberRow is one member row of a pool, with its index in the
// generation; -1 outside it.
type memberRow struct {
	coordination.Member
	index  int
	hasRow bool
}

// memberRows lays out the members of a pool: the generation's in index
// order, then the member rows outside it (joining, or left and not yet
// pruned). A member of the generation without a row has only its id.
func memberRows(p coordination.PoolState) []memberRow {
	byID := make(map[string]coordination.Member, len(p.Members))
	for _, m := range p.Members {
		byID[m.ID] = m
	}
	rows := make([]memberRow, 0, len(p.Members))
	listed := make(map[string]bool, len(p.List))
	for i, id := range p.List {
		listed[id] = true
		m, ok := byID[id]
		if !ok {
			m = coordination.Member{ID: id}
		}
		rows = append(rows, memberRow{Member: m, index: i, hasRow: ok})
	}
	for _, m := range p.Members {
		if !listed[m.ID] {
			rows = append(rows, memberRow{Member: m, index: -1, hasRow: true})
		}
	}
	return rows
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
