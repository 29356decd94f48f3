package status

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
)

// Defaults of Options.
const (
	defaultTitle   = "leasehold status"
	defaultRefresh = 5 * time.Second
	defaultTimeout = 5 * time.Second
)

// Options tunes Handler. The zero value is valid and gives the defaults.
type Options struct {
	// Title heads the page. Defaults to "leasehold status".
	Title string
	// Refresh is how often the page reloads itself. Zero means every 5
	// seconds; a negative value turns the reload off.
	Refresh time.Duration
	// Timeout bounds the reads of one request. Zero or negative means 5
	// seconds.
	Timeout time.Duration
	// Logger receives the errors of failed reads. Defaults to the
	// coordinator's (its Config.Logger or Config.Slog).
	Logger *zap.Logger
}

// Handler returns a handler that serves the status page of the database of
// c, as HTML or JSON (see the package doc), to GET and HEAD requests; other
// methods get 405. c need not be running. A nil c gives a handler that
// answers 503.
func Handler(c *coordination.Coordinator, opts Options) http.Handler {
	if opts.Title == "" {
		opts.Title = defaultTitle
	}
	if opts.Refresh == 0 {
		opts.Refresh = defaultRefresh
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	switch {
	case opts.Logger != nil:
	case c != nil:
		opts.Logger = c.Config().Logger
	default:
		opts.Logger = zap.NewNop()
	}
	return &handler{c: c, o: opts}
}

type handler struct {
	c *coordination.Coordinator
	o Options
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "status: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.c == nil {
		http.Error(w, "status: no coordinator", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Timeout)
	defer cancel()
	p, now, err := read(ctx, h.c)
	if err != nil {
		h.o.Logger.Warn("status page: reading the coordination tables failed", zap.Error(err))
		http.Error(w, "status: cannot read the coordination tables; see the server's logs", http.StatusServiceUnavailable)
		return
	}
	if wantsJSON(r) {
		hdr.Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(p)
		return
	}
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	v := newView(p, now, h.c.Config().HealthCheck != nil)
	v.Title, v.RefreshSeconds = h.o.Title, int(h.o.Refresh.Round(time.Second)/time.Second)
	_ = page.Execute(w, v)
}

// wantsJSON reports whether r asks for JSON: a path ending in ".json",
// format=json in the query, or an Accept header that names
// application/json.
func wantsJSON(r *http.Request) bool {
	if strings.HasSuffix(r.URL.Path, ".json") || r.URL.Query().Get("format") == "json" {
		return true
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "application/json") {
			return true
		}
	}
	return false
}
