package coordination

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// adminStore is what an Admin runs on the database: reads of every row and
// session, the resign request, the fencing check, and the schema check
// that explains a failed request.
type adminStore interface {
	List(ctx context.Context, prefix string) ([]store.Row, error)
	ListSessions(ctx context.Context) ([]store.SessionRow, error)
	RequestResign(ctx context.Context, name, prefer string, check func(store.Row) (time.Duration, error)) (row store.Row, found, notified bool, err error)
	Fence(tx *gorm.DB, name string) (store.Row, bool, error)
	CheckSchema(ctx context.Context) error
}

// Admin reads and administers the coordination tables of one database,
// from any process. It holds no lease, writes no session and never
// migrates; each method is one or two statements. NewAdmin builds one;
// Coordinator.Admin returns a coordinator's. It is safe for concurrent use.
type Admin struct {
	store  adminStore
	log    *zap.Logger
	tracer trace.Tracer
	// ttl is the holder's TTL when a lease row does not show it: the
	// coordinator's TTL, or the default.
	ttl time.Duration
}

// NewAdmin returns an admin client on db's coordination tables, using
// only cfg's TablePrefix, Logger or Slog, and TracerProvider. It does no I/O; a nil db, an invalid
// TablePrefix or a database leasehold does not support gives an error
// wrapping ErrInvalidConfig.
func NewAdmin(db *gorm.DB, cfg Config) (*Admin, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: db is nil", ErrInvalidConfig)
	}
	if cfg.Logger != nil && cfg.Slog != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, bothLoggers)
	}
	prefix := cmp.Or(cfg.TablePrefix, store.DefaultTablePrefix)
	if err := store.ValidateTablePrefix(prefix); err != nil {
		return nil, invalid(err)
	}
	st, err := store.Open(db, store.Options{TablePrefix: prefix})
	if err != nil {
		return nil, invalid(err)
	}
	d := Config{Logger: cfg.Logger, Slog: cfg.Slog, TracerProvider: cfg.TracerProvider}.withDefaults()
	return &Admin{store: st, log: d.Logger.Named("leasehold"), tracer: newTracer(d.TracerProvider), ttl: defaultTTL}, nil
}

// Admin returns an admin client on the coordinator's database and tables,
// sharing its connections and log identity, whether or not Run runs.
func (c *Coordinator) Admin() *Admin { return c.admin }

// leaseInfo is the lease of row r.
func leaseInfo(r store.Row) LeaseInfo {
	return LeaseInfo{
		Key: r.Name, Holder: r.Holder, Epoch: r.Epoch,
		AcquiredAt: r.AcquiredAt, RenewedAt: r.RenewedAt, ExpiresAt: r.ExpiresAt, DatabaseTime: r.Now,
		Live: r.Live(), Data: r.Data,
	}
}

// Leases lists every row of the lease table (package doc, "Names and
// rows"), ordered by name, by the database clock, in one statement.
func (a *Admin) Leases(ctx context.Context) ([]LeaseInfo, error) {
	rows, err := a.store.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("coordination: list leases: %w", err)
	}
	out := make([]LeaseInfo, len(rows))
	for i, r := range rows {
		out[i] = leaseInfo(r)
	}
	return out, nil
}

// Pools reads every pool in the database (both scopes), ordered by key:
// generation, the member list of that generation and every member row
// (live or not), by the database clock. It costs one statement.
func (a *Admin) Pools(ctx context.Context) ([]PoolState, error) {
	rows, err := a.store.List(ctx, "pool"+keySep)
	if err != nil {
		return nil, fmt.Errorf("coordination: list pools: %w", err)
	}
	byKey := make(map[string][]store.Row)
	for _, r := range rows {
		key, ok := poolKeyOf(r.Name)
		if !ok {
			continue
		}
		byKey[key] = append(byKey[key], r)
	}
	out := make([]PoolState, 0, len(byKey))
	for key, rs := range byKey {
		out = append(out, poolStateOf(key, poolRowsFor(key), rs))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// preferWindowTTLs is how long, in TTLs of the holder (the TTL its session
// is renewed with), a preferred holder has the lease reserved for it.
const preferWindowTTLs = 2

// maxPreferredHolderLen bounds a preferred holder: it is stored in a
// column as wide as a holder string.
const maxPreferredHolderLen = 255

// Resign asks the holder of the lease key (as LeaseInfo.Key reports it) to
// hand over its current term, and returns the lease as it was when the
// request was recorded. At its next renewal the holder ends that term,
// never a later one, with ErrResigned; the lease is released once the work
// under it has returned, and the holder holds off taking it again for one
// TTL or until it sees another holder.
//
// preferred, when not "", names the process to take the lease next (its
// holder string, node or instance id; CheckPreferred checks one answers):
// no other takes it until twice the holder's TTL after the request, by the
// database clock. It is at most 255 bytes of printable ASCII and must not
// name the current holder (ErrInvalidConfig otherwise).
//
// Errors wrap ErrNotHeld when the lease has no row or no live holder, and
// ErrSchemaMissing on a schema older than this build. Only elections
// resign: a key with '|' (a pool membership, keyed lock or semaphore slot)
// is refused; stop a member's Pool.Run, or let its health check fail.
func (a *Admin) Resign(ctx context.Context, key, preferred string) (LeaseInfo, error) {
	name, pref := key, preferred
	switch {
	case strings.Contains(name, keySep):
		return LeaseInfo{}, fmt.Errorf("coordination: resign %q: only an election's lease can be asked to resign; %s", name, notResignable(name))
	case len(pref) > maxPreferredHolderLen:
		return LeaseInfo{}, fmt.Errorf("%w: preferred holder %q is %d bytes long; the limit is %d",
			ErrInvalidConfig, pref, len(pref), maxPreferredHolderLen)
	case strings.IndexFunc(pref, func(r rune) bool { return r < ' ' || r > '~' }) >= 0:
		return LeaseInfo{}, fmt.Errorf("%w: preferred holder %q has a byte outside printable ASCII, which no holder string has",
			ErrInvalidConfig, pref)
	}
	refused := false
	row, found, notified, err := a.store.RequestResign(ctx, name, pref, func(r store.Row) (window time.Duration, err error) {
		defer func() { refused = err != nil }()
		switch {
		case !r.Live():
			return 0, notHeld(r)
		case r.Session == "":
			return 0, fmt.Errorf("lease %q is held by %q, a build of leasehold without sessions, which cannot be asked to resign",
				r.Name, r.Holder)
		case pref != "" && store.Prefers(pref, r.Holder):
			return 0, fmt.Errorf("%w: preferred holder %q names the current holder %q", ErrInvalidConfig, pref, r.Holder)
		}
		return preferWindowTTLs * holderTTL(r, a.ttl), nil
	})
	switch {
	case err != nil && !refused && ctx.Err() == nil:
		// On an old schema, say how to migrate rather than which column
		// is missing.
		if serr := a.store.CheckSchema(ctx); errors.Is(serr, ErrSchemaMissing) {
			err = serr
		}
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w", name, err)
	case err != nil:
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w", name, err)
	case !found:
		return LeaseInfo{}, fmt.Errorf("%w: %q has no lease row (list the leases with `leasehold status` or Admin.Leases)",
			ErrNotHeld, name)
	case !notified:
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w: the session of its holder %q ended meanwhile; nothing to resign",
			name, ErrNotHeld, row.Holder)
	}
	a.log.Info("requested resign", zap.String("lease", name), zap.String("holder", row.Holder),
		zap.Int64("epoch", row.Epoch), zap.String("preferred_holder", pref))
	return leaseInfo(row), nil
}

// holderTTL is the TTL the holder of r renews its session with (its expiry
// less its last renewal), or fallback when the row does not tell.
func holderTTL(r store.Row, fallback time.Duration) time.Duration {
	if ttl := r.ExpiresAt.Sub(r.RenewedAt); ttl > 0 && ttl <= maxTTL {
		return ttl
	}
	return fallback
}

// notHeld is the error of a resign request for a lease nobody holds.
func notHeld(r store.Row) error {
	if r.Holder == "" {
		return fmt.Errorf("%w: %q is free (epoch %d); nothing to resign", ErrNotHeld, r.Name, r.Epoch)
	}
	return fmt.Errorf("%w: %q: its holder %q (epoch %d) has expired; nothing to resign", ErrNotHeld, r.Name, r.Holder, r.Epoch)
}

// maxListedHolders bounds the live holders CheckPreferred's error lists.
const maxListedHolders = 20

// CheckPreferred returns an error wrapping ErrInvalidConfig, listing up to
// 20 other live holders, when no live lease or pool membership is held
// under preferred as a holder string, node or instance id: as Resign's
// preferred holder it would leave the lease name without a leader for
// twice its holder's TTL. It returns nil for an empty preferred, and for a
// lease with no row.
func (a *Admin) CheckPreferred(ctx context.Context, name, preferred string) error {
	if preferred == "" {
		return nil
	}
	rows, err := a.store.List(ctx, "")
	if err != nil {
		return fmt.Errorf("coordination: read the live holders: %w", err)
	}
	current, found := "", false
	for _, r := range rows {
		if r.Name == name {
			current, found = r.Holder, true
		}
	}
	if !found {
		return nil
	}
	var others []string
	for _, r := range rows {
		if !r.Live() || r.Holder == "" {
			continue
		}
		if store.Prefers(preferred, r.Holder) {
			return nil
		}
		if r.Holder != current && !slices.Contains(others, r.Holder) {
			others = append(others, r.Holder)
		}
	}
	slices.Sort(others)
	live := "no other process holds a lease or a pool membership"
	if len(others) > 0 {
		listed := others
		if len(listed) > maxListedHolders {
			listed = listed[:maxListedHolders]
		}
		live = "the other live holders are " + strings.Join(listed, ", ")
		if len(others) > maxListedHolders {
			live += fmt.Sprintf(" and %d more", len(others)-maxListedHolders)
		}
		live += " (a node name or an instance id will do too)"
	}
	return fmt.Errorf("%w: preferred holder %q: no live process answers to it; %s",
		ErrInvalidConfig, preferred, live)
}

// CheckFence asserts, inside the caller's transaction tx on the same
// database, that the term t is current (the lease t.Key held at epoch
// t.Epoch, by whichever process, unexpired by the database clock), and
// locks the lease row until tx ends; its errors are Lease.Fence's. A
// process handed a token by a holder checks with it that the holder's
// term still runs when its own write commits.
func (a *Admin) CheckFence(tx *gorm.DB, t Token) error {
	if err := requireTransaction(tx, fmt.Sprintf("lease %q epoch %d", t.Key, t.Epoch)); err != nil {
		return err
	}
	span := fenceSpan(a.tracer, tx, t)
	err := a.checkFence(tx, t, "")
	endSpan(span, err)
	return err
}

// checkFence is the fencing check of term t inside tx, with holder the
// holder string that must hold it, or "" for any.
func (a *Admin) checkFence(tx *gorm.DB, t Token, holder string) error {
	row, ok, err := a.store.Fence(tx, t.Key)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of lease %q: %w", t.Key, err)
	}
	fail := func(format string, args ...any) error {
		return fenced(fmt.Sprintf("lease %q epoch %d", t.Key, t.Epoch), fmt.Sprintf(format, args...))
	}
	switch {
	case !ok:
		return fail("no such lease")
	case row.Holder == "":
		return fail("the lease is free")
	case holder != "" && row.Holder != holder:
		return fail("held by %q at epoch %d", row.Holder, row.Epoch)
	case row.Epoch != t.Epoch:
		return fail("the epoch is now %d", row.Epoch)
	case !row.Live() && row.ExpiresAt.IsZero():
		return fail("the holder's session is gone")
	case !row.Live():
		return fail("expired %v ago by the database clock", row.Now.Sub(row.ExpiresAt))
	}
	return nil
}

// CheckFence is Admin.CheckFence that also requires this process to be
// the holder. On SQLite, when this process holds and trusts the term, it
// also renews the session inside tx, as Lease.Fence describes.
func (c *Coordinator) CheckFence(tx *gorm.DB, t Token) error {
	var s *session
	c.terms.query(func(st *termState) { s = st.sessionOf(t) })
	return c.fencer.check(tx, t, s)
}

// notResignable says what the row named key, which is not an election's,
// is and how its holder lets it go.
func notResignable(key string) string {
	kind, _, _ := strings.Cut(key, keySep)
	switch kind {
	case "pool":
		return "this is a pool membership or generation row: stop the member's Pool.Run, or let its health check fail"
	case "lock":
		return "this is a keyed lock: its holder releases it when its work returns, or it expires after TTL"
	case "sem":
		return "this is a semaphore's slot: its holder releases it when its work returns, or it expires after TTL"
	}
	return "this is a row the keyed locks keep for themselves"
}
