package membership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// A sticky pool (Config.Partitions > 0) runs the index/count protocol per
// partition, on the generation's PartitionMap:
//
//   - a member publishes the next generation when Balance over the
//     members taking part differs from the map (PartitionMap.Next);
//   - on seeing a generation, a member stops the work of each partition
//     the map no longer gives it with the Since that work started with,
//     waits for it to return, and then acknowledges; the other partitions
//     run on;
//   - a member starts a partition of its own only when each live member
//     of its Prev has acknowledged its Since (an expired one has passed
//     its trust deadline).
//
// So no partition is run by two members at overlapping times, and work
// identified by (owner, Since) runs only while every generation its
// member saw keeps that pair.

// StaticPrefix starts the member id of a static member; instance ids never
// contain ':', so a static id never equals a dynamic one.
const StaticPrefix = "s:"

// PartitionAssignment is one partition of a sticky pool given to this
// member.
type PartitionAssignment struct {
	Partition  int    // 0 <= Partition < Count
	Count      int    // the pool's number of partitions
	Since      int64  // the generation from which this member owns it
	Generation int64  // the generation in which the work starts
	Member     string // this member's id
	Lease      Lease  // the membership the work rides on
}

// PartitionWorker runs the work of a sticky pool's partitions.
type PartitionWorker interface {
	// StartPartition is called when the member starts working on a
	// partition, and returns the work, which the member runs in a
	// goroutine under a context that ends when the partition moves, the
	// membership ends or Step's context does. The member waits for it to
	// return before it acknowledges the generation that moved it.
	StartPartition(a PartitionAssignment) (run func(ctx context.Context))
	// PartitionStopped is called once the work of a partition has
	// returned after the partition moved or the membership was lost; not
	// on Leave.
	PartitionStopped(partition int)
}

// errMoved is the cause of a partition's work context ended by a
// generation that moved the partition to another member.
var errMoved = errors.New("leasehold: pool partition moved to another member")

// stickyRound is round for a sticky pool.
func (m *Member) stickyRound(ctx, opCtx context.Context) (settled, again bool) {
	st, err := Read(opCtx, m.cfg.Store, m.cfg.Pool, m.cfg.Rows)
	if err != nil {
		m.fail("read", err)
		return false, false
	}
	now := m.cfg.Now()
	m.noteExpiry(st, now)
	m.gen = st.Generation
	m.cfg.Reporter.Read(st.Generation, len(st.List))
	cur, err := m.currentMap(st)
	if err != nil {
		m.fail("read", err)
		return false, false
	}

	// Revoke: stop the partitions that moved, then acknowledge.
	if !m.acknowledgeMap(opCtx, st.Generation, cur, false) {
		return false, false
	}
	if st.heldOff() {
		return false, false
	}

	// Publish when the balance over the members taking part differs.
	live := st.live()
	live[m.me] = Row{ID: m.me, Holder: m.cfg.Holder, Ack: m.ack, Live: true}
	owners := Balance(cur.Owner, m.takingPart(st, cur, live, now))
	if !slices.Equal(owners, cur.Owner) || st.Generation < st.Floor {
		published := max(st.Generation, st.Floor) + 1
		next := cur.Next(owners, published, acksOf(live))
		ok, err := m.cfg.Store.Publish(opCtx, m.cfg.Rows.Generation, st.Generation, EncodeMap(next))
		switch {
		case err != nil:
			m.fail("publish", err)
			return false, false
		case !ok:
			return false, true // another member published first
		}
		m.cfg.Log.Info("published generation", zap.Int64("generation", published),
			zap.Strings("members", next.Members()), zap.Int("moved", moves(cur.Owner, owners)))
		m.acknowledgeMap(opCtx, published, next, true)
		m.pruneDead(opCtx)
		return false, false
	}

	// Assign: start each partition of this member that does not run yet
	// once its Prev has released it.
	var start []int
	waiting := false
	for p, o := range cur.Owner {
		if o != m.me || m.parts[p] != nil {
			continue
		}
		if !released(cur, p, live) {
			waiting = true
			continue
		}
		start = append(start, p)
	}
	for _, p := range start {
		m.startPartition(ctx, PartitionAssignment{
			Partition: p, Count: len(cur.Owner), Since: cur.Since[p], Generation: st.Generation,
			Member: m.me, Lease: m.mem,
		})
	}
	if len(start) > 0 {
		m.cfg.Log.Info("partitions started", zap.Int64("generation", st.Generation), zap.Ints("partitions", start),
			zap.Int("owned", len(m.parts)))
	}
	return !waiting, false
}

// released reports whether partition p of pm may start: every member of
// its Prev whose row is live has acknowledged its Since.
func released(pm PartitionMap, p int, live map[string]Row) bool {
	for _, id := range pm.Prev[p] {
		if mb, ok := live[id]; ok && id != pm.Owner[p] && mb.Ack < pm.Since[p] {
			return false
		}
	}
	return true
}

// acksOf returns the acknowledgement of each live member, by id.
func acksOf(live map[string]Row) map[string]int64 {
	acks := make(map[string]int64, len(live))
	for id, mb := range live {
		acks[id] = mb.Ack
	}
	return acks
}

// currentMap returns the partition map of the generation st read. A row
// with no map of this pool's size counts as a map without owners, unless
// a member of it is live: then the error wraps ErrMode.
func (m *Member) currentMap(st State) (PartitionMap, error) {
	if st.Map != nil && len(st.Map.Owner) == m.cfg.Partitions {
		return *st.Map, nil
	}
	if id, ok := st.liveListed(m.me); ok {
		how := "by index and count"
		if st.Map != nil {
			how = fmt.Sprintf("with %d partitions", len(st.Map.Owner))
		}
		return PartitionMap{}, fmt.Errorf("%w: the pool is run %s and its member %s is live; this member runs it with %d partitions",
			ErrMode, how, id, m.cfg.Partitions)
	}
	return NewMap(m.cfg.Partitions), nil
}

// mayJoinMode reads the pool before joining it, and reports false, having
// reported ErrMode, when live members run it in another mode, whose
// rebalances this member's row would stall. A failed read leaves the
// check to the rounds.
func (m *Member) mayJoinMode(ctx context.Context) bool {
	st, err := Read(ctx, m.cfg.Store, m.cfg.Pool, m.cfg.Rows)
	if err != nil {
		return true
	}
	if m.cfg.Partitions == 0 {
		if id, ok := st.liveListed(""); ok && st.Map != nil {
			m.fail("join", fmt.Errorf("%w: the pool has %d partitions and its member %s is live; this member runs it by index and count",
				ErrMode, len(st.Map.Owner), id))
			return false
		}
		return true
	}
	if _, err := m.currentMap(st); err != nil {
		m.fail("join", err)
		return false
	}
	return true
}

// takingPart returns the members the partitions are spread over: the live
// ones, and the static owners in cur whose row stopped being live less
// than AwayGrace ago. It notes when the first of those drops out.
func (m *Member) takingPart(st State, cur PartitionMap, live map[string]Row, readEnd time.Time) []string {
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	owners := cur.Members()
	for _, mb := range st.Members {
		if mb.Live || mb.ExpiresAt.IsZero() || !strings.HasPrefix(mb.ID, StaticPrefix) {
			continue
		}
		if _, ok := slices.BinarySearch(owners, mb.ID); !ok {
			continue
		}
		until := mb.ExpiresAt.Add(m.cfg.AwayGrace)
		if !until.After(st.DBNow) {
			continue
		}
		ids = append(ids, mb.ID)
		if at := readEnd.Add(until.Sub(st.DBNow) + ExpiryMargin); m.expiry.IsZero() || at.Before(m.expiry) {
			m.expiry = at
		}
	}
	return ids
}

// acknowledgeMap stops the work of every partition that pm does not give
// this member with the Since it started with, waits for it, and then
// acknowledges gen, waking every member if it published gen and otherwise
// only the members waiting for its acknowledgement.
func (m *Member) acknowledgeMap(ctx context.Context, gen int64, pm PartitionMap, published bool) bool {
	m.stopParts(func(p int, w *work) bool { return pm.Owner[p] != m.me || pm.Since[p] != w.gen }, errMoved)
	return m.recordAck(ctx, gen, "", func() {
		if published {
			m.cfg.Notifier.Notify(ctx, m.mem.Key())
			return
		}
		for _, id := range waitingFor(pm, m.me) {
			m.cfg.Notifier.Notify(ctx, m.cfg.Rows.Wake(id))
		}
	})
}

// waitingFor returns the owners, other than me, of the partitions of pm
// whose Prev lists me: the members that wait for me to acknowledge pm's
// generation before they start them, once each, in order.
func waitingFor(pm PartitionMap, me string) []string {
	var ids []string
	for p, prev := range pm.Prev {
		if o := pm.Owner[p]; o != "" && o != me && slices.Contains(prev, me) && !slices.Contains(ids, o) {
			ids = append(ids, o)
		}
	}
	slices.Sort(ids)
	return ids
}

// startPartition runs the work of one partition in its own goroutine,
// under a context that ends with the membership's term, with ctx, or
// when the member stops it.
func (m *Member) startPartition(ctx context.Context, a PartitionAssignment) {
	wctx, cancel := context.WithCancelCause(a.Lease.Context())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	w := &work{gen: a.Since, cancel: cancel, done: make(chan struct{})}
	if m.parts == nil {
		m.parts = make(map[int]*work)
	}
	m.parts[a.Partition] = w
	run := m.cfg.Parts.StartPartition(a)
	go func() {
		defer close(w.done)
		defer stop()
		run(wctx)
	}()
}

// stopParts cancels the work of the partitions that match (all for a nil
// match) and waits for it, however long that takes, as stopWork does.
func (m *Member) stopParts(match func(p int, w *work) bool, cause error) {
	var stopped []int
	for p, w := range m.parts {
		if match == nil || match(p, w) {
			w.cancel(cause)
			stopped = append(stopped, p)
		}
	}
	slices.Sort(stopped)
	for _, p := range stopped {
		m.waitWork(m.parts[p], 0)
		delete(m.parts, p)
		m.cfg.Parts.PartitionStopped(p)
	}
	if len(stopped) > 0 {
		m.cfg.Log.Info("partitions stopped", zap.Ints("partitions", stopped), zap.Error(cause))
	}
}

// leaveParts stops the work of every partition on Leave, waiting at most
// ShutdownTimeout in all. It reports false, having reported it, when some
// work did not return in time.
func (m *Member) leaveParts(cause error) bool {
	for _, w := range m.parts {
		w.cancel(cause)
	}
	deadline := time.NewTimer(m.cfg.ShutdownTimeout)
	defer deadline.Stop()
	for p, w := range m.parts {
		select {
		case <-w.done:
			delete(m.parts, p)
		case <-deadline.C:
			m.cfg.Log.Error("pool partition work did not return within ShutdownTimeout; membership is not released and expires after TTL",
				zap.Int("partition", p), zap.Duration("shutdown_timeout", m.cfg.ShutdownTimeout))
			m.cfg.Reporter.Failed(fmt.Errorf("%w: pool %q partition %d work did not return within ShutdownTimeout", cause, m.cfg.Pool, p))
			return false
		}
	}
	return true
}

// leaveMap publishes, after a dynamic member released its membership on
// Leave, the generation that spreads its partitions over the others. A
// static member publishes nothing: its partitions wait AwayGrace for it
// to come back.
func (m *Member) leaveMap(ctx context.Context) {
	if m.cfg.Static {
		m.cfg.Log.Info("left pool; partitions kept for a restart", zap.Duration("away_grace", m.cfg.AwayGrace))
		return
	}
	st, err := Read(ctx, m.cfg.Store, m.cfg.Pool, m.cfg.Rows)
	if err != nil || st.Map == nil || len(st.Map.Owner) != m.cfg.Partitions || !slices.Contains(st.List, m.me) {
		return
	}
	live := st.live()
	delete(live, m.me)
	owners := Balance(st.Map.Owner, m.takingPart(st, *st.Map, live, m.cfg.Now()))
	published := max(st.Generation, st.Floor) + 1
	next := st.Map.Next(owners, published, acksOf(live))
	if ok, err := m.cfg.Store.Publish(ctx, m.cfg.Rows.Generation, st.Generation, EncodeMap(next)); err == nil && ok {
		m.cfg.Log.Info("left pool", zap.Int64("generation", published), zap.Strings("members", next.Members()))
	}
}

// moves counts the partitions whose owner differs between a and b.
func moves(a, b []string) int {
	n := 0
	for p := range a {
		if a[p] != b[p] {
			n++
		}
	}
	return n
}
