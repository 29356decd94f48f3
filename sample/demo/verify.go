package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/leasehold/leasehold/identity"
)

// timelineRow is a row of the sample's sample_timeline table.
type timelineRow struct {
	ID         int64
	AtUS       int64 `gorm:"column:at_us"`
	Node       string
	Cluster    string
	Holder     string
	Kind       string
	Worker     string
	Epoch      int64
	Generation int64
	Idx        int
	Cnt        int
	Detail     string
}

func (timelineRow) TableName() string { return "sample_timeline" }

// Timeline kinds the demo writes itself.
const (
	kindKilled       = "killed"
	kindAllProcessed = "all-processed"
	kindSigterm      = "sigterm"
)

// report is the demo's reporting side: the numbers of the final line,
// the checks behind them, and the timeline, all read from the store.
type report struct {
	*console
	store *store
	kill  *killing // the demo's
	res   result
}

// result is what the final line reports.
type result struct {
	items, processedOnce, duplicates, unprocessed int64
	leadersPerEpoch                               int64
	failoverMS                                    int64 // -1 until measured
}

func (r result) String() string {
	failover := "?"
	if r.failoverMS >= 0 {
		failover = fmt.Sprint(r.failoverMS)
	}
	return fmt.Sprintf("items=%d processed_once=%d duplicates=%d leaders_per_epoch=%d failover_ms=%s",
		r.items, r.processedOnce, r.duplicates, r.leadersPerEpoch, failover)
}

// record adds a row to the timeline.
func (s *store) record(ctx context.Context, row timelineRow) error {
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("write the timeline: %w", err)
	}
	return nil
}

// epochSpan is one ledger epoch: its holder(s), rows, ids and times.
type epochSpan struct {
	Epoch          int64
	Holders        int64
	Holder         string
	NRows          int64 `gorm:"column:n_rows"`
	MinID, MaxID   int64
	MinAtUS        int64  `gorm:"column:min_at_us"`
	MaxAtUS        int64  `gorm:"column:max_at_us"`
	HolderNodeName string `gorm:"-"`
}

func (s *store) ledgerEpochs(ctx context.Context) ([]epochSpan, error) {
	var spans []epochSpan
	err := s.db.WithContext(ctx).Raw("SELECT epoch, COUNT(DISTINCT holder) AS holders, MIN(holder) AS holder, COUNT(*) AS n_rows, " +
		"MIN(id) AS min_id, MAX(id) AS max_id, MIN(at_us) AS min_at_us, MAX(at_us) AS max_at_us " +
		"FROM sample_ledger GROUP BY epoch ORDER BY epoch").Scan(&spans).Error
	if err != nil {
		return nil, fmt.Errorf("read sample_ledger: %w", err)
	}
	for i := range spans {
		spans[i].HolderNodeName = nodeOf(spans[i].Holder)
	}
	return spans, nil
}

// nodeOf returns the node of a holder string, or the string itself.
func nodeOf(holder string) string {
	if id, err := identity.ParseHolder(holder); err == nil {
		return id.Node
	}
	return holder
}

// measure reads the numbers of the final line from the database.
func (rep *report) measure(ctx context.Context) error {
	r := &rep.res
	err := errors.Join(
		rep.store.scan(ctx, &r.items, "SELECT COUNT(*) FROM sample_orders"),
		rep.store.scan(ctx, &r.unprocessed, "SELECT COUNT(*) FROM sample_orders WHERE processed_by IS NULL"),
		rep.store.scan(ctx, &r.processedOnce, "SELECT COUNT(*) FROM (SELECT order_id FROM sample_processing GROUP BY order_id HAVING COUNT(*) = 1) d"),
		rep.store.scan(ctx, &r.duplicates, "SELECT COUNT(*) FROM (SELECT order_id FROM sample_processing GROUP BY order_id HAVING COUNT(*) > 1) d"),
		rep.store.scan(ctx, &r.leadersPerEpoch, "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(DISTINCT holder) AS n FROM sample_ledger GROUP BY epoch) e"),
	)
	if err != nil {
		return err
	}
	if rep.kill.victim == nil {
		return nil
	}
	// Failover: from the kill to the first ledger row of a later epoch,
	// which only the new leader can have written.
	var first struct {
		AtUS   int64 `gorm:"column:at_us"`
		Holder string
	}
	err = rep.store.db.WithContext(ctx).Raw("SELECT at_us, holder FROM sample_ledger WHERE epoch > ? ORDER BY epoch, id LIMIT 1", rep.kill.epoch).
		Scan(&first).Error
	if err != nil {
		return fmt.Errorf("read sample_ledger: %w", err)
	}
	if first.Holder != "" {
		r.failoverMS = (first.AtUS - rep.kill.at.UnixMicro()) / 1000
	}
	return nil
}

// verify checks the measured numbers and the ledger's epochs, and prints
// what it checked.
func (rep *report) verify(ctx context.Context) error {
	r := rep.res
	spans, err := rep.store.ledgerEpochs(ctx)
	if err != nil {
		return err
	}
	var byNode []struct {
		Member string
		N      int64
	}
	if err := rep.store.db.WithContext(ctx).Raw("SELECT member, COUNT(*) AS n FROM sample_processing GROUP BY member").Scan(&byNode).Error; err != nil {
		return fmt.Errorf("read sample_processing: %w", err)
	}
	counts := map[string]int64{}
	for _, m := range byNode {
		counts[nodeOf(m.Member)] += m.N
	}
	var parts []string
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("%s %d", n.name, counts[n.name]))
	}
	rep.printf("orders processed by: %s", strings.Join(parts, ", "))
	parts = parts[:0]
	for _, s := range spans {
		parts = append(parts, fmt.Sprintf("epoch %d %s %d rows", s.Epoch, s.HolderNodeName, s.NRows))
	}
	rep.printf("ledger: %s", strings.Join(parts, "; "))

	var problems []string
	if r.items != orders {
		problems = append(problems, fmt.Sprintf("%d orders in the table, want %d", r.items, orders))
	}
	if r.unprocessed != 0 {
		problems = append(problems, fmt.Sprintf("%d orders unprocessed", r.unprocessed))
	}
	if r.duplicates != 0 {
		problems = append(problems, fmt.Sprintf("%d orders processed more than once", r.duplicates))
	}
	if r.processedOnce != r.items {
		problems = append(problems, fmt.Sprintf("%d of %d orders processed exactly once", r.processedOnce, r.items))
	}
	if r.leadersPerEpoch != 1 {
		problems = append(problems, fmt.Sprintf("%d ledger holders in one epoch", r.leadersPerEpoch))
	}
	for i := 1; i < len(spans); i++ {
		prev, cur := spans[i-1], spans[i]
		if prev.MaxID >= cur.MinID || prev.MaxAtUS >= cur.MinAtUS {
			problems = append(problems, fmt.Sprintf("ledger epochs %d and %d overlap (ids %d-%d and %d-%d)",
				prev.Epoch, cur.Epoch, prev.MinID, prev.MaxID, cur.MinID, cur.MaxID))
		}
	}
	if len(spans) < 2 {
		problems = append(problems, fmt.Sprintf("the ledger has %d epochs; the failover should have added one", len(spans)))
	}
	if r.failoverMS < 0 {
		problems = append(problems, "no ledger row after the kill")
	}
	for _, s := range spans {
		if s.Epoch > rep.kill.epoch && s.HolderNodeName == rep.kill.victim.name {
			problems = append(problems, fmt.Sprintf("the killed %s appended at epoch %d", rep.kill.victim.name, s.Epoch))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	rep.printf("checked: every order processed exactly once, one holder per ledger epoch, epochs in order")
	return nil
}

// printTimeline prints what happened, from sample_timeline, in a few
// lines: repeated events are collapsed, cluster reports are counted.
func (rep *report) printTimeline(ctx context.Context) error {
	var rows []timelineRow
	if err := rep.store.db.WithContext(ctx).Order("at_us, id").Find(&rows).Error; err != nil {
		return fmt.Errorf("read sample_timeline: %w", err)
	}
	fmt.Fprintln(rep.out, "timeline:")
	for _, l := range timelineLines(rows, rep.t0, rep.kill.at, rep.kill.epoch) {
		fmt.Fprintf(rep.out, "  %9s  %-6s %s\n", l.at, l.node, l)
	}
	return nil
}

// line is one printed timeline line, n times in a row.
type line struct {
	at, node, text string
	n              int
}

func (l line) String() string {
	if l.n > 1 {
		return fmt.Sprintf("%s (×%d)", l.text, l.n)
	}
	return l.text
}

// timelineLines turns timeline rows into sentences.
func timelineLines(rows []timelineRow, t0, killAt time.Time, killedEpoch int64) []line {
	rel := func(us int64) string {
		return fmt.Sprintf("%+.3fs", time.UnixMicro(us).Sub(t0).Seconds())
	}
	// Group the assignments by generation, to print each rebalance once.
	gens := map[int64][]timelineRow{}
	for _, r := range rows {
		if r.Kind == "assignment-started" {
			gens[r.Generation] = append(gens[r.Generation], r)
		}
	}
	// Stops at shutdown are folded into the node's process-stop line.
	stopping := map[string][]string{}
	for _, r := range rows {
		if r.Kind == "stopped-leading" && strings.HasSuffix(r.Detail, ": shutting down") {
			stopping[r.Node] = append(stopping[r.Node], fmt.Sprintf("%s (epoch %d)", r.Worker, r.Epoch))
		}
	}
	stopped := map[string]bool{}
	for _, r := range rows {
		if r.Kind == "process-stop" {
			stopped[r.Node] = true
		}
	}

	var out []line
	add := func(r timelineRow, node, text string) {
		if n := len(out); n > 0 && out[n-1].node == node && out[n-1].text == text {
			out[n-1].n++ // the same event again: count it
			return
		}
		out = append(out, line{at: rel(r.AtUS), node: node, text: text, n: 1})
	}
	reports := map[string]int{}
	startPrinted := map[int]bool{}
	printedGen := map[int64]bool{}
	for i := 0; i < len(rows); i++ {
		r := rows[i]
		switch r.Kind {
		case "process-start":
			// One line for the copies that started within a second.
			if startPrinted[i] {
				continue
			}
			var started []string
			for j := i; j < len(rows) && rows[j].AtUS-r.AtUS < time.Second.Microseconds(); j++ {
				if rows[j].Kind == "process-start" {
					startPrinted[j] = true
					started = append(started, fmt.Sprintf("%s (%s)", rows[j].Node, rows[j].Cluster))
				}
			}
			add(r, "", strings.Join(started, ", ")+" started")
		case "started-leading":
			text := fmt.Sprintf("%s became leader of %s in cluster %s (epoch %d)", r.Node, r.Worker, r.Cluster, r.Epoch)
			if strings.HasPrefix(r.Detail, "global/") {
				text = fmt.Sprintf("%s became global leader of %s (epoch %d)", r.Node, r.Worker, r.Epoch)
			}
			if !killAt.IsZero() && r.Worker == "ledger" && r.Epoch > killedEpoch && r.AtUS > killAt.UnixMicro() {
				text += fmt.Sprintf(" after %.1f s", time.UnixMicro(r.AtUS).Sub(killAt).Seconds())
			}
			add(r, r.Node, text)
		case "stopped-leading":
			if stopped[r.Node] && strings.HasSuffix(r.Detail, ": shutting down") {
				continue
			}
			reason := r.Detail
			if _, after, ok := strings.Cut(r.Detail, ": "); ok {
				reason = after
			}
			add(r, r.Node, fmt.Sprintf("%s stopped leading %s (epoch %d): %s", r.Node, r.Worker, r.Epoch, reason))
		case "assignment-started":
			if printedGen[r.Generation] {
				continue
			}
			printedGen[r.Generation] = true
			as := gens[r.Generation]
			sort.Slice(as, func(i, j int) bool { return as[i].Idx < as[j].Idx })
			parts := make([]string, len(as))
			for i, a := range as {
				parts[i] = fmt.Sprintf("%s %d/%d", a.Node, a.Idx, a.Cnt)
			}
			add(r, "", fmt.Sprintf("%s generation %d → %s", r.Worker, r.Generation, strings.Join(parts, ", ")))
		case "report":
			reports[fmt.Sprintf("%s by %s", r.Cluster, r.Node)]++
		case kindKilled:
			add(r, r.Node, fmt.Sprintf("%s killed (SIGKILL) while leading %s (epoch %d)", r.Node, r.Worker, r.Epoch))
		case kindAllProcessed:
			add(r, "", r.Detail)
		case kindSigterm:
			add(r, "", "SIGTERM to "+r.Detail)
		case "process-stop":
			text := fmt.Sprintf("%s %s", r.Node, r.Detail)
			if s := stopping[r.Node]; len(s) > 0 {
				text += "; released " + strings.Join(s, ", ")
			}
			add(r, r.Node, text)
		case "worker-error":
			detail := r.Detail
			if len(detail) > 120 {
				detail = detail[:120] + "…"
			}
			add(r, r.Node, fmt.Sprintf("%s: %s failed: %s", r.Node, r.Worker, detail))
		case "shutdown-overrun":
			add(r, r.Node, fmt.Sprintf("%s: %s overran the shutdown timeout", r.Node, r.Worker))
		}
	}
	if len(reports) > 0 {
		keys := make([]string, 0, len(reports))
		for k := range reports {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s ×%d", k, reports[k])
		}
		out = append(out, line{node: "", text: "cluster reports (one a second per cluster, not shown): " + strings.Join(parts, ", ")})
	}
	return out
}
