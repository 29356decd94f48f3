package workers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/workers"
)

// TestSticky runs sticky partitioned workers on every database.
func TestSticky(t *testing.T) {
	runCases(t, []workerCase{{"JoinMovesOnlyWhatBalanceRequires", caseStickyJoin}})
}

// stickyItem is a row a sticky worker's partition commits, fenced by the
// partition.
type stickyItem struct {
	ID        int64 `gorm:"primaryKey;autoIncrement"`
	Partition int
	Holder    string `gorm:"size:100"`
	Since     int64
}

func (stickyItem) TableName() string { return "sticky_items" }

// stickyRuns records the partitions each host works on.
type stickyRuns struct {
	mu      sync.Mutex
	running map[int]string // partition -> host working on it
	twice   []string       // partitions seen run by two hosts at once
	panics  map[int]bool   // partitions whose first call panicked
}

func (s *stickyRuns) fn(db *gorm.DB, host string) coordination.AssignmentFunc {
	return func(ctx context.Context, pt coordination.Assignment) error {
		s.mu.Lock()
		if other, ok := s.running[pt.Index]; ok && other != host {
			s.twice = append(s.twice, fmt.Sprintf("partition %d on %s and %s", pt.Index, other, host))
		}
		s.running[pt.Index] = host
		first := pt.Index == 0 && !s.panics[0]
		s.panics[0] = s.panics[0] || first
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if s.running[pt.Index] == host {
				delete(s.running, pt.Index)
			}
			s.mu.Unlock()
		}()
		if first {
			panic("first call of partition 0")
		}
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := pt.Fence(tx); err != nil {
				return err
			}
			return tx.Create(&stickyItem{Partition: pt.Index, Holder: host, Since: pt.Generation}).Error
		})
		if err != nil && ctx.Err() == nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
}

// partitionsOf waits until r's status shows it working on n partitions,
// and returns them.
func partitionsOf(t *testing.T, r *running, worker string, n int) map[int]int64 {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last []coordination.Assignment
	for time.Now().Before(deadline) {
		st, err := r.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Pools {
			if p.Worker != worker {
				continue
			}
			last = p.Assignments
			if len(p.Assignments) == n {
				out := make(map[int]int64, n)
				for _, pt := range p.Assignments {
					out[pt.Index] = pt.Generation
				}
				return out
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: worker %q works on %d partitions (%v), want %d within %v", r.name, worker, len(last), last, n, wait)
	return nil
}

// caseStickyJoin: one host works on all 8 partitions (partition 0's first
// call panics and is restarted); a second joins and takes 4, each moved
// one stopped on the first before it starts on the second; the 4 that
// stay keep running, and every partition commits fenced rows.
func caseStickyJoin(t *testing.T, b *bundle) {
	const parts = 8
	if err := b.db.AutoMigrate(&stickyItem{}); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.Coordination.TTL = 3 * time.Second
	runs := &stickyRuns{running: map[int]string{}, panics: map[int]bool{}}
	scfg := coordination.PoolConfig{Partitions: parts}
	a := startHost(t, b.db, "node-a", "eu-1", cfg, workers.GlobalPartitioned("orders", runs.fn(b.db, "node-a"), scfg))
	ev := recvEvent(t, a.events, "the panic of partition 0", hostEvent(workers.EventWorkerError, "orders"))
	var pe *coordination.PanicError
	if !errors.As(ev.Err, &pe) || !strings.Contains(ev.Err.Error(), "partition 0") {
		t.Errorf("worker error %v, want a panic of partition 0", ev.Err)
	}
	before := partitionsOf(t, a, "orders", parts)

	bh := startHost(t, b.db, "node-b", "eu-2", cfg, workers.GlobalPartitioned("orders", runs.fn(b.db, "node-b"), scfg))
	gained := partitionsOf(t, bh, "orders", parts/2)
	kept := partitionsOf(t, a, "orders", parts/2)
	for p, since := range kept {
		if before[p] != since {
			t.Errorf("partition %d stayed on node-a but its work restarted (since %d, then %d)", p, before[p], since)
		}
		if _, ok := gained[p]; ok {
			t.Errorf("partition %d is on both hosts", p)
		}
	}
	stopped := map[int]bool{}
	for _, ev := range pending(a.events) {
		if ev.Kind == workers.EventAssignmentStopped && ev.Worker == "orders" {
			if ev.Assignment == nil || ev.Err == nil {
				t.Errorf("assignment-stopped event %+v: want its partition and the cause", ev)
				continue
			}
			stopped[ev.Assignment.Index] = true
		}
	}
	for p := range gained {
		if !stopped[p] {
			t.Errorf("partition %d moved to node-b without an assignment-stopped event on node-a (stopped: %v)", p, stopped)
		}
	}
	for p := range kept {
		if stopped[p] {
			t.Errorf("partition %d stayed on node-a but was stopped", p)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		var n int64
		if err := b.db.Model(&stickyItem{}).Where("holder = ?", "node-b").Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n >= parts/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node-b committed %d fenced rows, want one per gained partition (%d)", n, parts/2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	runs.mu.Lock()
	defer runs.mu.Unlock()
	if len(runs.twice) > 0 {
		t.Errorf("partitions worked on twice at once: %v", runs.twice)
	}
}
