package coordination

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/backoff"
	"github.com/leasehold/leasehold/internal/wake"
)

// Wake-ups make a graceful handoff immediate: a release, and a change to a
// pool's rows, is announced to the other processes on the same tables
// through the transport wakeTransport picks. A process woken for a lease
// it campaigns for attempts it at once, one woken for a lease it only
// observes runs a round, and one woken for a pool it runs reads the pool.
// The acquire or the read decides as on a poll, so a lost or spurious
// wake-up only moves an attempt, and polling goes on regardless.

// NotificationTransport reads PostgreSQL's notifications off the driver's
// connections, for a process that listens through LISTEN
// (Config.Notifications: pgnotify.New() for pgx). The coordinator lends it
// a connection of its pool that listens, and runs the listening: when to
// wait, the probe behind a pooler, the retries.
type NotificationTransport interface {
	// WaitForNotification returns the payload of the next notification
	// on conn, or the error that ended the wait. With ctx already done it
	// returns one the driver has received, without reading conn, or an
	// error.
	WaitForNotification(ctx context.Context, conn *sql.Conn) (payload string, err error)
	// ConnClosed reports, without a round trip, whether the driver has
	// closed conn.
	ConnClosed(conn *sql.Conn) bool
}

// wakeTransport picks the transport of the wake-ups on db for holder: nil
// where there is none, or where they are turned off.
//
// On PostgreSQL every process announces through both transports, and
// listens on one: the release statements NOTIFY at commit, and a peer
// transport sends the datagrams. Without Config.Notifications a process
// listens for the datagrams; with pgnotify it listens through LISTEN and
// only sends them. So processes with and without pgnotify on the same
// tables wake each other.
func wakeTransport(db wake.Database, cfg Config, holder string) wake.Transport {
	if cfg.DisableNotifications || db == nil {
		return nil
	}
	switch db.Means() {
	case wake.Through:
		var through wake.Transport = notifier{db}
		if cfg.Notifications != nil {
			through = wake.NewListener(db, cfg.Notifications)
		}
		peer := peerTransport(db, cfg, holder)
		switch {
		case peer == nil:
			return through
		case cfg.Notifications == nil:
			return alsoNotify{peer, through}
		}
		return alsoNotify{through, peer}
	case wake.Sockets:
		return wake.NewSocket(db)
	}
	return peerTransport(db, cfg, holder)
}

// alsoNotify listens on its Transport and announces through it and also.
type alsoNotify struct {
	wake.Transport
	also wake.Transport
}

func (a alsoNotify) Notify(ctx context.Context, names []string) error {
	return errors.Join(a.Transport.Notify(ctx, names), a.also.Notify(ctx, names))
}

// notifier announces through the database (PostgreSQL's NOTIFY); it does
// not listen.
type notifier struct{ db wake.Database }

func (notifier) Listen(context.Context, func([]string), func()) error {
	return fmt.Errorf("%w: this store keeps no session rows for peer wake-ups", wake.ErrNoWakeups)
}

func (n notifier) Notify(ctx context.Context, names []string) error { return n.db.Notify(ctx, names) }

// peerTransport is the peer transport of db (wake.Peer) for holder, where
// its store keeps the rows that advertise the processes; nil where it
// does not.
func peerTransport(db wake.Database, cfg Config, holder string) wake.Transport {
	dir, ok := db.(wake.Directory)
	if !ok {
		return nil
	}
	return wake.NewPeer(db, dir, cfg.peerConfig(holder))
}

// waker owns the wake-ups of a process: the transport, listening on it
// and retrying, whether it listens, and handing each wake-up to the loops
// concerned (deliver: the campaigner's and the pools'). Run starts its
// listenLoop; the pool members notify through it.
type waker struct {
	*shared
	transport wake.Transport // nil where there is none
	dialect   string         // named in the log where there is none
	deliver   []func(names []string)

	// listening is true while wake-ups arrive; listenChanged (buffered 1)
	// is signalled after each change of listening's state has been logged.
	listening     atomic.Bool
	listenChanged chan struct{}
}

// newWaker returns the wake-ups of a process on st, nil st for a
// coordinator built only for its Admin (tests).
func newWaker(sh *shared, st wakeStore, deliver ...func(names []string)) *waker {
	w := &waker{shared: sh, deliver: deliver, listenChanged: make(chan struct{}, 1)}
	if st != nil {
		w.transport = wakeTransport(st.Wakeups(), sh.cfg, sh.holder)
		w.dialect = st.Dialect()
	}
	return w
}

// listenLoop listens for wake-ups until ctx is done.
func (w *waker) listenLoop(ctx context.Context) {
	if w.cfg.DisableNotifications {
		return
	}
	failed := false
	err := w.listen(ctx, func(err error) {
		defer poke(w.listenChanged)
		if err == nil {
			w.listening.Store(true)
			w.log.Info("listening for release notifications: followers take over a released lease at once")
			failed = false
			return
		}
		w.listening.Store(false)
		if failed {
			w.log.Debug("release notifications still unavailable", zap.Error(err))
			return
		}
		failed = true
		w.log.Warn("release notifications unavailable; followers poll every RetryInterval until they work again",
			zap.Duration("retry_interval", w.cfg.RetryInterval), zap.Error(err))
	})
	w.listening.Store(false)
	switch {
	case errors.Is(err, wake.ErrNoWakeups):
		w.log.Info("no release notifications; followers poll every RetryInterval",
			zap.String("dialect", w.dialect), zap.Duration("retry_interval", w.cfg.RetryInterval), zap.Error(err))
	case err != nil:
		w.log.Warn("release notifications unavailable; followers poll every RetryInterval", zap.Error(err))
	}
	poke(w.listenChanged)
}

// listen delivers the wake-ups to wakeFor until ctx is done, and then
// returns nil. Each time listening starts, it calls wakeFor(nil), since
// wake-ups may have been missed; state reports every start and stop. It
// retries a failed Listen from RetryInterval doubling up to a minute, and
// returns the reason at once where listening cannot work (wake.ErrNoWakeups,
// or an error marked wake.Final).
func (w *waker) listen(ctx context.Context, state func(err error)) error {
	if w.transport == nil {
		return wake.ErrNoWakeups
	}
	retry := backoff.Retry{Policy: backoff.Policy{Interval: w.cfg.RetryInterval, Max: time.Minute}}
	for {
		err := w.transport.Listen(ctx, w.wakeFor, func() {
			retry.Succeeded()
			state(nil)
			w.wakeFor(nil)
		})
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, wake.ErrNoWakeups) || wake.IsFinal(err) {
			return err
		}
		if err == nil {
			err = errors.New("leasehold: listening ended")
		}
		state(err)
		wait, _ := retry.Failed()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// wakeFor hands a wake-up to the loops concerned: the campaign loop
// attempts the named leases it campaigns for at once, and runs a round
// for those only observed; each pool whose rows are named reads them;
// every loop runs a full round when names is nil.
func (w *waker) wakeFor(names []string) {
	for _, deliver := range w.deliver {
		deliver(names)
	}
}

// notify announces a change to the named rows (a pool's) to the other
// processes. It is a hint: a failure is only logged.
func (w *waker) notify(ctx context.Context, names ...string) {
	if w.transport == nil {
		return
	}
	if err := w.transport.Notify(ctx, names); err != nil && ctx.Err() == nil {
		w.log.Debug("could not send a wake-up; the others notice at their next poll", zap.Strings("leases", names), zap.Error(err))
	}
}
