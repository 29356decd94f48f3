package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/history"
)

// verdict keeps the runner's own history (the faults injected, and what
// the items table shows that the workers could not record) and judges
// the dialect's run: the table, the clock-skew faults, and every history
// against the rules of package history.
type verdict struct {
	*runLog
	// histDir holds the histories of the workers and the runner.
	histDir  string
	rec      *history.Recorder
	database *database
	fleet    *fleet
	// lossWindows are, for each failover to an asynchronous standby, the
	// history times from the standby's last catch-up to the promotion:
	// commits made then on the old primary were lost (recordLostItems).
	lossWindows [][2]int64
}

// open creates the runner's history.
func (v *verdict) open() error {
	var err error
	v.rec, err = history.Create(filepath.Join(v.histDir, "runner.jsonl"), "runner/"+Cluster+"/"+v.name)
	return err
}

// fault records a Fault event in the runner's history.
func (v *verdict) fault(e history.Event) {
	e.Kind = history.Fault
	if err := v.rec.Record(e); err != nil {
		v.problem("record fault: %v", err)
	}
}

// lost records that the commits made from from to to, history times, on
// an old primary were lost in a failover to an asynchronous standby.
func (v *verdict) lost(from, to int64) {
	v.lossWindows = append(v.lossWindows, [2]int64{from, to})
}

// verifyClock checks that every clock-skew fault took: each worker that
// received n of them recorded n settings of its wall clock that it
// observed off by its skew, and n settings back.
func (v *verdict) verifyClock() {
	if err := v.fleet.tail.poll(); err != nil {
		v.problem("read the histories: %v", err)
		return
	}
	for _, p := range v.fleet.procs {
		if p.skews == 0 {
			continue
		}
		var off, back int
		for _, text := range v.fleet.tail.clock[p.Pid] {
			offset, observed, err := parseClockNote(text)
			if err != nil {
				v.problem("worker %s (pid %d): clock-skew note %q: %v", p.node, p.Pid, text, err)
				continue
			}
			if d := observed - offset; d < -5*time.Second || d > 5*time.Second {
				v.problem("worker %s (pid %d): wall clock set %v off but observed %v off", p.node, p.Pid, offset, observed)
			}
			if offset == 0 {
				back++
			} else {
				off++
			}
		}
		// A worker killed right after a heal may not have recorded the
		// setting back.
		setBack := back == p.skews || (p.killed && back == p.skews-1)
		if off != p.skews || !setBack {
			v.problem("worker %s (pid %d) received %d clock-skew faults but recorded %d settings off and %d back: the fault did not take",
				p.node, p.Pid, p.skews, off, back)
		}
	}
}

// parseClockNote parses the text of a worker's clock-skew note after its
// prefix: "offset=D observed=D".
func parseClockNote(text string) (offset, observed time.Duration, err error) {
	o, obs, _ := strings.Cut(text, " ")
	o, ok1 := strings.CutPrefix(o, "offset=")
	obs, ok2 := strings.CutPrefix(obs, "observed=")
	if !ok1 || !ok2 {
		return 0, 0, errors.New(`want "offset=D observed=D"`)
	}
	if offset, err = time.ParseDuration(o); err != nil {
		return 0, 0, err
	}
	observed, err = time.ParseDuration(obs)
	return offset, observed, err
}

// verifyTable checks from the database that every item was processed and
// that the ledger's epochs never went back; items is how many it prints.
func (v *verdict) verifyTable(ctx context.Context, items int) error {
	var left int64
	if err := v.database.db.WithContext(ctx).Model(&Item{}).Where("processed_by = ?", "").Count(&left).Error; err != nil {
		return fmt.Errorf("count unprocessed items: %w", err)
	}
	if left != 0 {
		return fmt.Errorf("%d items unprocessed in the table", left)
	}
	var rows []LedgerRow
	if err := v.database.db.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return fmt.Errorf("read the ledger: %w", err)
	}
	var epoch int64
	for _, row := range rows {
		if row.Epoch < epoch {
			return fmt.Errorf("ledger row %d has epoch %d after epoch %d (holder %s)", row.ID, row.Epoch, epoch, row.Holder)
		}
		epoch = row.Epoch
	}
	v.logf("table: %d items processed, %d ledger rows, last epoch %d", items, len(rows), epoch)
	return nil
}

// reconcileItems reads the histories and the final items table once, and
// records in the runner's history what the table shows that the workers
// could not record (recordKilledItems), the processings a failover lost
// (recordLostItems) and the items of 1..fed whose insert it lost
// (recordGoneItems).
func (v *verdict) reconcileItems(ctx context.Context, fed int) error {
	h, err := history.ReadDir(v.histDir)
	if err != nil {
		return err
	}
	var items []Item
	if err := v.database.db.WithContext(ctx).Order("id").Find(&items).Error; err != nil {
		return fmt.Errorf("read the items: %w", err)
	}
	var slots []SlotRow
	if err := v.database.db.WithContext(ctx).Order("id").Find(&slots).Error; err != nil {
		return fmt.Errorf("read the completed slots: %w", err)
	}
	return errors.Join(v.recordKilledItems(h, items), v.recordLostItems(h, items), v.recordGoneItems(items, fed), v.recordLostSlots(h, slots))
}

// recordGoneItems records, in the runner's history, an ItemGone for each
// item of 1..fed that the final table does not have, after a failover to
// an asynchronous standby: the feeder's insert was acknowledged by the old
// primary after the standby last caught up and lost with it, so no process
// could ever see the item. Nothing deletes items, so without such a
// failover a missing item stays missing, for rule D to report.
func (v *verdict) recordGoneItems(items []Item, fed int) error {
	if len(v.lossWindows) == 0 {
		return nil
	}
	have := make(map[int64]bool, len(items))
	for _, it := range items {
		have[it.ID] = true
	}
	var gone []int64
	for id := int64(1); id <= int64(fed); id++ {
		if have[id] {
			continue
		}
		gone = append(gone, id)
		if err := v.rec.Record(history.Event{Kind: history.ItemGone, Item: id,
			Text: "inserted on the old primary after the standby last caught up; lost in the failover"}); err != nil {
			return fmt.Errorf("record item %d: %w", id, err)
		}
	}
	if len(gone) > 0 {
		v.logf("%d items were inserted on an old primary after its standby last caught up, and lost in the failover (%d-%d)", len(gone), gone[0], gone[len(gone)-1])
	}
	return nil
}

// recordKilledItems records, in the runner's history, the items that the
// table shows processed by a worker killed before it could record them: a
// SIGKILL can fall between a commit and the line that records it. Only
// killed workers' items are taken from the table, so an item that a live
// worker processed without recording is still reported as lost; the
// holder and generation the table names for it are logged, since the
// table is gone once the run ends.
func (v *verdict) recordKilledItems(h history.History, items []Item) error {
	killed := map[int]bool{}
	for _, p := range v.fleet.procs {
		if p.killed {
			killed[p.Pid] = true
		}
	}
	killedHolder := map[string]bool{}
	recorded := map[int64]bool{}
	for _, e := range h.Events {
		if killed[e.PID] {
			killedHolder[e.Process] = true
		}
		if e.Kind == history.ItemProcessed {
			recorded[e.Item] = true
		}
	}
	n := 0
	for _, it := range items {
		if it.ProcessedBy == "" || recorded[it.ID] {
			continue
		}
		if !killedHolder[it.ProcessedBy] {
			v.logf("item %d: the table shows it processed by %s in generation %d, which was not killed, and no history records a processing of it",
				it.ID, it.ProcessedBy, it.Generation)
			continue
		}
		n++
		if err := v.rec.Record(history.Event{Kind: history.ItemProcessed, Item: it.ID, Holder: it.ProcessedBy, Generation: it.Generation,
			Text: "from the table: its holder was killed before it recorded the item"}); err != nil {
			return fmt.Errorf("record item %d: %w", it.ID, err)
		}
	}
	if n > 0 {
		v.logf("%d items processed by killed workers were committed but not recorded; taken from the table", n)
	}
	return nil
}

// recordLostItems records, in the runner's history, an ItemLost for each
// item processing that a failover to an asynchronous standby lost: one
// recorded between the moment the standby last caught up and the
// promotion (a lossWindow), which the final table does not show. Only the
// new primary's table survives, and the item was processed again there.
// A processing outside those windows that the table does not show is left
// as it is, for rule D to report.
func (v *verdict) recordLostItems(h history.History, items []Item) error {
	if len(v.lossWindows) == 0 {
		return nil
	}
	final := make(map[int64]Item, len(items))
	for _, it := range items {
		final[it.ID] = it
	}
	n := 0
	for _, e := range h.Events {
		if e.Kind != history.ItemProcessed || !v.inLossWindow(e.Time) {
			continue
		}
		if it := final[e.Item]; it.ProcessedBy == e.Holder && it.Generation == e.Generation {
			continue
		}
		n++
		if err := v.rec.Record(history.Event{Kind: history.ItemLost, Item: e.Item, Holder: e.Holder, Generation: e.Generation,
			Text: "committed on the old primary after the standby last caught up; lost in the failover"}); err != nil {
			return fmt.Errorf("record item %d: %w", e.Item, err)
		}
	}
	if n > 0 {
		v.logf("%d item processings were committed on an old primary after its standby last caught up, and lost in the failover", n)
	}
	return nil
}

// inLossWindow reports whether the history time t is in a lossWindow.
func (v *verdict) inLossWindow(t int64) bool {
	for _, w := range v.lossWindows {
		if t >= w[0] && t <= w[1] {
			return true
		}
	}
	return false
}

// recordLostSlots records, in the runner's history, a SlotLost for each
// slot completion that a failover to an asynchronous standby lost, as
// recordLostItems does for items: one recorded in a lossWindow whose row
// the final chaos_slots table does not have. The job's state was lost
// with it, so the new primary's holder may complete the slot again.
func (v *verdict) recordLostSlots(h history.History, slots []SlotRow) error {
	if len(v.lossWindows) == 0 {
		return nil
	}
	type key struct {
		slot, epoch int64
		holder      string
	}
	final := make(map[key]bool, len(slots))
	for _, s := range slots {
		final[key{s.Slot, s.Epoch, s.Holder}] = true
	}
	n := 0
	for _, e := range h.Events {
		if e.Kind != history.SlotCompleted || !v.inLossWindow(e.Time) || final[key{e.Slot, e.Epoch, e.Holder}] {
			continue
		}
		n++
		if err := v.rec.Record(history.Event{Kind: history.SlotLost, Lease: e.Lease, Slot: e.Slot, Epoch: e.Epoch, Holder: e.Holder,
			Text: "committed on the old primary after the standby last caught up; lost in the failover"}); err != nil {
			return fmt.Errorf("record lost slot %d: %w", e.Slot, err)
		}
	}
	if n > 0 {
		v.logf("%d slot completions were committed on an old primary after its standby last caught up, and lost in the failover", n)
	}
	return nil
}

// check closes the runner's history, checks every history of the
// dialect against c, and prints the checker's statistics.
func (v *verdict) check(c history.Config) (history.Result, error) {
	_ = v.rec.Close()
	h, err := history.ReadDir(v.histDir)
	if err != nil {
		return history.Result{}, err
	}
	res := history.Check(h, c)
	v.summarize(res)
	return res, nil
}

// summarize prints the checker's statistics of the dialect: slots counts
// the completed slots of the scheduled job and slots_due those rule S2
// required; locks counts every grant term (keyed locks, semaphore slots,
// and the runs of the job's slots); sticky_terms the sticky partitions'
// terms.
func (v *verdict) summarize(res history.Result) {
	st := res.Stats
	v.logf("events=%d lease_terms=%d partition_terms=%d exempt_overlaps=%d accepted_writes=%d rejected_writes=%d items=%d slots=%d slots_due=%d locks=%d sticky_terms=%d truncated=%d",
		st.Events, st.LeaseTerms, st.PartitionTerms, st.ExemptOverlaps, st.AcceptedWrites, st.RejectedWrites, st.ItemsProcessed,
		st.SlotsCompleted, st.SlotsDue, st.GrantTerms, st.StickyTerms, len(st.Truncated))
}
