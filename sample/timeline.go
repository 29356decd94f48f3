package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/workers"
)

// Timeline writing.
const (
	// timelineBuffer is the host subscription's buffer. Delivery never
	// blocks a worker: when the writer falls this far behind, the host
	// drops events and says how many on the next one.
	timelineBuffer = 256
	// timelineWriteTimeout bounds each timeline insert.
	timelineWriteTimeout = 5 * time.Second
	// timelineDrain bounds the writing of the events still buffered when
	// the host stops.
	timelineDrain = 5 * time.Second
)

// timeline writes the host's events into sample_timeline from its own
// goroutine, so a slow database never holds up a worker.
type timeline struct {
	s    *service
	ctx  context.Context // ends timelineDrain after the host stopped
	done chan struct{}
}

// followTimeline starts writing the events of events until the channel is
// closed (when Host.Run returns). ctx bounds the writes.
func followTimeline(ctx context.Context, s *service, events <-chan workers.Event) *timeline {
	t := &timeline{s: s, ctx: ctx, done: make(chan struct{})}
	go t.loop(events)
	return t
}

func (t *timeline) loop(events <-chan workers.Event) {
	defer close(t.done)
	warned := false
	for ev := range events {
		row, ok := t.s.eventRow(ev)
		if !ok {
			continue
		}
		if err := t.s.write(t.ctx, row); err != nil && !warned {
			// Once: a database that is down would otherwise log every event.
			t.s.log.Warn("writing the timeline failed; events are logged only", zap.Error(err))
			warned = true
		}
	}
}

// write inserts one timeline row, bounded by timelineWriteTimeout.
func (s *service) write(ctx context.Context, row timelineRow) error {
	ctx, cancel := context.WithTimeout(ctx, timelineWriteTimeout)
	defer cancel()
	return s.db.WithContext(ctx).Create(&row).Error
}

// eventRow turns a host event into a timeline row; ok is false for events
// the timeline does not record.
func (s *service) eventRow(ev workers.Event) (timelineRow, bool) {
	var detail string
	row := s.row(ev.Kind.String(), ev.Worker, "")
	row.AtUS = ev.Time.UnixMicro()
	row.Epoch = ev.Epoch
	switch ev.Kind {
	case workers.EventStartedLeading:
		detail = ev.Key
	case workers.EventStoppedLeading:
		detail = ev.Key + ": " + stopReason(ev.Err)
	case workers.EventAssignmentStarted, workers.EventAssignmentStopped:
		detail = ev.Key
		if a := ev.Assignment; a != nil {
			row.Generation, row.Idx, row.Cnt = a.Generation, a.Index, a.Count
			detail = fmt.Sprintf("%s: index %d of %d", ev.Key, a.Index, a.Count)
		}
		if ev.Kind == workers.EventAssignmentStopped {
			detail += ": " + stopReason(ev.Err)
		}
	case workers.EventWorkerError, workers.EventShutdownOverrun:
		detail = fmt.Sprint(ev.Err)
	default:
		return timelineRow{}, false
	}
	if ev.Dropped > 0 {
		detail += fmt.Sprintf(" (%d earlier events dropped)", ev.Dropped)
	}
	if len(detail) > maxDetail {
		detail = detail[:maxDetail]
	}
	row.Detail = detail
	return row, true
}

// stopReason says in a word or two why a term ended.
func stopReason(err error) string {
	switch {
	case err == nil:
		return "ended"
	case errors.Is(err, coordination.ErrReleased):
		return "released"
	case errors.Is(err, coordination.ErrClosed):
		return "shutting down"
	case errors.Is(err, coordination.ErrLeaseLost):
		return "lease lost"
	}
	return err.Error()
}
