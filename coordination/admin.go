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

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// adminStore is what an Admin runs on the database: reads of every row, the
// resign request, the fencing check, and the schema check that explains a
// failed request.
type adminStore interface {
	List(ctx context.Context, prefix string) ([]store.Row, error)
	RequestResign(ctx context.Context, name, prefer string, check func(store.Row) (time.Duration, error)) (row store.Row, found, notified bool, err error)
	Fence(tx *gorm.DB, name string) (store.Row, bool, error)
	CheckSchema(ctx context.Context) error
}

// AdminConfig tunes an Admin. The zero value is valid and gives the
// documented defaults. NewAdmin checks it, and every error names the field
// and its value.
type AdminConfig struct {
	// TablePrefix is prepended to the names of the coordination tables,
	// as Config.TablePrefix: give the prefix the coordinators use. Only
	// ASCII letters, digits and '_' are allowed, starting with a letter
	// or '_', at most 40 bytes. Defaults to "leasehold_".
	TablePrefix string

	// Logger receives a line for each resign request recorded. Defaults
	// to a no-op logger.
	Logger *zap.Logger
}

// Admin reads and administers the coordination tables of one database from
// any process: it lists leases and pools, asks the holder of a lease to
// hand it over, and checks fencing tokens. It has no identity and nothing
// to run: it holds no lease, writes no session, and each method is one or
// two statements on the primary. It never migrates; on tables older than
// this build, Resign says how to migrate. A command-line tool, a status
// page or an operator's script uses one; NewAdmin builds it from a
// *gorm.DB, and Coordinator.Admin returns the one on a coordinator's
// database. It is safe for concurrent use.
//
// Having no identity, it never says whose a lease is to it: LeaseInfo.Mine
// is always false, and CheckFence checks that a term is current, not who
// holds it. Coordinator.Leases, Coordinator.Pools, Coordinator.Resign and
// Coordinator.CheckFence are the same methods with the coordinator's
// process as "this process".
type Admin struct {
	store adminStore
	log   *zap.Logger
	// ttl is the preference window's TTL when the row of a lease does not
	// show its holder's (holderTTL): the coordinator's TTL, or DefaultTTL.
	ttl time.Duration
}

// NewAdmin returns an admin client on db's coordination tables with the
// prefix cfg.TablePrefix. It does no I/O. It returns an error wrapping
// ErrInvalidConfig for a nil db or an invalid TablePrefix, and one wrapping
// ErrUnsupportedDialect for a database leasehold does not support.
func NewAdmin(db *gorm.DB, cfg AdminConfig) (*Admin, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: db is nil", ErrInvalidConfig)
	}
	prefix := cmp.Or(cfg.TablePrefix, store.DefaultTablePrefix)
	if err := store.ValidateTablePrefix(prefix); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	st, err := store.New(db, store.Options{TablePrefix: prefix})
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Admin{store: newDBStore(st), log: log.Named("leasehold"), ttl: DefaultTTL}, nil
}

// Admin returns an admin client on the coordinator's database and tables.
// Its statements share the coordinator's connections (Config.MaxConnections),
// and its log lines carry the coordinator's identity. It works whether or
// not Run runs.
func (c *Coordinator) Admin() *Admin { return c.admin }

// leaseInfo is the lease of row r, with Mine set when self, a holder
// string, holds it; "" is nobody.
func leaseInfo(r store.Row, self string) LeaseInfo {
	return LeaseInfo{
		Name: r.Name, Holder: r.Holder, Epoch: r.Epoch,
		AcquiredAt: r.AcquiredAt, RenewedAt: r.RenewedAt, ExpiresAt: r.ExpiresAt, DatabaseTime: r.Now,
		Live: r.Live(), Mine: self != "" && r.Holder == self, Data: r.Data,
	}
}

// Leases lists every lease in the database, ordered by name, by the
// database clock, in one statement. The rows of pool memberships
// ("pool|..." names) are among them; Pools reads them as pools.
func (a *Admin) Leases(ctx context.Context) ([]LeaseInfo, error) {
	rows, err := a.store.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("coordination: list leases: %w", err)
	}
	out := make([]LeaseInfo, len(rows))
	for i, r := range rows {
		out[i] = leaseInfo(r, "")
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
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out, nil
}

// preferWindowTTLs is how long, in TTLs of the holder (the TTL its session
// is renewed with), a preferred holder has the lease reserved for it.
const preferWindowTTLs = 2

// maxPreferredHolderLen bounds ResignOptions.PreferredHolder: it is stored
// in a column as wide as a holder string.
const maxPreferredHolderLen = 255

// ResignOptions tune Admin.Resign (and Coordinator.Resign).
type ResignOptions struct {
	// PreferredHolder, when set, names the process that should take the
	// lease next: its holder string ("node/cluster/instance", as
	// LeaseInfo.Holder and Coordinator.Holder show it), its node, or its
	// instance id. Until twice the holder's TTL (the TTL its session is
	// renewed with, as the database shows it) after the request, by the
	// database clock, no other process takes the lease; then anyone may.
	// A node name matches every process of that node. It must not name
	// the current holder, and is at most 255 bytes of printable ASCII:
	// Resign refuses it otherwise, with an error wrapping
	// ErrInvalidConfig. Resign does not check that a process answers to
	// it (a follower has no row until it acquires): a name that nobody
	// answers to keeps the lease without a leader for the whole window.
	// Admin.CheckPreferred checks it beforehand. Defaults to "" (anyone
	// may take the lease next).
	PreferredHolder string
}

// Resign asks the current holder of the lease name to hand it over. name
// is the full lease name, as LeaseInfo.Name and Election.Key report it:
// "cluster/eu/reports" or "global/billing", say.
//
// The request is recorded in the lease row, fenced by the epoch of the
// current term: it ends that term and never a later one. Resign returns
// the lease as it was when the request was recorded. The holder sees the
// request at its next renewal (within RenewInterval), ends the term with
// cause ErrResigned (its work's context is cancelled; an EventLost
// carries the cause), and releases the lease once its work has returned
// (Election.Run and the workers do; a holder that uses Campaign releases
// it itself, as after any end of term). It then holds off taking the
// lease again for one TTL, or until it sees another holder, so that a
// follower takes over; with no follower, it takes it back after the
// hold-off.
//
// Resign does not migrate, and on a schema older than this build it
// returns an error wrapping ErrSchemaMissing that says how to migrate. It
// returns an error wrapping ErrUnknownLease when the lease has no row, and
// ErrNotHeld when it has no live holder. Pool memberships ("pool|..."
// rows) are refused: to move a pool's work off a process, stop its
// Pool.Run, or let its health check fail (Config.HealthCheck).
func (a *Admin) Resign(ctx context.Context, name string, opts ResignOptions) (LeaseInfo, error) {
	pref := opts.PreferredHolder
	switch {
	case strings.Contains(name, keySep):
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: a pool membership cannot be asked to resign; "+
			"stop the member's Pool.Run, or let its health check fail", name)
	case len(pref) > maxPreferredHolderLen:
		return LeaseInfo{}, fmt.Errorf("%w: ResignOptions.PreferredHolder %q is %d bytes long; the limit is %d",
			ErrInvalidConfig, pref, len(pref), maxPreferredHolderLen)
	case strings.IndexFunc(pref, func(r rune) bool { return r < ' ' || r > '~' }) >= 0:
		return LeaseInfo{}, fmt.Errorf("%w: ResignOptions.PreferredHolder %q has a byte outside printable ASCII, which no holder string has",
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
			return 0, fmt.Errorf("%w: ResignOptions.PreferredHolder %q names the current holder %q", ErrInvalidConfig, pref, r.Holder)
		}
		return preferWindowTTLs * holderTTL(r, a.ttl), nil
	})
	switch {
	case err != nil && !refused && ctx.Err() == nil:
		// A schema older than this build lacks the columns of the request:
		// say so, and how to migrate, rather than which column is missing.
		if serr := a.store.CheckSchema(ctx); errors.Is(serr, ErrSchemaMissing) {
			err = serr
		}
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w", name, err)
	case err != nil:
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w", name, err)
	case !found:
		return LeaseInfo{}, fmt.Errorf("%w: %q has no lease row (list the leases with `leasehold status` or Admin.Leases)",
			ErrUnknownLease, name)
	case !notified:
		return LeaseInfo{}, fmt.Errorf("coordination: resign lease %q: %w: the session of its holder %q ended meanwhile; nothing to resign",
			name, ErrNotHeld, row.Holder)
	}
	a.log.Info("requested resign", zap.String("lease", name), zap.String("holder", row.Holder),
		zap.Int64("epoch", row.Epoch), zap.String("preferred_holder", pref))
	return leaseInfo(row, ""), nil
}

// holderTTL is the TTL the holder of r renews its session with, as the
// database shows it (the session's expiry less its last renewal), or
// fallback when the row does not tell: the preference then lasts for the
// holder's TTL, not for the requester's.
func holderTTL(r store.Row, fallback time.Duration) time.Duration {
	if ttl := r.ExpiresAt.Sub(r.RenewedAt); ttl > 0 && ttl <= MaxTTL {
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

// CheckPreferred reads the leases and returns an error wrapping
// ErrInvalidConfig when no live process answers to preferred, a
// ResignOptions.PreferredHolder for the lease name: no live lease or pool
// membership is held by a process with that holder string, node or
// instance id. Resign does not check it, since a process that holds
// nothing has no row to show it; call CheckPreferred first where a typo
// would do harm, as the leasehold command's resign does unless -force is
// given: a name nobody answers to keeps the lease without a leader for
// twice its holder's TTL. The error lists the live holders other than the
// current holder of name, at most 20. It returns nil for an empty
// preferred, and for a lease that has no row: Resign reports that.
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
	return fmt.Errorf("%w: ResignOptions.PreferredHolder %q: no live process answers to it; %s",
		ErrInvalidConfig, preferred, live)
}

// CheckFence asserts, inside the caller's transaction tx, that the term t
// is current: the lease t.Name is held at epoch t.Epoch, by whichever
// process, and unexpired by the database clock. It locks the lease row
// until tx ends, so the term cannot end before tx does. It returns an
// error wrapping ErrFenced (a *FenceError) when not, and the caller must
// roll back. A process that was handed a token by a holder, with a request
// say, checks with it that the holder's term still runs when its own write
// commits. tx must be a transaction on the same database; a handle that
// is nil or not inside a transaction is refused with an error wrapping
// ErrNotInTransaction.
func (a *Admin) CheckFence(tx *gorm.DB, t Token) error {
	if err := requireTransaction(tx, fmt.Sprintf("lease %q epoch %d", t.Name, t.Epoch)); err != nil {
		return err
	}
	return a.checkFence(tx, t, "")
}

// checkFence is the fencing check of term t inside tx, with holder the
// holder string that must hold it, or "" for any.
func (a *Admin) checkFence(tx *gorm.DB, t Token, holder string) error {
	row, ok, err := a.store.Fence(tx, t.Name)
	if err != nil {
		return fmt.Errorf("coordination: fencing check of lease %q: %w", t.Name, err)
	}
	fail := func(format string, args ...any) error {
		return &FenceError{Name: t.Name, Epoch: t.Epoch, Reason: fmt.Sprintf(format, args...)}
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

// The methods below are the Admin's, for this process: they were the
// coordinator's before the Admin existed, and are kept so that callers
// need not change.

// Leases lists every lease in the database, ordered by name, as
// Admin.Leases does; LeaseInfo.Mine reports whether this process holds
// it.
func (c *Coordinator) Leases(ctx context.Context) ([]LeaseInfo, error) {
	out, err := c.Admin().Leases(ctx)
	for i := range out {
		out[i].Mine = out[i].Holder == c.holder
	}
	return out, err
}

// Pools reads every pool in the database, as Admin.Pools does. It needs
// no running coordinator.
func (c *Coordinator) Pools(ctx context.Context) ([]PoolState, error) {
	return c.Admin().Pools(ctx)
}

// Resign asks the current holder of the lease name to hand it over, as
// Admin.Resign does; the LeaseInfo it returns says whether this process
// holds the lease. It needs no running coordinator: it works before and
// without Run.
func (c *Coordinator) Resign(ctx context.Context, name string, opts ResignOptions) (LeaseInfo, error) {
	info, err := c.Admin().Resign(ctx, name, opts)
	info.Mine = info.Holder == c.holder
	return info, err
}

// CheckFence asserts, inside the caller's transaction tx, that this process
// holds the lease t.Name at epoch t.Epoch and that it is unexpired by the
// database clock, locking the lease row until tx ends: Admin.CheckFence,
// and the holder must be this process. It returns an error wrapping
// ErrFenced when not, and the caller must roll back. tx must be a
// transaction on the same database as the coordinator; a handle that is
// nil or not inside a transaction is refused with an error wrapping
// ErrNotInTransaction. On SQLite, when this process holds and trusts the
// term, it also renews the process's session inside tx, as Lease.Fence
// describes.
func (c *Coordinator) CheckFence(tx *gorm.DB, t Token) error {
	var s *session
	c.terms.query(func(st *termState) { s = st.sessionOf(t) })
	return c.fencer.check(tx, t, s)
}
