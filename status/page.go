package status

import (
	"html/template"
	"strconv"
	"time"
)

// view is what the page template renders.
type view struct {
	Options
	Page           Snapshot
	RefreshSeconds int
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
tr.mine td { background: #eef6ff; }
tr.dead td { color: #999; }
.live { color: #176b1d; font-weight: 600; }
.notlive { color: #999; }
.warn { color: #b00020; font-weight: 600; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">This process: <code>{{.Page.Holder}}</code></p>
<p class="meta">Database clock: {{when .Page.DatabaseTime}}{{if gt .RefreshSeconds 0}}; reloads every {{.RefreshSeconds}}s{{end}}</p>
{{- with .Page.Renewal}}
<p class="meta" id="renewal">Coordinator: {{if .Running}}running{{else}}<span class="warn">not running</span>{{end}};
holds {{.Held}};
{{if .TrustLeft}}trust left {{secs (deref .TrustLeft)}}{{else}}no session{{end}};
{{if .Failures}}<span class="warn">{{.Failures}} renewals failed in a row</span>{{else}}renewals ok{{end}};
last successful renewal {{if .LastSuccess.IsZero}}none yet{{else}}{{when .LastSuccess}}{{end}};
{{if not .HealthCheck}}<span id="health">no health check</span>
{{- else if .Unhealthy}}<span class="warn" id="health">unhealthy{{if .HealthFor}} for {{secs (deref .HealthFor)}}{{end}}: not campaigning</span>
{{- else}}<span id="health">healthy{{if .HealthFor}} for {{secs (deref .HealthFor)}}{{end}}</span>{{end}}</p>
{{- end}}

<h2>Leases</h2>
{{- if .Page.Leases}}
<table id="leases">
<thead><tr><th>Name</th><th>Holder</th><th>Epoch</th><th>Acquired (UTC)</th><th>Renewed (UTC)</th><th>Left</th><th>Live</th><th>Mine</th></tr></thead>
<tbody>
{{- range .Page.Leases}}
<tr class="lease{{if .Mine}} mine{{end}}{{if not .Live}} dead{{end}}">
<td class="name">{{.Name}}</td>
<td class="holder">{{if .Holder}}{{.Holder}}{{else}}-{{end}}</td>
<td class="num">{{.Epoch}}</td>
<td>{{clock .AcquiredAt}}</td>
<td>{{clock .RenewedAt}}</td>
<td class="num">{{if .Live}}{{secs .Left}}{{else}}-{{end}}</td>
<td>{{if .Live}}<span class="live">live</span>{{else}}<span class="notlive">no</span>{{end}}</td>
<td>{{yes .Mine}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p>No leases.</p>
{{- end}}

<h2>Pools</h2>
{{- range .Page.Pools}}
<h3>{{.Key}}</h3>
<p class="meta">Generation {{.Generation}}</p>
<table class="pool">
<thead><tr><th>Index</th><th>Member</th><th>Holder</th><th>Ack</th><th>Left</th><th>Live</th><th>Mine</th></tr></thead>
<tbody>
{{- range .Members}}
<tr class="member{{if .Mine}} mine{{end}}{{if not .Live}} dead{{end}}">
<td class="num">{{if .Index}}{{deref .Index}}{{else}}-{{end}}</td>
<td class="name">{{.ID}}</td>
<td class="holder">{{if .Holder}}{{.Holder}}{{else}}-{{end}}</td>
<td class="num">{{.Ack}}{{if not .Acked}} <span class="warn">(pending)</span>{{end}}</td>
<td class="num">{{if .Live}}{{secs .Left}}{{else}}-{{end}}</td>
<td>{{if .Live}}<span class="live">live</span>{{else}}<span class="notlive">no</span>{{end}}</td>
<td>{{yes .Mine}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p>No pools.</p>
{{- end}}

<h2>Schedules</h2>
{{- range .Page.Schedules}}
<h3>{{.Name}}</h3>
{{- if .Error}}
<p class="meta warn">{{.Error}}</p>
{{- else}}
<p class="meta schedule">Next slot {{when .Next}}; done up to {{when .Done}}; held by {{if .Holder}}<code>{{.Holder}}</code> epoch {{.Epoch}}{{if not .Live}} (expired){{end}}{{else}}nobody{{end}}
{{- with .Running}}; <span class="warn">slot {{when .Slot}} running since {{when .Start}} on <code>{{.Holder}}</code> epoch {{.Epoch}}</span>{{end}}</p>
<table class="history">
<thead><tr><th>Slot (UTC)</th><th>Outcome</th><th>Holder</th><th>Epoch</th><th>Attempt</th><th>Start (UTC)</th><th>End (UTC)</th></tr></thead>
<tbody>
{{- range .History}}
<tr class="run">
<td>{{when .Slot}}</td>
<td>{{.Outcome}}{{if .Skipped}} ({{.Skipped}}){{end}}</td>
<td class="holder">{{.Holder}}</td>
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
</body>
</html>
`))
