package main

import (
	"strings"
	"testing"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/status"
)

// TestWatchReportsLocks: watch reports a keyed lock taken and a semaphore
// slot given up as it reports leases, by namespace or semaphore and key.
func TestWatchReportsLocks(t *testing.T) {
	held := func(key string, epoch int64) coordination.LeaseInfo {
		return coordination.LeaseInfo{Key: key, Holder: "node-a/eu/1", Epoch: epoch, Live: true}
	}
	prev := status.Snapshot{Locks: []status.Locks{
		{Key: "global/jobs", Holders: []coordination.LeaseInfo{}},
		{Key: "global/limit", Slots: 2, Holders: []coordination.LeaseInfo{held("1", 4)}},
	}}
	now := status.Snapshot{Locks: []status.Locks{
		{Key: "global/jobs", Holders: []coordination.LeaseInfo{held("order|7", 3)}},
		{Key: "global/limit", Slots: 2, Holders: []coordination.LeaseInfo{}},
	}}
	c := diff(prev, now)
	var b strings.Builder
	writeChanges(&b, prev, now, c)
	out := b.String()
	for _, want := range []string{"new   lock global/jobs order|7  holder node-a/eu/1  epoch 3", "gone  slot global/limit 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("watch's changes lack %q:\n%s", want, out)
		}
	}
}

// TestWatchReportsProcesses: watch reports a process whose session
// appears, one whose session expires and one whose row is gone.
func TestWatchReportsProcesses(t *testing.T) {
	sess := func(holder string, live bool) coordination.SessionInfo {
		return coordination.SessionInfo{Holder: holder, Live: live}
	}
	prev := status.Snapshot{Sessions: []coordination.SessionInfo{sess("node-a/eu/1", true), sess("node-b/eu/2", true)}}
	now := status.Snapshot{Sessions: []coordination.SessionInfo{sess("node-a/eu/1", false), sess("node-c/eu/3", true)}}
	c := diff(prev, now)
	var b strings.Builder
	writeChanges(&b, prev, now, c)
	out := b.String()
	for _, want := range []string{"expired  process node-a/eu/1  live no", "new      process node-c/eu/3  live yes", "gone     process node-b/eu/2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("watch's changes lack %q:\n%s", want, out)
		}
	}
	if c := diff(now, now); !c.empty() {
		t.Errorf("no change between a snapshot and itself, yet %+v", c)
	}
}
