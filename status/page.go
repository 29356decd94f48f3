package status

import (
	"html/template"
	"strconv"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// view is what the page template renders: the snapshot, with the values
// the page derives from it.
type view struct {
	Title          string
	RefreshSeconds int
	Page           Snapshot
	Renewal        *renewalView // nil when Page.Renewal is
	Leases         []leaseView
	Pools          []poolView
	Locks          []locksView
	Sessions       []sessionView
}

// renewalView is the serving process's renewal state, with the times left
// and elapsed by its clock at the read.
type renewalView struct {
	coordination.RenewalState
	HealthCheck bool     // the process has a coordination.Config.HealthCheck
	TrustLeft   *float64 // seconds until the trust deadline; nil with no session
	HealthFor   *float64 // seconds since HealthChanged; nil when zero
}

// leaseView is one election lease, with the seconds it has left by the
// database clock (0 when not live) and whether the serving process holds
// it.
type leaseView struct {
	coordination.LeaseInfo
	Left float64
	Mine bool
}

// locksView is a namespace of keyed locks or a semaphore, with its
// holders' rows.
type locksView struct {
	Locks
	Rows []leaseView
}

// sessionView is one process, with the seconds its session has left by
// the database clock (0 when not live) and whether it is the serving
// process.
type sessionView struct {
	coordination.SessionInfo
	Left float64
	Mine bool
}

// poolView is one pool, its members laid out in rows.
type poolView struct {
	coordination.PoolState
	Rows []memberView
}

// memberView is one row of a pool's table: a member of the generation, in
// index order, or a member row outside it (joining, or left and not yet
// pruned).
type memberView struct {
	Index  *int // its index in the generation; nil outside it
	ID     string
	Holder string // "" when its row is free or missing
	Ack    int64
	Acked  bool // Ack is the pool's generation
	Live   bool
	Dead   bool    // not live, and held by a process whose session is gone or expired, or without a row
	Left   float64 // seconds until its row expires by the database clock; 0 when not live
	Mine   bool
}

// newView derives the page's values from s, with now the serving
// process's clock at the read of s.Renewal, and healthCheck whether the
// process has a health check.
func newView(s Snapshot, now time.Time, healthCheck bool) view {
	v := view{Page: s, Leases: make([]leaseView, 0, len(s.Leases)), Pools: make([]poolView, 0, len(s.Pools)),
		Locks: make([]locksView, 0, len(s.Locks)), Sessions: make([]sessionView, 0, len(s.Sessions))}
	mine := func(holder string) bool { return s.Holder != "" && holder == s.Holder }
	if rs := s.Renewal; rs != nil {
		v.Renewal = &renewalView{RenewalState: *rs, HealthCheck: healthCheck}
		if !rs.TrustDeadline.IsZero() {
			left := seconds(rs.TrustDeadline.Sub(now))
			v.Renewal.TrustLeft = &left
		}
		if !rs.HealthChanged.IsZero() {
			since := seconds(now.Sub(rs.HealthChanged))
			v.Renewal.HealthFor = &since
		}
	}
	lease := func(li coordination.LeaseInfo) leaseView {
		l := leaseView{LeaseInfo: li, Mine: mine(li.Holder)}
		if li.Live {
			l.Left = seconds(li.ExpiresAt.Sub(li.DatabaseTime))
		}
		return l
	}
	for _, li := range s.Leases {
		v.Leases = append(v.Leases, lease(li))
	}
	for _, st := range s.Pools {
		v.Pools = append(v.Pools, poolView{PoolState: st, Rows: memberRows(st, mine)})
	}
	for _, ls := range s.Locks {
		lv := locksView{Locks: ls, Rows: make([]leaseView, 0, len(ls.Holders))}
		for _, li := range ls.Holders {
			lv.Rows = append(lv.Rows, lease(li))
		}
		v.Locks = append(v.Locks, lv)
	}
	for _, si := range s.Sessions {
		sv := sessionView{SessionInfo: si, Mine: mine(si.Holder)}
		if si.Live {
			sv.Left = seconds(si.ExpiresAt.Sub(si.DatabaseTime))
		}
		v.Sessions = append(v.Sessions, sv)
	}
	return v
}

// memberRows lays out the members of a pool: the generation's in index
// order, then the rows outside it.
func memberRows(st coordination.PoolState, mine func(holder string) bool) []memberView {
	rows := make(map[string]coordination.Member, len(st.Members))
	for _, m := range st.Members {
		rows[m.ID] = m
	}
	out := make([]memberView, 0, len(st.Members))
	add := func(index *int, id string) {
		m := memberView{Index: index, ID: id, Dead: true}
		if r, ok := rows[id]; ok {
			m.Holder, m.Ack, m.Acked, m.Live = r.Holder, r.Ack, r.Ack == st.Generation, r.Live
			m.Dead = !r.Live && r.Holder != ""
			m.Mine = r.Holder != "" && mine(r.Holder)
			if r.Live {
				m.Left = seconds(r.ExpiresAt.Sub(st.DatabaseTime))
			}
		}
		out = append(out, m)
	}
	listed := make(map[string]bool, len(st.List))
	for i, id := range st.List {
		listed[id] = true
		add(&i, id)
	}
	for _, m := range st.Members {
		if !listed[m.ID] {
			add(nil, m.ID)
		}
	}
	return out
}

// seconds returns d in seconds, to the millisecond, and never below zero.
func seconds(d time.Duration) float64 {
	return max(d, 0).Round(time.Millisecond).Seconds()
}

var funcs = template.FuncMap{
	// when formats a time as RFC 3339 to the millisecond, or "-" for zero.
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	},
	// clock formats a time as a <time> element showing the time of day,
	// with the full time in its datetime attribute, or "-" for zero. A
	// formatted time is digits and punctuation only: nothing to escape.
	"clock": func(t time.Time) template.HTML {
		if t.IsZero() {
			return "-"
		}
		full := t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		return template.HTML(`<time datetime="` + full + `" title="` + full + `">` + t.UTC().Format("15:04:05.000") + `</time>`)
	},
	// secs formats seconds.
	"secs": func(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + "s" },
	// deref reads a pointer the template has checked for nil.
	"deref": func(p any) any {
		switch v := p.(type) {
		case *int:
			return *v
		case *float64:
			return *v
		}
		return p
	},
	"yes": func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	},
}

// page is the status page: a header, then one section per named template,
// in the order body lists them. The template "clip" shows a value that may
// be long (a holder string, a lock key) cut to a width, in full in its
// title.
var page = template.Must(template.New("page").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{- if gt .RefreshSeconds 0}}
<meta http-equiv="refresh" content="{{.RefreshSeconds}}">
{{- end}}
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: 1.4em 0 .4em; }
h3 { font-size: 1em; margin: 1em 0 .3em; font-family: ui-monospace, monospace; }
p.meta { color: #555; margin: .2em 0; }
table { border-collapse: collapse; margin: .3em 0; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; white-space: nowrap; }
th { background: #f2f2f2; }
td.num { text-align: right; }
td.name, td.holder { font-family: ui-monospace, monospace; }
.clip { display: inline-block; max-width: 32em; overflow: hidden; text-overflow: ellipsis; vertical-align: bottom; }
tr.mine td { background: #eef6ff; }
tr.dead td { color: #999; }
.live { color: #176b1d; font-weight: 600; }
.notlive { color: #999; }
.dead { color: #b00020; }
.warn { color: #b00020; font-weight: 600; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">This process: <code>{{.Page.Holder}}</code></p>
<p class="meta">Database clock: {{when .Page.DatabaseTime}}{{if gt .RefreshSeconds 0}}; reloads every {{.RefreshSeconds}}s{{end}}</p>
{{- with .Renewal}}
<p class="meta" id="renewal">Coordinator: {{if .Running}}running{{else}}<span class="warn">not running</span>{{end}};
holds {{.Held}};
{{if .TrustLeft}}trust left {{secs (deref .TrustLeft)}}{{else}}no session{{end}};
{{if .Failures}}<span class="warn">{{.Failures}} renewals failed in a row</span>{{else}}renewals ok{{end}};
last successful renewal {{if .LastSuccess.IsZero}}none yet{{else}}{{when .LastSuccess}}{{end}};
{{if not .HealthCheck}}<span id="health">no health check</span>
{{- else if .Unhealthy}}<span class="warn" id="health">unhealthy{{if .HealthFor}} for {{secs (deref .HealthFor)}}{{end}}: not campaigning</span>
{{- else}}<span id="health">healthy{{if .HealthFor}} for {{secs (deref .HealthFor)}}{{end}}</span>{{end}}</p>
{{- end}}
{{template "leases" .}}
{{template "pools" .}}
{{template "locks" .}}
{{template "processes" .}}
{{template "schedules" .}}
</body>
</html>
{{- define "clip"}}{{if .}}<span class="clip" title="{{.}}">{{.}}</span>{{else}}-{{end}}{{end}}
{{- define "live"}}{{if .}}<span class="live">live</span>{{else}}<span class="notlive">no</span>{{end}}{{end}}

{{- define "leases"}}
<section id="section-leases">
<h2>Leases</h2>
{{- if .Leases}}
<table id="leases">
<thead><tr><th>Name</th><th>Holder</th><th>Epoch</th><th>Acquired (UTC)</th><th>Renewed (UTC)</th><th>Left</th><th>Live</th><th>Mine</th></tr></thead>
<tbody>
{{- range .Leases}}
<tr class="lease{{if .Mine}} mine{{end}}{{if not .Live}} dead{{end}}">
<td class="name">{{.Key}}</td>
<td class="holder">{{template "clip" .Holder}}</td>
<td class="num">{{.Epoch}}</td>
<td>{{clock .AcquiredAt}}</td>
<td>{{clock .RenewedAt}}</td>
<td class="num">{{if .Live}}{{secs .Left}}{{else}}-{{end}}</td>
<td>{{template "live" .Live}}</td>
<td>{{yes .Mine}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p>No leases.</p>
{{- end}}
</section>
{{- end}}

{{- define "pools"}}
<section id="section-pools">
<h2>Pools</h2>
{{- range .Pools}}
<h3>{{.Key}}</h3>
<p class="meta">Generation {{.Generation}}</p>
<table class="pool">
<thead><tr><th>Index</th><th>Member</th><th>Holder</th><th>Ack</th><th>Left</th><th>Live</th><th>Mine</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="member{{if .Mine}} mine{{end}}{{if not .Live}} dead{{end}}">
<td class="num">{{if .Index}}{{deref .Index}}{{else}}-{{end}}</td>
<td class="name">{{.ID}}</td>
<td class="holder">{{template "clip" .Holder}}</td>
<td class="num">{{.Ack}}{{if and .Live (not .Acked)}} <span class="warn">(pending)</span>{{end}}</td>
<td class="num">{{if .Live}}{{secs .Left}}{{else}}-{{end}}</td>
<td>{{if .Live}}<span class="live">live</span>{{else if .Dead}}<span class="dead">dead</span>{{else}}<span class="notlive">left</span>{{end}}</td>
<td>{{yes .Mine}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p>No pools.</p>
{{- end}}
</section>
{{- end}}

{{- define "locks"}}
<section id="section-locks">
<h2>Keyed locks and semaphores</h2>
{{- range .Locks}}
<h3>{{.Key}}</h3>
<p class="meta">{{if .Slots}}Semaphore: {{len .Rows}} held; at least {{.Slots}} slots (its limit is not stored){{else}}Keyed locks: {{len .Rows}} held{{end}}</p>
<table class="locks">
<thead><tr><th>{{if .Slots}}Slot{{else}}Key{{end}}</th><th>Holder</th><th>Epoch</th><th>Acquired (UTC)</th><th>Expires (UTC)</th><th>Left</th><th>Live</th><th>Mine</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="lock{{if .Mine}} mine{{end}}{{if not .Live}} dead{{end}}">
<td class="name">{{template "clip" .Key}}</td>
<td class="holder">{{template "clip" .Holder}}</td>
<td class="num">{{.Epoch}}</td>
<td>{{clock .AcquiredAt}}</td>
<td>{{clock .ExpiresAt}}</td>
<td class="num">{{if .Live}}{{secs .Left}}{{else}}-{{end}}</td>
<td>{{template "live" .Live}}</td>
<td>{{yes .Mine}}</td>
</tr>
{{- else}}
<tr><td colspan="8">None held.</td></tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p>No keyed locks or semaphores.</p>
{{- end}}
</section>
{{- end}}

{{- define "processes"}}
<section id="section-processes">
<h2>Processes</h2>
{{- if .Sessions}}
<table id="sessions">
<thead><tr><th>Holder</th><th>Renewed (UTC)</th><th>Expires (UTC)</th><th>Left</th><th>Session</th><th>Wake-ups at</th><th>Mine</th></tr></thead>
<tbody>
{{- range .Sessions}}
<tr class="session{{if .Mine}} mine{{end}}{{if not .Live}} dead{{end}}">
<td class="holder">{{template "clip" .Holder}}</td>
<td>{{clock .RenewedAt}}</td>
<td>{{clock .ExpiresAt}}</td>
<td class="num">{{if .Live}}{{secs .Left}}{{else}}-{{end}}</td>
<td>{{if .Live}}<span class="live">live</span>{{else}}<span class="notlive">expired</span>{{end}}</td>
<td class="name">{{range $i, $a := .WakeAddrs}}{{if $i}}, {{end}}{{$a}}{{else}}-{{end}}</td>
<td>{{yes .Mine}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p>No sessions.</p>
{{- end}}
</section>
{{- end}}

{{- define "schedules"}}
<section id="section-schedules">
<h2>Schedules</h2>
{{- range .Page.Schedules}}
<h3>{{.Name}}</h3>
{{- if .Error}}
<p class="meta warn">{{.Error}}</p>
{{- else}}
<p class="meta schedule">Next slot {{when .State.Next}}; done up to {{when .State.Done}}; held by {{with .Lease}}{{if .Holder}}<code>{{.Holder}}</code> epoch {{.Epoch}}{{if not .Live}} (expired){{end}}{{else}}nobody{{end}}{{end}}
{{- with .State.Running}}; <span class="warn">slot {{when .Slot}} running since {{when .Start}} on <code>{{.Holder}}</code> epoch {{.Epoch}}</span>{{end}}</p>
<table class="history">
<thead><tr><th>Slot (UTC)</th><th>Outcome</th><th>Holder</th><th>Epoch</th><th>Attempt</th><th>Start (UTC)</th><th>End (UTC)</th></tr></thead>
<tbody>
{{- range .State.History}}
<tr class="run">
<td>{{when .Slot}}</td>
<td>{{.Outcome}}{{if .Skipped}} ({{.Skipped}}){{end}}</td>
<td class="holder">{{template "clip" .Holder}}</td>
<td class="num">{{.Epoch}}</td>
<td class="num">{{if .Attempt}}{{.Attempt}}{{else}}-{{end}}</td>
<td>{{clock .Start}}</td>
<td>{{clock .End}}</td>
</tr>
{{- else}}
<tr><td colspan="7">No runs yet.</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- else}}
<p>No schedules.</p>
{{- end}}
</section>
{{- end}}
`))
