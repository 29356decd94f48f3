package status_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	zapobserver "go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/status"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// wait bounds every wait: it decides how long a broken build takes to
// fail, never whether a healthy one passes.
const wait = 20 * time.Second

// openSQLite returns a fresh SQLite database.
func openSQLite(t *testing.T) *gorm.DB {
	t.Helper()
	return testdb.Target{Name: "sqlite-pure", Dialect: "sqlite"}.Open(t)
}

// start runs a coordinator for node on db until the test ends.
func start(t *testing.T, db *gorm.DB, node string) *coordination.Coordinator {
	t.Helper()
	return startWith(t, db, node, coordination.Config{})
}

// startWith runs a coordinator for node on db with cfg, whose
// RetryInterval it sets, and its TTL and Logger unless given, until the
// test ends.
func startWith(t *testing.T, db *gorm.DB, node string, cfg coordination.Config) *coordination.Coordinator {
	t.Helper()
	id, err := identity.New(node, "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTL, cfg.RetryInterval, cfg.Logger = cmp.Or(cfg.TTL, time.Minute), 100*time.Millisecond, cmp.Or(cfg.Logger, zaptest.NewLogger(t))
	c, err := coordination.New(db, id, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.Done():
		case <-time.After(wait):
			t.Errorf("coordinator %s did not stop within %v", node, wait)
		}
	})
	select {
	case <-c.Ready():
	case <-time.After(wait):
		t.Fatalf("coordinator %s not ready within %v", node, wait)
	}
	return c
}

// lead makes c the leader of the election until the test ends.
func lead(t *testing.T, c *coordination.Coordinator, scope coordination.Scope, name string) {
	t.Helper()
	e, err := c.Election(scope, name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	l, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
}

// join makes c a member of the global pool name until the test ends.
func join(t *testing.T, c *coordination.Coordinator, name string) {
	t.Helper()
	p, err := c.Pool(coordination.GlobalScope, name, coordination.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, leave := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx, func(ctx context.Context, _ coordination.Assignment) error { <-ctx.Done(); return nil }, nil)
	}()
	t.Cleanup(func() {
		leave()
		select {
		case <-done:
		case <-time.After(wait):
			t.Errorf("Pool.Run of %s did not return", name)
		}
	})
}

// waitSettled waits until the pool key has n members that all acknowledged
// its generation.
func waitSettled(t *testing.T, c *coordination.Coordinator, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ps, err := c.Admin().Pools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.Key != key || len(p.List) != n {
				continue
			}
			acked := 0
			for _, m := range p.Members {
				if m.Live && m.Ack == p.Generation {
					acked++
				}
			}
			if acked == n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool %s not settled with %d members within %v: %+v", key, n, wait, ps)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// instance returns the instance id of c's process: its member id in a
// pool it joins once.
func instance(t *testing.T, c *coordination.Coordinator) string {
	t.Helper()
	id, err := identity.ParseHolder(c.Holder())
	if err != nil {
		t.Fatal(err)
	}
	return id.Instance
}

// fixture is two coordinators on one SQLite database: a leads the cluster
// election "reports", b the global election "ledger", and both are members
// of the global pool "orders".
type fixture struct {
	db   *gorm.DB
	a, b *coordination.Coordinator
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db := openSQLite(t)
	f := fixture{db: db, a: start(t, db, "node-a"), b: start(t, db, "node-b")}
	lead(t, f.a, coordination.ClusterScope, "reports")
	lead(t, f.b, coordination.GlobalScope, "ledger")
	join(t, f.a, "orders")
	join(t, f.b, "orders")
	waitSettled(t, f.a, "global/orders", 2)
	return f
}

// holderCell is the page's cell of a holder string.
func holderCell(holder string) string {
	return `<td class="holder"><span class="clip" title="` + holder + `">` + holder + `</span></td>`
}

// fetch GETs url with the Accept header accept (none when empty) and
// returns the status, the content type and the body.
func fetch(t *testing.T, url, accept string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), string(body)
}

func TestPageListsLeasesAndPools(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(status.Handler(f.a, status.Options{Title: "orders service"}))
	defer srv.Close()

	code, ct, html := fetch(t, srv.URL+"/status", "")
	if code != http.StatusOK || !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET /status: %d %q", code, ct)
	}
	for _, s := range []string{
		"<title>orders service</title>", `http-equiv="refresh"`,
		`<td class="name">cluster/test/reports</td>`, `<td class="name">global/ledger</td>`,
		holderCell(f.a.Holder()), holderCell(f.b.Holder()),
		"<h3>global/orders</h3>", `<td class="name">` + instance(t, f.a) + `</td>`,
		`<td class="name">` + instance(t, f.b) + `</td>`, `<span class="live">live</span>`,
		`<tr class="lease mine">`,
	} {
		if !strings.Contains(html, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	if strings.Contains(html, "pool|") {
		t.Errorf("the lease table lists pool rows:\n%s", html)
	}
	if strings.Contains(html, "<script") {
		t.Errorf("the page has a script")
	}

	var want status.Snapshot
	before := time.Now()
	for _, url := range []string{srv.URL + "/status.json", srv.URL + "/status?format=json"} {
		code, ct, body := fetch(t, url, "")
		if code != http.StatusOK || ct != "application/json" {
			t.Fatalf("GET %s: %d %q", url, code, ct)
		}
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, body)
		}
	}
	if code, ct, _ := fetch(t, srv.URL+"/status", "text/html;q=0.9, application/json"); code != http.StatusOK || ct != "application/json" {
		t.Fatalf("GET with Accept: application/json: %d %q", code, ct)
	}

	if want.Renewal == nil {
		t.Fatalf("JSON has no renewal state: %+v", want)
	}
	// The trust deadline is on the serving process's clock: this one's.
	if want.Holder != f.a.Holder() || !want.Renewal.Running || want.Renewal.Held != 2 ||
		!want.Renewal.TrustDeadline.After(before) || want.DatabaseTime.IsZero() {
		t.Errorf("JSON header = holder %q, renewal %+v, database time %v", want.Holder, want.Renewal, want.DatabaseTime)
	}
	names := make([]string, 0, len(want.Leases))
	held := 0 // by a, the serving process
	for _, l := range want.Leases {
		names = append(names, l.Key)
		if !l.Live || l.Epoch < 1 || !l.ExpiresAt.After(l.DatabaseTime) || l.AcquiredAt.IsZero() || l.RenewedAt.IsZero() {
			t.Errorf("lease %+v: want live, with time left, acquired", l)
		}
		if l.Holder == f.a.Holder() {
			held++
		}
		if !strings.Contains(html, `<td class="name">`+l.Key+`</td>`) {
			t.Errorf("JSON lease %s is not on the page", l.Key)
		}
	}
	// The page marks as mine the leases the serving process holds.
	if n := strings.Count(html, `<tr class="lease mine">`); n != held || held != 1 {
		t.Errorf("the page marks %d leases mine; the JSON has %d held by %s, want 1", n, held, f.a.Holder())
	}
	if !slices.Equal(names, []string{"cluster/test/reports", "global/ledger"}) {
		t.Errorf("JSON leases = %v", names)
	}
	if len(want.Pools) != 1 {
		t.Fatalf("JSON pools = %+v, want global/orders only", want.Pools)
	}
	p := want.Pools[0]
	if p.Key != "global/orders" || p.Generation < 1 || len(p.List) != 2 || len(p.Members) != 2 {
		t.Fatalf("JSON pool = %+v", p)
	}
	// Members are by id; List gives the generation's, in index order.
	mine := 0
	for i, id := range p.List {
		j := slices.IndexFunc(p.Members, func(m coordination.Member) bool { return m.ID == id })
		if j < 0 {
			t.Errorf("member %d (%s) of the list has no row: %+v", i, id, p.Members)
			continue
		}
		if m := p.Members[j]; !m.Live || m.Ack != p.Generation || !m.ExpiresAt.After(p.DatabaseTime) {
			t.Errorf("member %d = %+v: want live, acknowledged, with time left", i, m)
		}
		if p.Members[j].Holder == f.a.Holder() {
			mine++
		}
	}
	if mine != 1 {
		t.Errorf("%d members are held by %s, want 1", mine, f.a.Holder())
	}
	// The page lists them in index order, acknowledged, one of them mine.
	for i, id := range p.List {
		row := fmt.Sprintf(`<td class="num">%d</td>`+"\n"+`<td class="name">%s</td>`, i, id)
		if !strings.Contains(html, row) {
			t.Errorf("the page lacks member %s at index %d", id, i)
		}
	}
	if n := strings.Count(html, `<tr class="member mine">`); n != 1 {
		t.Errorf("the page marks %d members mine, want 1", n)
	}
	if strings.Contains(html, "(pending)") {
		t.Errorf("the page shows an acknowledgement pending in a settled pool")
	}
}

func TestPageEscapes(t *testing.T) {
	db := openSQLite(t)
	c := start(t, db, "node-a")
	// A row no coordinator would write: the page must show it as text.
	if err := db.Exec(`INSERT INTO leasehold_leases (name, holder, epoch) VALUES (?, ?, ?)`,
		`global/<script>alert("name")</script>`, `<img src=x onerror=alert(1)>`, 7).Error; err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(status.Handler(c, status.Options{Title: `<b>"title"</b>`, Refresh: -1}))
	defer srv.Close()
	code, _, html := fetch(t, srv.URL+"/", "")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, html)
	}
	for _, bad := range []string{"<script", "<img", "<b>", "http-equiv"} {
		if strings.Contains(html, bad) {
			t.Errorf("the page contains %q unescaped (or a refresh it must not have)", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;", "&lt;img src=x onerror=alert(1)&gt;", "&lt;b&gt;&#34;title&#34;&lt;/b&gt;"} {
		if !strings.Contains(html, good) {
			t.Errorf("the page lacks the escaped %q", good)
		}
	}
	_, _, body := fetch(t, srv.URL+"/status.json", "")
	var s status.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Leases) != 1 || s.Leases[0].Holder != `<img src=x onerror=alert(1)>` || s.Leases[0].Live {
		t.Errorf("JSON leases = %+v, want the raw row, not live", s.Leases)
	}
}

// TestDatabaseErrorIs503: a failed read answers 503 without the error's
// text, which goes to the coordinator's logger when Options has none.
func TestDatabaseErrorIs503(t *testing.T) {
	driver, dsn := testdb.Target{Name: "sqlite-pure", Dialect: "sqlite"}.OpenDSN(t)
	db, err := dbopen.Open(driver, dsn, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := zapobserver.New(zapcore.WarnLevel)
	c := startWith(t, db, "node-a", coordination.Config{Logger: zap.New(core)})
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(status.Handler(c, status.Options{}))
	defer srv.Close()
	if err := sqlDB.Close(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/status", "/status.json"} {
		code, ct, body := fetch(t, srv.URL+path, "")
		if code != http.StatusServiceUnavailable || !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("GET %s on a closed database: %d %q %q", path, code, ct, body)
		}
		if strings.Contains(body, "sqlite") || strings.Contains(body, "closed") || strings.Contains(body, dsn) {
			t.Errorf("GET %s: the 503 body %q tells more than it should", path, body)
		}
	}
	if n := logs.FilterMessageSnippet("status page: reading the coordination tables failed").Len(); n != 2 {
		t.Errorf("%d failed reads in the coordinator's log; want 2", n)
	}
}

func TestMethodsAndNil(t *testing.T) {
	rec := httptest.NewRecorder()
	status.Handler(nil, status.Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("nil coordinator: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	status.Handler(nil, status.Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/status", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}
